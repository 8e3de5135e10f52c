"""What a codec's decode fast path builds (``Codec.plain_rows``): DECODED rows as tuples, no ``Event`` per row.

The row layout lives here beside the checks a fast path must apply itself (``contract``'s, without an Event), so
a vendor module needs nothing outside the shared room; the decode step's column builder (``cdc_jobs``) appends
these tuples as they are.
"""

from __future__ import annotations

from typing import Optional

from ..contract import INT64, columns_fit, name_fits  # noqa: F401  (the record contract's checks, for fast paths)
from ..event import Column, Image
from ..event_schema import DECODED_ARROW


# Where an archived record sat, as the RAW columns give it: (pos_source, pos_partition, pos_offset,
# pos_timestamp_ms, pos_key, pos_headers as a list of {"key", "value"}). A codec's ``plain_rows`` gets this
# instead of a ``Position``, so its fast path builds no object per message.
RecordAt = tuple
RECORD_AT = ("pos_source", "pos_partition", "pos_offset", "pos_timestamp_ms", "pos_key", "pos_headers")

# The field order of a DECODED row tuple (``data_row`` here, the decode step's column builder in cdc_jobs).
DECODED_ROW = ("format", "op", "database", "schema", "table", "table_name", "before", "after", "columns",
               "primary_key", "event_time_ms", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index",
               "pos_timestamp_ms", "pos_key", "pos_headers", "transaction_id", "ddl", "vendor", "fragment_key",
               "fragment_index", "fragment_total", "removed_columns", "replaces_row", "row_id_column", "dl_reason",
               "dl_field", "dl_raw", "first_of_record")
assert DECODED_ROW == tuple(DECODED_ARROW.names), "DECODED_ARROW changed: update DECODED_ROW and data_row"


# The fields a JVM decode sets (``Codec.jvm_declaration``, ``ContainerDecoder.jvm_rows``), in the
# order of its rows (``PlainDecoder.FIELDS`` in shared/jvm/PlainDecoder.java says the same); every other DECODED
# field of such a row is what ``data_row`` sets for a row event at the position the file's reader gives.
TWIN_FIELDS = ("op", "database", "table", "table_name", "before", "after", "columns", "primary_key", "event_time_ms",
               "sequence", "pos_index", "vendor", "first_of_record", "transaction_id", "schema", "replaces_row",
               "removed_columns")


def column_dicts(columns: tuple[Column, ...]) -> list[dict]:
    """Declared columns as the ``columns`` field holds them (one dict per column)."""
    return [{"name": c.name, "type_name": c.type_name, "jdbc_type": c.jdbc_type, "number": c.number}
            for c in columns]


def data_row(fmt: str, op: str, database: Optional[str], table: Optional[str], before: Optional[Image],
             after: Optional[Image], columns: list[dict], primary_key: tuple, event_time_ms: Optional[int],
             sequence: tuple, at: RecordAt, index: int, vendor: Optional[str], first: bool,
             transaction_id: Optional[str] = None) -> tuple:
    """The DECODED row (``DECODED_ROW`` order) of a plain row event: no schema, DDL, fragments or
    merge facts. What ``to_record(event)`` plus the empty dead-letter columns hold for the same event, without
    building the ``Event`` (``columns``: ``column_dicts`` of the declaration, shared by the rows of a table;
    ``vendor``: the vendor data as JSON text)."""
    return (fmt, op, database, None, table, ".".join([p for p in (database, table) if p]), before, after, columns,
            primary_key, event_time_ms, sequence, at[0], at[1], at[2], index, at[3], at[4], at[5] or [],
            transaction_id, None, vendor, None, 0, 1, (), False, None, None, None, None, first)
