"""Canal FlatMessage JSON (Alibaba Canal, and the Canal serialisation of OceanBase OMS / CloudCanal).

One message holds one statement's rows: ``data`` is a list (one canonical Event per row, ``Position.index`` = row
index), ``old`` holds for an UPDATE only the *changed* columns with their old values, DELETE rows are in ``data``.
``id`` is the batch id shared by every row of one batch, not an ordering field, so the sequence is ``(es,)``.

Two dialects exist and are reproduced per column: Alibaba Canal writes every value as a JSON string, OMS writes
numbers bare. ``Column.number`` records which, per column, as decoded.

Lossless re-encode: the encoder *derives* every message field from the canonical events; at decode time the
message is compared with that derivation and only the metadata keys that differ (a null ``mysqlType``, a
``tableChanges`` block, ``id``, ``ts``...) are kept in ``event.vendor["fix"]`` and re-applied on encode. The
helpers for that (``derive_fix``/``apply_fix``) are shared with the OMS JSON codecs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional, Sequence

from . import jsontext
from .base import Capabilities, Codec, EncodedMessage, group_by_message, message_key
from .event import Column, DecodeError, EncodeError, Event, Image, Op, Position
from .jsontext import JsonNumber
from .types import JDBC, JDBC_NAME, NUMERIC_FAMILIES, family

# --------------------------------------------------------------------------------------------------------------
# Helpers shared with the OMS JSON codecs (oms_default, oms_extend_column_type, oms_shareplex, oms_dataworks).

_JSON_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?\Z")


def is_json_number(text: str) -> bool:
    """True when ``text`` may be written as a bare JSON number (canonical text such as "NaN" may not)."""
    return bool(_JSON_NUMBER.match(text))


def is_text(value: Any) -> bool:
    """A JSON string (``JsonNumber`` is a ``str`` subclass, so ``isinstance(v, str)`` is not enough)."""
    return isinstance(value, str) and not isinstance(value, JsonNumber)


def literal(value: Any) -> str:
    """A JSON subtree as its exact JSON text (numbers verbatim), so ``event.vendor`` stays plain JSON."""
    return jsontext.dumps(value).decode()


def unliteral(text: str) -> Any:
    return jsontext.loads(text)[0]


def derive_fix(original: Mapping[str, Any], derived: Mapping[str, Any], paths: Iterable[tuple[str, ...]]
               ) -> list[list[Any]]:
    """The differences between the message as received and as the encoder would derive it, at the given key
    paths: ``[[path...], literal]`` to set a value, ``[[path...], None]`` where the original lacks the key."""
    fixes: list[list[Any]] = []
    for path in paths:
        have, orig = _lookup(original, path)
        want, der = _lookup(derived, path)
        if not have:
            if want:
                fixes.append([list(path), None])
        elif not want or jsontext.normalise(orig) != jsontext.normalise(der):
            fixes.append([list(path), literal(orig)])
    return fixes


def fix_paths(original: Mapping[str, Any], derived: Mapping[str, Any], skip: set[str],
              nested: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Every top-level key of either side except ``skip``; keys of the ``nested`` objects one level down."""
    paths: list[tuple[str, ...]] = []
    for key in dict.fromkeys([*original, *derived]):
        if key in skip:
            continue
        o, d = original.get(key), derived.get(key)
        if key in nested and isinstance(o, dict) and isinstance(d, dict):
            paths.extend((key, k) for k in dict.fromkeys([*o, *d]))
        else:
            paths.append((key,))
    return paths


def apply_fix(message: dict[str, Any], fixes: Iterable[Sequence[Any]]) -> dict[str, Any]:
    for path, value in fixes:
        target = message
        for key in path[:-1]:
            nxt = target.get(key)
            if not isinstance(nxt, dict):
                nxt = target[key] = {}
            target = nxt
        if value is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = unliteral(value)
    return message


