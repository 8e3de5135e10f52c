"""Maxwell's daemon JSON (Zendesk Maxwell): one message per row change, DDL statement or bootstrap marker.

A row message: ``database``, ``table``, ``type`` (insert / update / delete; bootstrap-insert for the rows of a
table bootstrap, i.e. a full sync), ``ts`` (epoch seconds), ``xid`` (the InnoDB transaction id) and ``xoffset`` /
``commit`` (the row's place in its transaction), and with the matching options ``position`` ("binlog-file:offset"),
``gtid``, ``server_id``, ``thread_id``, ``primary_key`` (the key's values), ``primary_key_columns`` (its names) and
``query``. ``data`` is the whole row (for a delete the row as it was); ``old`` holds for an update the previous
values of the changed columns only, so the before image is ``data`` overlaid with ``old`` (Maxwell's
``data.merge(old)``). bootstrap-start / bootstrap-complete frame a bootstrap: control records (HEARTBEAT, the type
kept). DDL messages (``--output_ddl``: database-create/-alter/-drop, table-create/-alter/-drop) carry ``sql``, the
table definition ``def`` (and ``old`` for an alter) and ``ts`` in milliseconds.

Maxwell declares no column types in row messages: integers, decimals and doubles are bare JSON numbers (their
literal is kept exactly), text, dates and times strings, binary base64, sets arrays, JSON columns raw JSON
(``shared.json_cells``). ``sequence`` is the binlog position (file number, offset) when the message has one, else
``ts`` (seconds). Lossless re-encode: the shared derive/fix recipe (``Codec.decode``/``Codec.encode``) keeps what
the canonical fields do not say (``xoffset``, ``commit``, ``server_id``, the position's file name, ``def``...).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Optional, Sequence

from ..base import TYPED_FAMILIES, Capabilities, Codec, flat_database, untyped
from ..event import EncodeError, Event, Op, Position
from ..jsontext import JsonNumber
from ..shared.declared_rows import DeclaredRows
from ..shared.required import OBJECT, STRING, Required, need, same_needs
from ..shared.json_cells import declared, read_image, render_image, rendering
from ..shared.json_fix import fix_paths
from ..shared.value_text import int_field, is_text

FORMAT = "maxwell-json"
ROW_TYPES = {"insert": Op.INSERT, "update": Op.UPDATE, "delete": Op.DELETE, "bootstrap-insert": Op.SNAPSHOT}
TYPE_OF_OP = {op: kind for kind, op in ROW_TYPES.items()}
CONTROL_TYPES = {"bootstrap-start", "bootstrap-complete"}
DDL_TYPES = {"database-create", "database-alter", "database-drop", "table-create", "table-alter", "table-drop"}
# "master.000006:800911": the binlog file (its number orders files) and the offset in it
_POSITION = re.compile(r"(.*?)(\d+):(\d+)\Z", re.S)


def _maxwell_kind(msg: dict) -> Optional[str]:
    kind = msg.get("type")
    return kind if kind in ROW_TYPES else "DDL" if kind in DDL_TYPES else None


_ROW_NEEDS = (need("table", STRING, nonempty=True), need("data", OBJECT))  # database: absent in documented rows
# A row message names its table and carries the row in data (an update's changed columns in old may be empty);
# a DDL its statement.
REQUIRED = Required(_maxwell_kind, {**same_needs(tuple(ROW_TYPES), *_ROW_NEEDS), "DDL": (need("sql", STRING),)})


class MaxwellJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Zendesk Maxwell"
    description = "Maxwell JSON: database/table/type, ts (s), xid/xoffset/commit, data row, old changed columns"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        losses=untyped(*TYPED_FAMILIES),  # no column types: every value is exact text
        typed_values=False,
        before_image="changed",
        delete_image="full",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL}),
        notes="No column types (integers, decimals and doubles are bare numbers, the rest strings; a value is the "
              "text Maxwell wrote: TIMESTAMP as UTC wall-clock text, SET as a JSON array); UPDATE old "
              "holds the changed columns only; full-sync rows are bootstrap-insert (bootstrap-start/-complete "
              "decode as control records, not re-encoded); row ts is whole seconds; ordering is the binlog "
              "position when output (else ts): a foreign sequence that is not (file number, offset) is not "
              "carried; xid is the transaction id (no begin/commit records); no truncate or heartbeat.",
    )

    # The JVM's declared decode of the plain row messages (shared.declared_rows); what it declines (DDL, bootstrap
    # markers, a binlog position, cells written as booleans or JSON...) ``events`` decodes.
    jvm_declaration = DeclaredRows(
        op=("type", {kind: op.value for kind, op in ROW_TYPES.items()}), images=(("row", "data"), ("changed", "old")),
        reads={"database": ("database", "text"), "table": ("table", "text"), "seconds": ("ts", "integer"),
               "transaction_id": ("xid", "integer"), "primary_key": ("primary_key_columns", "list")},
        writes={"database": "database", "table": "table", "type": "op", "ts": "seconds_number",
                "xid": "transaction_number", "primary_key_columns": "key_list"},
        sequence_from_seconds=True, declines=("position",))

    # ---------------------------------------------------------------------------------------------- decode

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        # a row message's data/old are the event itself (its cells' renderings are kept per cell); the old of a DDL
        # message is the table's previous definition, kept as received
        return fix_paths(msg, derived, {"data", "old"} if events[0].op.is_data else set())

    def events(self, msg: dict, position: Position) -> list[Event]:
        kind = msg.get("type")
        if not is_text(kind):
            raise self.error("type", position, f"expected a string, got {kind!r}")
        database, table = self._text(msg, "database", position), self._text(msg, "table", position)
        ts = msg.get("ts")
        seconds = int_field(ts)
        if ts is not None and (seconds is None or not isinstance(ts, JsonNumber)):
            raise self.error("ts", position, f"expected epoch {'milliseconds' if kind in DDL_TYPES else 'seconds'}, "
                                             f"got {ts!r}")
        common: dict[str, Any] = dict(format=FORMAT, database=database, table=table)
        xid = msg.get("xid")
        if xid is not None:
            if int_field(xid) is None or not isinstance(xid, JsonNumber):
                raise self.error("xid", position, f"expected the transaction id as an integer, got {xid!r}")
            common["transaction_id"] = str(xid)
        binlog = self._position(msg, position)
        if kind in DDL_TYPES:  # ts in milliseconds
            sql = msg.get("sql")
            if sql is not None and not is_text(sql):
                raise self.error("sql", position, "expected the DDL statement as a string")
            sequence = binlog or ((Decimal(seconds) / 1000,) if seconds is not None else ())
            return [Event(op=Op.DDL, position=position, ddl=sql, event_time_ms=seconds, sequence=sequence,
                          vendor={"type": kind}, **common)]
        # without a position a change is ordered by its ts, and a bootstrap row (full sync) comes before changes,
        # as full-sync rows without a sequence do in every format
        by_ts = (Decimal(seconds),) if seconds is not None and kind != "bootstrap-insert" else ()
        common.update(event_time_ms=seconds * 1000 if seconds is not None else None, sequence=binlog or by_ts)
        if kind in CONTROL_TYPES:
            return [Event(op=Op.HEARTBEAT, position=position, vendor={"type": kind}, **common)]
        op = ROW_TYPES.get(kind)
        if op is None:
            raise self.error("type", position, f"unknown type {kind!r}: expected one of "
                                               f"{sorted([*ROW_TYPES, *CONTROL_TYPES, *DDL_TYPES])}")
        return [self._row_event(msg, op, position, common)]

    def _text(self, msg: dict, key: str, position: Position) -> Optional[str]:
        value = msg.get(key)
        if value is not None and not is_text(value):
            raise self.error(key, position, f"expected a string, got {value!r}")
        return value

    def _position(self, msg: dict, position: Position) -> tuple[Decimal, ...]:
        text = msg.get("position")
        if text is None:
            return ()
        m = _POSITION.match(text) if is_text(text) else None
        if m is None:
            raise self.error("position", position, f"expected 'binlog-file:offset', got {text!r}")
        return Decimal(int(m.group(2))), Decimal(int(m.group(3)))

    def _row_event(self, msg: dict, op: Op, position: Position, common: dict) -> Event:
        numbers: dict[str, bool] = {}
        data, data_kinds = read_image(self, msg.get("data"), "data", position, numbers)
        if data is None:
            raise self.error("data", position, f"{op.value} needs the row in data")
        old_raw = msg.get("old")
        if old_raw is not None and op is not Op.UPDATE:
            raise self.error("old", position, f"only an update carries old values, not {msg['type']!r}")
        old, old_kinds = read_image(self, old_raw, "old", position, numbers)
        keys = msg.get("primary_key_columns")
        if keys is not None and not (isinstance(keys, list) and all(is_text(k) for k in keys)):
            raise self.error("primary_key_columns", position, "expected a list of column names")
        columns, render = declared(numbers, {"data": data_kinds, "old": old_kinds})
        vendor: dict[str, Any] = {}
        if render:
            vendor["render"] = render
        before, after = None, data
        if op is Op.DELETE:
            before, after = data, None
        elif op is Op.UPDATE:
            # Maxwell: a column missing from `old` did not change, so its old value is the new one
            before = {**data, **(old or {})}
            vendor["old_keys"] = list(old or {})
        return Event(op=op, position=position, before=before, after=after, columns=columns,
                     primary_key=tuple(keys or ()), vendor=vendor, **common)

    # ---------------------------------------------------------------------------------------------- encode

    def check_encodable(self, event: Event) -> None:
        own = event.format == FORMAT and event.vendor.get("type") in CONTROL_TYPES
        if not (event.op in self.capabilities.ops or own):
            raise EncodeError(FORMAT, "type", f"Maxwell JSON cannot carry a {event.op.value} event")

    def message_op(self, msg: dict, first: Event) -> str:
        return msg["type"] if is_text(msg.get("type")) else first.op.value

    def build(self, events: list[Event]) -> dict:
        return self._message(events[0], images=True)

    def derive(self, events: list[Event]) -> dict:
        # A row message's data/old are the event itself: ``fix_paths`` never compares them, so decode derives the
        # message with empty placeholders there instead of rendering every cell (same keys, same order; tests check
        # both derivations give the same fixes).
        return self._message(events[0], images=False)

    def _message(self, e: Event, images: bool) -> dict:
        own = e.format == FORMAT
        msg: dict[str, Any] = {"database": flat_database(e), "table": e.table}
        if e.op is Op.DDL:
            msg["type"] = e.vendor.get("type") if own and e.vendor.get("type") else _ddl_type(e.ddl)
            if e.event_time_ms is not None:
                msg["ts"] = JsonNumber(str(e.event_time_ms))
            msg["sql"] = e.ddl
            _put_position(msg, e)
            return msg
        msg["type"] = e.vendor["type"] if e.op is Op.HEARTBEAT else TYPE_OF_OP[e.op]
        if e.event_time_ms is not None:
            msg["ts"] = JsonNumber(str(e.event_time_ms // 1000))
        if e.transaction_id is not None and e.transaction_id.isascii() and e.transaction_id.isdigit():
            msg["xid"] = JsonNumber(str(int(e.transaction_id)))
        _put_position(msg, e)
        if e.primary_key:
            msg["primary_key_columns"] = list(e.primary_key)
        if not e.op.is_data:
            msg["data"] = {}
            return msg
        flags, render = rendering(e, own) if images else ({}, {})
        row = e.before if e.op is Op.DELETE else e.after
        msg["data"] = render_image(FORMAT, row or {}, flags, render.get("data", {}), "data") if images else {}
        if e.op is Op.UPDATE:
            old = _old_cells(e, own)
            if old:
                msg["old"] = render_image(FORMAT, old, flags, render.get("old", {}), "old") if images else {}
        return msg


def _old_cells(e: Event, own: bool) -> dict[str, Optional[str]]:
    before, after = e.before or {}, e.after or {}
    keys = e.vendor.get("old_keys") if own else None
    if keys is None:  # Maxwell's `old` holds the columns whose value changed (or that only the before image has)
        keys = [k for k in before if k not in after or before[k] != after[k]]
    return {k: before.get(k) for k in keys}


def _put_position(msg: dict, e: Event) -> None:
    """The binlog position, when the event's sequence is one (file number, offset): Maxwell's own ordering."""
    seq = e.sequence
    if len(seq) == 2 and all(s == s.to_integral_value() and s >= 0 for s in seq):
        msg["position"] = f"mysql-bin.{int(seq[0]):06d}:{int(seq[1])}"


def _ddl_type(ddl: Optional[str]) -> str:
    words = (ddl or "").upper().split()
    verb = {"CREATE": "create", "DROP": "drop"}.get(words[0] if words else "", "alter")
    level = "database" if len(words) > 1 and words[1] in ("DATABASE", "SCHEMA") else "table"
    return f"{level}-{verb}"


CODEC = MaxwellJsonCodec()
