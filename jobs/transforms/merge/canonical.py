"""The canonical state rows merge writes to ``STATE/_canonical/`` and reads back as ``--base``: each value as
canonical text in an image map (absent column != NULL), plus the last applied event per key."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

CANONICAL_ARROW = pa.schema([
    ("kind", pa.string()),  # "state" (row or tombstone) | "version" (history: a row version or a delete marker)
    ("table_name", pa.string()),
    ("_key", pa.list_(pa.string())),
    ("_dup", pa.int32()),  # occurrence number among identical rows of a table without primary key
    ("image", pa.map_(pa.string(), pa.string())),
    ("deleted", pa.bool_()),
    ("op", pa.string()),
    ("rank", pa.int32()),
    ("sequence", pa.list_(pa.decimal128(38, 0))),
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_index", pa.int32()),
    ("event_time_ms", pa.int64()),
    ("format", pa.string()),
    ("hash", pa.string()),
])
CANONICAL_SPARK = from_arrow_schema(CANONICAL_ARROW)
