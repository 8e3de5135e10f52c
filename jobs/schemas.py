"""Spark schemas of the row shapes that flow through the jobs, derived from the one Arrow definition in
``cdc_codecs.event_schema`` (see there for RAW, EVENT, DECODED and ENCODED, op names and marker kinds)."""

from __future__ import annotations

from pyspark.sql.pandas.types import from_arrow_schema

from cdc_codecs.event_schema import (  # noqa: F401  (re-exported: the jobs import schemas from here)
    COLUMN, DATA_OP_NAMES, DEAD_LETTER_COLUMNS, DEAD_LETTER_FIELDS, DECODED_ARROW, ENCODED_ARROW,
    ENCODED_DEAD_LETTER_COLUMNS, ENCODED_HEADLESS_ARROW, EVENT_ARROW, EVENT_FIELDS, FRAGMENT, HEADER, IMAGE, MARKER_KINDS,
    ORDER_COLUMNS, PRESENT_OP_NAMES, RAW_ARROW, SEQUENCE_COMPONENT, TOMBSTONE,
)

RAW_SPARK = from_arrow_schema(RAW_ARROW)
EVENT_SPARK = from_arrow_schema(EVENT_ARROW)
DECODED_SPARK = from_arrow_schema(DECODED_ARROW)
ENCODED_SPARK = from_arrow_schema(ENCODED_ARROW)
ENCODED_HEADLESS_SPARK = from_arrow_schema(ENCODED_HEADLESS_ARROW)