def _lookup(obj: Any, path: Sequence[str]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def scalar_text(value: Any) -> tuple[Optional[str], bool]:
    """A JSON scalar as canonical text and whether it was a bare number; None for anything else (raise)."""
    if value is None:
        return None, False
    if isinstance(value, JsonNumber):
        return str(value), True
    if isinstance(value, str):
        return value, False
    raise TypeError(type(value).__name__)


def render(text: Optional[str], bare: bool) -> Any:
    """Canonical text back to JSON: bare number when asked for and possible, else a string."""
    if text is None:
        return None
    return JsonNumber(text) if bare and is_json_number(text) else text


def int_field(value: Any) -> Optional[int]:
    """An integer metadata field written as a bare number or a string of digits."""
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return int(value)
    return None


# --------------------------------------------------------------------------------------------------------------

FORMAT = "canal-json"
DML_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
# Canal's EventType names for DDL-ish statements (isDdl=true).
DDL_TYPES = {"CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX", "GTID", "XACOMMIT",
             "XAROLLBACK"}
STANDARD_KEYS = ("data", "database", "es", "id", "isDdl", "mysqlType", "old", "pkNames", "sql", "sqlType",
                 "table", "ts", "type")


class CanalJsonCodec(Codec):
    name = FORMAT
    vendor = "Alibaba Canal / OceanBase OMS / CloudCanal"
    description = "Canal FlatMessage JSON: data[] rows, old[] changed columns, mysqlType/sqlType, es/ts"
    capabilities = Capabilities(
        typed_values=True,
        before_image="changed",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE}),
        notes="UPDATE carries old values of changed columns only (unchanged columns equal the new values); "
              "no snapshot marker (full-sync rows are INSERT), no heartbeat or transaction markers; "
              "id is a batch id, ordering is es (ms).",
    )

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        try:
            msg, _repaired = jsontext.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.error("$", position, f"not JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise self.error("$", position, "message is not a JSON object")
        events = self._events(msg, position)
        derived = self._build(events)
        skip = {"data", "old"} if events[0].op.is_data else set()
        fixes = derive_fix(msg, derived, fix_paths(msg, derived, skip))
        if fixes:
            events = [e.with_(vendor={**e.vendor, "fix": fixes}) for e in events]
        return events

    def _events(self, msg: dict, position: Position) -> list[Event]:
        kind = msg.get("type")
        if not is_text(kind):
            raise self.error("type", position, f"expected a string, got {kind!r}")
        is_ddl = msg.get("isDdl")
        if is_ddl is not None and not isinstance(is_ddl, bool):
            raise self.error("isDdl", position, f"expected true/false, got {is_ddl!r}")
        database, table = self._name(msg, "database", position), self._name(msg, "table", position)
        es = msg.get("es")
        event_ms = int_field(es)
        if es is not None and event_ms is None:
            raise self.error("es", position, f"expected epoch milliseconds, got {es!r}")
        pk = msg.get("pkNames")
        if pk is not None and not (isinstance(pk, list) and all(is_text(p) for p in pk)):
            raise self.error("pkNames", position, "expected a list of column names")
        common = dict(
            format=FORMAT, database=database, table=table, primary_key=tuple(pk or ()),
            event_time_ms=event_ms, sequence=(Decimal(event_ms),) if event_ms is not None else (),
        )
        if is_ddl or (is_ddl is None and kind in DDL_TYPES):
            return [self._ddl_event(msg, kind, position, common)]
        op = DML_TYPES.get(kind)
        if op is None:
            raise self.error("type", position, f"unknown DML type {kind!r} (isDdl is false)")
        return self._row_events(msg, op, position, common)

    def _name(self, msg: dict, key: str, position: Position) -> Optional[str]:
        value = msg.get(key)
        if value is not None and not is_text(value):
            raise self.error(key, position, f"expected a string, got {value!r}")
        return value

    def _ddl_event(self, msg: dict, kind: str, position: Position, common: dict) -> Event:
        sql = msg.get("sql")
        if sql is not None and not is_text(sql):
            raise self.error("sql", position, "expected the DDL statement as a string")
        op = Op.TRUNCATE if kind == "TRUNCATE" else Op.DDL
        columns = self._columns(msg, [], position)
        return Event(op=op, position=position, ddl=sql, columns=columns,
                     vendor={"type": kind}, **common)

    def _row_events(self, msg: dict, op: Op, position: Position, common: dict) -> list[Event]:
        data = msg.get("data")
        if not isinstance(data, list) or not data:
            raise self.error("data", position, f"{op.value} needs a non-empty list of rows")
        olds = msg.get("old")
        if op is Op.UPDATE:
            if not isinstance(olds, list) or len(olds) != len(data):
                raise self.error("old", position, f"UPDATE needs one old row per data row ({len(data)})")
        rows: list[tuple[dict, dict, Optional[dict]]] = []  # (cells, bare flags, old cells)
        bare: dict[str, set[bool]] = {}
        for i, row in enumerate(data):
            cells = self._cells(row, f"data[{i}]", position, i, bare)
            old = self._cells(olds[i], f"old[{i}]", position, i, bare) if op is Op.UPDATE else None
            rows.append((row, cells, old))
        columns = self._columns(msg, data, position, bare)
        events = []
        for i, (row, cells, old) in enumerate(rows):
            before, after = self._images(op, cells, old)
            vendor: dict[str, Any] = {"type": msg["type"]}
            if old is not None:
                vendor["old_keys"] = list(old)
            warnings = _warnings(columns, common["primary_key"], cells, old)
            if warnings:
                vendor["warnings"] = warnings
            deviating = self._deviating(columns, row, olds[i] if old is not None else None)
            if deviating:
                vendor["render"] = deviating
            events.append(Event(op=op, position=replace(position, index=i), before=before, after=after,
                                columns=columns, vendor=vendor, **common))
        return events

    def _cells(self, row: Any, field: str, position: Position, index: int, bare: dict[str, set[bool]]) -> Image:
        if not isinstance(row, dict):
            raise self.error(field, replace(position, index=index), "expected an object of column values")
        cells: Image = {}
        for col, value in row.items():
            try:
                text, is_number = scalar_text(value)
            except TypeError as exc:
                raise self.error(f"{field}.{col}", replace(position, index=index),
                                 f"a column value must be a string, number or null, got {exc}") from None
            cells[col] = text
            if text is not None:
                bare.setdefault(col, set()).add(is_number)
        return cells

    @staticmethod
    def _images(op: Op, cells: Image, old: Optional[Image]) -> tuple[Optional[Image], Optional[Image]]:
        if op is Op.INSERT:
            return None, cells
        if op is Op.DELETE:
            return cells, None
        # Canal semantics: a column missing from `old` did not change, so its old value is the new one.
        return {**cells, **(old or {})}, cells

    def _columns(self, msg: dict, data: list, position: Position,
                 bare: Optional[dict[str, set[bool]]] = None) -> tuple[Column, ...]:
        mysql_types = msg.get("mysqlType")
        sql_types = msg.get("sqlType")
        if mysql_types is not None and not isinstance(mysql_types, dict):
            raise self.error("mysqlType", position, "expected an object of column -> type name")
        if sql_types is not None and not isinstance(sql_types, dict):
            raise self.error("sqlType", position, "expected an object of column -> java.sql.Types number")
        mysql_types, sql_types = mysql_types or {}, sql_types or {}
        names = dict.fromkeys([*mysql_types, *sql_types, *(k for row in data for k in row)])
        columns = []
        for name in names:
            type_name = mysql_types.get(name)
            if type_name is not None and not is_text(type_name):
                raise self.error(f"mysqlType.{name}", position, f"expected a type name, got {type_name!r}")
            jdbc = sql_types.get(name)
            jdbc_type = int_field(jdbc) if jdbc is not None else None
            if jdbc is not None and jdbc_type is None:
                raise self.error(f"sqlType.{name}", position, f"expected a java.sql.Types number, got {jdbc!r}")
            # A column is "bare" when the producer wrote its values as JSON numbers (OMS dialect).
            number = True in (bare or {}).get(name, set())
            columns.append(Column(name, type_name, jdbc_type, number))
        return tuple(columns)

    @staticmethod
    def _deviating(columns: tuple[Column, ...], row: dict, old: Optional[dict]) -> list[list[str]]:
        """Cells whose rendering differs from their column's flag (mixed dialect inside one column)."""
        flags = {c.name: c.number for c in columns}
        out = []
        for part, cells in (("data", row), ("old", old or {})):
            for col, value in cells.items():
                if type(value) is str and flags.get(col):  # JsonNumber is a str subclass
                    out.append([part, col])
        return out

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for group in self._packable(events):
            msg = self._build(group)
            first = group[0]
            if first.format == FORMAT and first.vendor.get("fix"):
                apply_fix(msg, first.vendor["fix"])
            op = msg.get("type") if isinstance(msg.get("type"), str) else first.op.value
            out.append(EncodedMessage(jsontext.dumps(msg), message_key(first), first.qualified_table, op,
                                      events=len(group)))
        return out

    def _packable(self, events: Sequence[Event]) -> list[list[Event]]:
        """Rows of one source message go back into one message when they share table and op."""
        groups: list[list[Event]] = []
        for run in group_by_message(events):
            start = len(groups)
            for e in run:
                if e.op not in self.capabilities.ops and e.op is not Op.SNAPSHOT:
                    raise EncodeError(FORMAT, "type", f"Canal JSON cannot carry a {e.op.value} event")
                last = groups[-1][-1] if len(groups) > start else None
                if (last is not None and e.op.is_data and last.op is e.op
                        and last.qualified_table == e.qualified_table):
                    groups[-1].append(e)
                else:
                    groups.append([e])
        return groups

    def _build(self, group: Sequence[Event]) -> dict[str, Any]:
        first = group[0]
        own = first.format == FORMAT
        columns = _merge_columns(group)
        msg: dict[str, Any] = {
            "database": first.database if first.database is not None else "",
            "table": first.table if first.table is not None else "",
            "pkNames": list(first.primary_key) if first.primary_key else None,
            "es": JsonNumber(str(first.event_time_ms)) if first.event_time_ms is not None else None,
            "ts": JsonNumber(str(first.event_time_ms)) if first.event_time_ms is not None else None,
            "id": JsonNumber("0"),
            "mysqlType": {c.name: c.type_name or _type_name(c) for c in columns if c.type_name or not own},
            "sqlType": {c.name: JsonNumber(str(_jdbc(c))) for c in columns if c.jdbc_type is not None or not own},
        }
        if not first.op.is_data:
            kind = first.vendor.get("type") if own else None
            msg.update(type=kind or _ddl_type(first), isDdl=True, sql=first.ddl or _default_ddl(first),
                       data=None, old=None)
            return msg
        flags = {c.name: (c.number if own else False) for c in columns}
        kind = "INSERT" if first.op is Op.SNAPSHOT else first.op.value
        data, old = [], []
        for e in group:
            render_fix = {tuple(x) for x in e.vendor.get("render", ())} if own else set()
            row = e.before if e.op is Op.DELETE else e.after
            data.append(_render_image(row or {}, flags, "data", render_fix))
            if e.op is Op.UPDATE:
                old.append(_render_image(_old_cells(e, own), flags, "old", render_fix))
        msg.update(type=kind, isDdl=False, sql="", data=data, old=old if kind == "UPDATE" else None)
        return msg


def _warnings(columns: tuple[Column, ...], pk: tuple[str, ...], cells: Image, old: Optional[Image]) -> list[str]:
    """Inconsistencies some producers' documented examples show; kept as given, but said out loud."""
    known = {c.name for c in columns}
    out = [f"pkNames names unknown column {k!r}" for k in pk if k not in known]
    out += [f"old names column {k!r} that data does not have" for k in old or {} if k not in cells]
    return out


def _merge_columns(group: Sequence[Event]) -> list[Column]:
    """Declared columns of the group's events, then any image column without a declaration."""
    seen: dict[str, Column] = {}
    for e in group:
        for c in e.columns:
            seen.setdefault(c.name, c)
    for e in group:
        for image in (e.after, e.before):
            for name in image or {}:
                seen.setdefault(name, None)  # type: ignore[arg-type]
    return [c for c in seen.values() if c is not None]


def _old_cells(e: Event, own: bool) -> Image:
    before, after = e.before or {}, e.after or {}
    keys = e.vendor.get("old_keys") if own else None
    if keys is None:
        # Canal's `old` holds the columns whose value changed (or that only the before image has).
        keys = [k for k in before if k not in after or before[k] != after[k]]
    return {k: before.get(k) for k in keys}


def _render_image(image: Image, flags: Mapping[str, bool], part: str, render_fix: set) -> dict[str, Any]:
    return {k: render(v, flags.get(k, False) != ((part, k) in render_fix)) for k, v in image.items()}


def _jdbc(c: Column) -> int:
    if c.jdbc_type is not None:
        return c.jdbc_type
    fam = family(c.type_name)
    return {"int": JDBC["BIGINT"], "decimal": JDBC["DECIMAL"], "float": JDBC["DOUBLE"], "bit": JDBC["BIT"],
            "bool": JDBC["BOOLEAN"], "binary": JDBC["BLOB"], "date": JDBC["DATE"], "time": JDBC["TIME"],
            "datetime": JDBC["TIMESTAMP"], "timestamp": JDBC["TIMESTAMP"],
            "zoned": JDBC["TIMESTAMP_WITH_TIMEZONE"]}.get(fam, JDBC["VARCHAR"])


def _type_name(c: Column) -> str:
    if c.jdbc_type is not None and c.jdbc_type in JDBC_NAME:
        return JDBC_NAME[c.jdbc_type].lower()
    return "varchar"


def _ddl_type(e: Event) -> str:
    if e.op is Op.TRUNCATE:
        return "TRUNCATE"
    words = (e.ddl or "").split()
    first = words[0].upper() if words else ""
    second = words[1].upper() if len(words) > 1 else ""
    if first == "CREATE":
        return "CINDEX" if "INDEX" in (second, words[2].upper() if len(words) > 2 else "") else "CREATE"
    if first == "DROP":
        return "DINDEX" if second == "INDEX" else "ERASE"
    return {"ALTER": "ALTER", "RENAME": "RENAME", "TRUNCATE": "TRUNCATE"}.get(first, "QUERY")


def _default_ddl(e: Event) -> str:
    if e.op is Op.TRUNCATE and e.table:
        return f"TRUNCATE TABLE `{e.table}`"
    return ""


CODEC = CanalJsonCodec()
