"""Spark schemas of the row shapes that flow through the jobs, derived from the one Arrow definition in
``cdc_codecs.event_schema`` (see there for RAW, EVENT, DECODED and ENCODED, op names and marker kinds)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

from cdc_codecs.event_schema import (  # noqa: F401  (re-exported: the jobs import schemas from here)
    COLUMN, DATA_OP_NAMES, DEAD_LETTER_COLUMNS, DEAD_LETTER_FIELDS, DECODED_ARROW, ENCODED_ARROW,
    ENCODED_DEAD_LETTER_COLUMNS, ENCODED_KEYED_ARROW, EVENT_ARROW, EVENT_FIELDS, FRAGMENT, HEADER, IMAGE, MARKER_KINDS,
    ORDER_COLUMNS, PRESENT_OP_NAMES, RAW_ARROW, SEQUENCE_COMPONENT, TOMBSTONE,
)

RAW_SPARK = from_arrow_schema(RAW_ARROW)
EVENT_SPARK = from_arrow_schema(EVENT_ARROW)
DECODED_SPARK = from_arrow_schema(DECODED_ARROW)
ENCODED_SPARK = from_arrow_schema(ENCODED_ARROW)
ENCODED_KEYED_SPARK = from_arrow_schema(ENCODED_KEYED_ARROW)
# What a replay whose decode tasks wrote events/ themselves (``cdc_jobs.io.files.EventsHere``) counts of each
# decoded row (``accounting.Tally``) and, for a dead letter or marker, keeps whole: its position and the
# dead-letter columns; plus the verdict the task acted on ("kept", "window", "after_window", "tables"; NULL for
# dead letters and markers: ``accounting.kept_column``). The event itself (images, declarations, vendor data) stays in the
# files: carrying its empty nested columns into the JVM and the replay's cache was a quarter of the replay's time.
COUNTED_FIELDS = [n for n in DECODED_ARROW.names if n in {
    "format", "op", "table_name", "event_time_ms", "pos_source", "pos_partition", "pos_offset", "pos_index",
    "pos_timestamp_ms", "fragment_index", "fragment_total", "replaces_row", "first_of_record", *DEAD_LETTER_COLUMNS}]
COUNTED_ARROW = pa.schema([DECODED_ARROW.field(n) for n in COUNTED_FIELDS] + [pa.field("kept", pa.string())])
COUNTED_SPARK = from_arrow_schema(COUNTED_ARROW)
# What those tasks hand Spark (the rows themselves stay in their scratch tables, ``EventsHere``): each row's
# verdict alone, so that Spark's progress still counts the decoded rows.
VERDICT_ARROW = pa.schema([COUNTED_ARROW.field("kept")])
VERDICT_SPARK = from_arrow_schema(VERDICT_ARROW)
