"""The canonical change event every codec decodes into and encodes from.

Value model (why strings): vendors disagree on how to render a value (JSON number, quoted text, Avro union,
epoch micros), and any float/int round trip would break exactness (300-digit decimals, unsigned 64-bit ints,
9 fractional digits). So an image maps column name -> canonical *text* or ``None`` (SQL NULL); a column that
is absent from the dict is "not present in this image" (Canal partial ``old``, DTS ``EmptyObject``, SharePlex
updates, Mongo ``$set``), which is different from NULL.

Canonical text per type family (see ``types.py``):
  integers   decimal digits, any size ("10223372036854775806")
  decimal    the exact digits as the source wrote them ("9.999999", "1E-308" kept verbatim)
  float      the source's literal text
  binary     base64 (standard alphabet, padded)
  bit        decimal integer value of the bit string
  date       YYYY-MM-DD; time HH:MM:SS[.f{1,9}]; datetime YYYY-MM-DD HH:MM:SS[.f{1,9}]
  timestamp  epoch seconds with optional fraction ("1606233662.012345"), the instant, zone-free
  zoned      "YYYY-MM-DD HH:MM:SS[.f] ZONE" where ZONE is an offset (+08:00) or a zone id
  others     (enum, set, json, geometry WKT/WKB-base64, interval) the source's text
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from decimal import Decimal
from typing import Any, Mapping, Optional

Image = dict[str, Optional[str]]


class Op(str, enum.Enum):
    """What happened. Data ops change rows; the rest are control records that verify accounts for."""

    SNAPSHOT = "SNAPSHOT"  # full-sync row: OMS ROW, DRS INIT, Debezium r, DTS INIT
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    DDL = "DDL"
    TRUNCATE = "TRUNCATE"
    HEARTBEAT = "HEARTBEAT"
    BEGIN = "BEGIN"
    COMMIT = "COMMIT"

    @property
    def is_data(self) -> bool:
        return self in DATA_OPS


DATA_OPS = frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE})
CONTROL_OPS = frozenset(set(Op) - DATA_OPS - {Op.TRUNCATE})


@dataclass(frozen=True)
class Column:
    """A column as the source declared it. ``number`` records that the source rendered the value as a bare
    JSON number (OMS Default has no types at all, so this is the only way to re-encode it identically)."""

    name: str
    type_name: Optional[str] = None  # vendor type text, e.g. "decimal(10,2)", "varchar", "LONG"
    jdbc_type: Optional[int] = None  # java.sql.Types number where the vendor gives one
    number: bool = False


@dataclass(frozen=True)
class Position:
    """Where the message sat in the archive: the final, always-unique tie-break of the ordering.

    Files: source=path, partition=-1, offset=line number (1-based, as editors show it) or record number in an
    Avro container file. Kafka: source=topic, partition, offset.
    ``index`` is the row's index inside a multi-row message (Canal ``data``) or the shard index."""

    source: str
    partition: int = -1
    offset: int = 0
    index: int = 0
    timestamp_ms: Optional[int] = None  # Kafka record timestamp
    key: Optional[bytes] = None  # Kafka record key
    headers: tuple[tuple[str, bytes], ...] = ()

    def describe(self) -> str:
        if self.partition < 0:
            return f"{self.source} line {self.offset}"
        return f"{self.source} partition {self.partition} offset {self.offset}"


@dataclass(frozen=True)
class Event:
    format: str
    op: Op
    database: Optional[str]
    table: Optional[str]
    position: Position
    schema: Optional[str] = None
    before: Optional[Image] = None
    after: Optional[Image] = None
    columns: tuple[Column, ...] = ()
    primary_key: tuple[str, ...] = ()
    event_time_ms: Optional[int] = None
    # Vendor ordering fields, compared as numbers component by component (e.g. DRS id; Debezium binlog
    # file number, pos, row; DataWorks sequenceId). The archive position breaks ties.
    sequence: tuple[Decimal, ...] = ()
    transaction_id: Optional[str] = None
    ddl: Optional[str] = None
    # Codec-private data needed to re-encode into the *same* format losslessly (JSON-serialisable),
    # e.g. Canal's batch id and build time. Other formats ignore it.
    vendor: Mapping[str, Any] = field(default_factory=dict)
    # Multi-message events (DataWorks update halves, OMS Avro shards): fragments share ``fragment_key`` and
    # are reassembled by the codec's ``assemble`` after grouping (possibly across Spark partitions).
    fragment_key: Optional[str] = None
    fragment_index: int = 0
    fragment_total: int = 1
    # Format-neutral facts for a state merge that only some sources have (merge reads these, never ``vendor``):
    # columns this change removes from the row (absent afterwards, not NULL; a document field's unset) ...
    removed_columns: tuple[str, ...] = ()
    # ... an UPDATE whose after image is the whole new row (columns of the old row it lacks are gone; a document
    # replace) ...
    replaces_row: bool = False
    # ... and, for a table without primary key, the hidden column the source keeps to identify each row.
    row_id_column: Optional[str] = None

    @property
    def qualified_table(self) -> str:
        """``db.table`` (``db.schema.table`` when a schema is present), the name users filter and merge by."""
        parts = [p for p in (self.database, self.schema, self.table) if p]
        return ".".join(parts)

    def column(self, name: str) -> Optional[Column]:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    def order_key(self) -> tuple:
        p = self.position
        return (self.sequence, p.source, p.partition, p.offset, p.index)

    def with_(self, **changes: Any) -> "Event":
        """This event with ``changes``, as ``dataclasses.replace`` gives it. Built by copying the fields instead:
        ``replace`` runs ``__init__`` over all 21 fields, each set through ``object.__setattr__`` (frozen), 15 us
        against 2 us, paid by a decode for every event it adds vendor data to (~7% of a JSON codec's decode).
        Nothing is checked in ``__init__``, so the copy is the same event."""
        unknown = changes.keys() - _EVENT_FIELDS
        if unknown:
            raise TypeError(f"Event has no field(s) {sorted(unknown)}")
        copy = object.__new__(type(self))
        fields = copy.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        return copy


_EVENT_FIELDS = frozenset(f.name for f in dataclass_fields(Event))


class DecodeError(ValueError):
    """A message that cannot be decoded. Always names vendor format, field and source position, because the
    user has to find the record in a multi-GB archive."""

    def __init__(self, vendor: str, field: str, position: Optional[Position], reason: str):
        self.vendor, self.field, self.position, self.reason = vendor, field, position, reason
        where = position.describe() if position else "unknown position"
        super().__init__(f"{vendor}: field '{field}' at {where}: {reason}")


class EncodeError(ValueError):
    def __init__(self, vendor: str, field: str, reason: str):
        self.vendor, self.field, self.reason = vendor, field, reason
        super().__init__(f"{vendor}: cannot encode field '{field}': {reason}")
