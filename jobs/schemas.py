"""Arrow and Spark schemas of the three row shapes that flow through the jobs.

RAW: one archived message and its position (what every source produces: files, dumps, Kafka).
EVENT: ``cdc_codecs.records.to_record`` of a canonical event (what replay writes and merge/verify read).
DECODED: EVENT plus dead-letter columns, the output of the decode step before it is split in two.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])

RAW_ARROW = pa.schema([
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_timestamp_ms", pa.int64()),
    ("pos_key", pa.binary()),
    ("pos_headers", pa.list_(HEADER)),
    ("value", pa.binary()),
])

IMAGE = pa.map_(pa.string(), pa.string())
COLUMN = pa.struct([("name", pa.string()), ("type_name", pa.string()), ("jdbc_type", pa.int32()),
                    ("number", pa.bool_())])
SEQUENCE_COMPONENT = pa.decimal128(38, 0)

EVENT_ARROW = pa.schema([
    ("format", pa.string()),
    ("op", pa.string()),
    ("database", pa.string()),
    ("schema", pa.string()),
    ("table", pa.string()),
    ("table_name", pa.string()),
    ("before", IMAGE),
    ("after", IMAGE),
    ("columns", pa.list_(COLUMN)),
    ("primary_key", pa.list_(pa.string())),
    ("event_time_ms", pa.int64()),
    ("sequence", pa.list_(SEQUENCE_COMPONENT)),
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_index", pa.int32()),
    ("pos_timestamp_ms", pa.int64()),
    ("pos_key", pa.binary()),
    ("pos_headers", pa.list_(HEADER)),
    ("transaction_id", pa.string()),
    ("ddl", pa.string()),
    ("vendor", pa.string()),
    ("fragment_key", pa.string()),
    ("fragment_index", pa.int32()),
    ("fragment_total", pa.int32()),
])
EVENT_FIELDS = EVENT_ARROW.names

DEAD_LETTER_FIELDS = [
    ("dl_reason", pa.string()),  # the DecodeError text: vendor, field, position, reason
    ("dl_field", pa.string()),
    ("dl_raw", pa.binary()),  # the message bytes exactly as read
    ("first_of_record", pa.bool_()),  # exactly one output row per archived record has this set
]
DECODED_ARROW = pa.schema(list(EVENT_ARROW) + [pa.field(n, t) for n, t in DEAD_LETTER_FIELDS])

DEAD_LETTER_COLUMNS = ["format", "pos_source", "pos_partition", "pos_offset", "pos_index", "pos_timestamp_ms",
                       "pos_key", "dl_field", "dl_reason", "dl_raw"]

RAW_SPARK = from_arrow_schema(RAW_ARROW)
EVENT_SPARK = from_arrow_schema(EVENT_ARROW)
DECODED_SPARK = from_arrow_schema(DECODED_ARROW)
ORDER_COLUMNS = ["sequence", "pos_source", "pos_partition", "pos_offset", "pos_index"]
