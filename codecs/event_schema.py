"""The one definition of the canonical event record and the rows beside it, as Arrow schemas.

Everything that stores or moves events in columns imports from here: ``cdc_codecs.records`` (Event <-> flat
record), the decode/encode transforms, and ``cdc_jobs.schemas`` (which only derives the Spark types from these).
pyarrow only, never pyspark, so the codecs can build batches of this shape on their own.

Row shapes:
  RAW      one archived message and its position (what every source produces: files, dumps, Kafka).
  EVENT    one canonical event (``records.to_record``): what replay writes and merge/verify read.
  DECODED  EVENT plus the dead-letter columns: the decode step's output, before it is split in two.
  ENCODED  one re-encoded message, or a dead letter for an event the target format cannot carry a value of.
  ENCODED_HEADLESS  ENCODED without the headers (``encode_each``, key-scope targets).

To add an event field (e.g. a format-neutral flag that merge reads), append it to ``EVENT_ARROW`` here and fill
it in ``records.to_record``/``from_record`` and the decode column builder; every schema below follows.
"""

from __future__ import annotations

import pyarrow as pa

from .event import DATA_OPS, Op

# -- op names as stored in the ``op`` column ------------------------------------------------------------------
DATA_OP_NAMES: tuple[str, ...] = tuple(o.value for o in Op if o in DATA_OPS)  # SNAPSHOT INSERT UPDATE DELETE
PRESENT_OP_NAMES: tuple[str, ...] = tuple(n for n in DATA_OP_NAMES if n != Op.DELETE.value)  # the row exists after
# Marker kinds: rows the decode step emits only so that the accounting closes (records read = events + dead
# letters + control + markers). They are never events and are never written to events/.
FRAGMENT = "FRAGMENT"  # one message of a multi-message event; the assembled event is a row of its own
TOMBSTONE = "TOMBSTONE"  # a Kafka record with a null value (compaction delete), not a CDC message
MARKER_KINDS: tuple[str, ...] = (FRAGMENT, TOMBSTONE)

# -- column types -------------------------------------------------------------------------------------------
HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
# An image maps column -> canonical text; a NULL value is SQL NULL, a missing entry is "not in this image".
IMAGE = pa.map_(pa.string(), pa.string())
COLUMN = pa.struct([("name", pa.string()), ("type_name", pa.string()), ("jdbc_type", pa.int32()),
                    ("number", pa.bool_())])
SEQUENCE_COMPONENT = pa.decimal128(38, 0)

RAW_ARROW = pa.schema([
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_timestamp_ms", pa.int64()),
    ("pos_key", pa.binary()),
    ("pos_headers", pa.list_(HEADER)),
    ("value", pa.binary()),
])

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
    ("vendor", pa.string()),  # codec-private JSON needed to re-encode into the same format losslessly
    ("fragment_key", pa.string()),
    ("fragment_index", pa.int32()),
    ("fragment_total", pa.int32()),
    # Format-neutral merge facts a codec sets (see cdc_codecs.event.Event), so merge never tests a format name.
    ("removed_columns", pa.list_(pa.string())),
    ("replaces_row", pa.bool_()),
    ("row_id_column", pa.string()),
])
EVENT_FIELDS: list[str] = EVENT_ARROW.names
# The canonical order of events: vendor sequence, then the archive position as the always-unique tie-break.
ORDER_COLUMNS = ["sequence", "pos_source", "pos_partition", "pos_offset", "pos_index"]

DEAD_LETTER_FIELDS = [
    ("dl_reason", pa.string()),  # the DecodeError text: vendor, field, position, reason
    ("dl_field", pa.string()),
    ("dl_raw", pa.binary()),  # the message bytes exactly as read
    ("first_of_record", pa.bool_()),  # exactly one output row per archived record has this set
]
DECODED_ARROW = pa.schema(list(EVENT_ARROW) + [pa.field(n, t) for n, t in DEAD_LETTER_FIELDS])
# What dead_letters/ holds: where the record was, why it failed, and its exact bytes.
DEAD_LETTER_COLUMNS = ["format", "pos_source", "pos_partition", "pos_offset", "pos_index", "pos_timestamp_ms",
                       "pos_key", "dl_field", "dl_reason", "dl_raw",
                       "table_name"]  # when known (the record decoded but could not be stored), for the budget

ENCODED_ARROW = pa.schema([
    ("table_name", pa.string()),
    ("op", pa.string()),
    ("events", pa.int32()),  # canonical events this message carries (Canal packs several)
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("headers", pa.list_(HEADER)),
    # The dump line of a binary target (base64 key/value/headers); NULL for text targets, whose file line is
    # ``value`` itself (so the message is not carried twice).
    ("line", pa.string()),
    # Set on a row that is an encode dead letter instead of a message: the event (as EVENT JSON) that could
    # not be written in the target format, the field and the reason.
    ("el_field", pa.string()),
    ("el_reason", pa.string()),
    ("el_event", pa.string()),
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_index", pa.int32()),
])
# ENCODED rows of a target whose order scope is "key", encoded event by event where the events were decoded
# (``encode.encode_each``): the headers are added by Spark from pos_* (``encode.source_headers``).
ENCODED_HEADLESS_ARROW = pa.schema([f for f in ENCODED_ARROW if f.name != "headers"])
ENCODED_DEAD_LETTER_COLUMNS = ["table_name", "op", "pos_source", "pos_partition", "pos_offset", "pos_index",
                               "el_field", "el_reason", "el_event"]
