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

import re
from dataclasses import replace
from decimal import Decimal
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence

from . import jsontext
from .base import Capabilities, Codec, EncodedMessage, group_by_message, message_key
from .event import Column, EncodeError, Event, Image, Op, Position
from .jsontext import JsonNumber
from .types import JDBC, JDBC_NAME, family

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
        elif not want or not same_json(orig, der):
            fixes.append([list(path), literal(orig)])
    return fixes


def same_json(a: Any, b: Any) -> bool:
    """``jsontext.normalise(a) == jsontext.normalise(b)`` without building the normalised copies (decode runs
    this for every metadata key of every message): numbers equal only to numbers with the same literal."""
    a_num, b_num = isinstance(a, JsonNumber), isinstance(b, JsonNumber)
    if a_num or b_num:
        return a_num and b_num and str.__eq__(a, b)
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for key, value in a.items():
            if key not in b or not same_json(value, b[key]):
                return False
        return True
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(b, (dict, list)):
        return False
    return a == b


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


_INT = re.compile(r"-?\d+\Z")


def int_field(value: Any) -> Optional[int]:
    """An integer metadata field written as a bare number or a string of digits."""
    if isinstance(value, str) and _INT.match(value):
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


_PLAIN_CELLS = {str, type(None)}
_COLUMNS_CACHE: dict[tuple, "_Declared"] = {}
_COLUMNS_CACHE_SIZE = 4096
# The key order of a derived (encoder-built) row message: derived-only keys are fixed in this order.
_DERIVED_KEYS = ("database", "table", "pkNames", "es", "ts", "id", "mysqlType", "sqlType", "type", "isDdl", "sql",
                 "data", "old")


def _canonical_int(value: Any) -> bool:
    """A bare JSON integer written the way ``str(int)`` writes it (so re-deriving gives the same literal)."""
    if not isinstance(value, JsonNumber):
        return False
    try:
        return str(int(value)) == value
    except ValueError:
        return False


def _data_fixes(msg: dict, event_ms: Optional[int], declared: "_Declared") -> list[list[Any]]:
    """``generic_fixes`` of a row message, computed key by key instead of building the message ``_build`` would
    write and diffing it. Each test below mirrors what ``_build`` derives for an event decoded from this very
    message; ``tests/codecs/test_canal_json_fast.py`` checks the result against ``generic_fixes``."""
    es_text = None if event_ms is None else str(event_ms)
    fixes: list[list[Any]] = []
    for key, value in msg.items():
        if key == "type" or key == "data" or key == "old":
            continue  # type: the DML type the op was read from; data/old: the rows themselves
        if key == "database" or key == "table":
            same = value is not None  # derived: the decoded name, or "" for null
        elif key == "es" or key == "ts":
            same = value is None if es_text is None else (isinstance(value, JsonNumber)
                                                          and str.__eq__(value, es_text))
        elif key == "id":
            same = isinstance(value, JsonNumber) and str.__eq__(value, "0")
        elif key == "pkNames":
            same = value is None or (type(value) is list and len(value) > 0)  # [] is derived as null
        elif key == "mysqlType":  # derived from the non-empty type names only
            same = isinstance(value, dict) and declared.mysql_named
        elif key == "sqlType":  # derived as bare integers in str(int) spelling
            same = isinstance(value, dict) and declared.sql_canonical
        elif key == "isDdl":
            same = value is False
        elif key == "sql":
            same = isinstance(value, str) and value == ""
        else:
            same = False  # a key the encoder does not write
        if not same:
            fixes.append([[key], literal(value)])
    if len(msg) < len(_DERIVED_KEYS) or not _DERIVED_SET.issubset(msg):
        fixes.extend([[key], None] for key in _DERIVED_KEYS if key not in msg and key not in ("data", "old"))
    return fixes


class _Declared(NamedTuple):
    """What a message's mysqlType/sqlType/row keys declare (cached per distinct declaration)."""

    columns: tuple[Column, ...]
    names: frozenset[str]
    mysql_named: bool  # every mysqlType value is a non-empty name
    sql_canonical: bool  # every sqlType value is a bare integer in str(int) spelling


_DERIVED_SET = frozenset(_DERIVED_KEYS)


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
        msg = self.json_object(raw, position)
        events = self._events(msg, position)
        if events[0].op.is_data:
            return events  # _row_events already attached the fixes (see _data_fixes)
        fixes = self.generic_fixes(msg, events)
        if fixes:
            events = [e.with_(vendor={**e.vendor, "fix": fixes}) for e in events]
        return events

    def generic_fixes(self, msg: dict, events: list[Event]) -> list[list[Any]]:
        """The lossless-re-encode fixes by definition: build the message the encoder would write and diff it.
        ``_data_fixes`` computes the same list for row messages without building anything (tests compare)."""
        derived = self._build(events)
        skip = {"data", "old"} if events[0].op.is_data else set()
        return derive_fix(msg, derived, fix_paths(msg, derived, skip))

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
        if pk is not None and not (type(pk) is list and all(is_text(p) for p in pk)):
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
        columns = self._columns(msg, [], position).columns
        return Event(op=op, position=position, ddl=sql, columns=columns,
                     vendor={"type": kind}, **common)

    def _row_events(self, msg: dict, op: Op, position: Position, common: dict) -> list[Event]:
        data = msg.get("data")
        if type(data) is not list or not data:
            raise self.error("data", position, f"{op.value} needs a non-empty list of rows")
        olds = msg.get("old")
        is_update = op is Op.UPDATE
        if is_update:
            if type(olds) is not list or len(olds) != len(data):
                raise self.error("old", position, f"UPDATE needs one old row per data row ({len(data)})")
        rows: list[tuple[dict, Image, Optional[Image]]] = []  # (row as received, cells, old cells)
        numbers: set[str] = set()  # columns with at least one value written as a bare JSON number
        for i, row in enumerate(data):
            cells = self._cells(row, "data[", position, i, numbers)
            old = self._cells(olds[i], "old[", position, i, numbers) if is_update else None
            rows.append((row, cells, old))
        declared = self._columns(msg, data, position, numbers)
        columns, known = declared.columns, declared.names
        fixes = _data_fixes(msg, common["event_time_ms"], declared)
        kind = msg["type"]
        pk = common["primary_key"]
        pk_warnings = [f"pkNames names unknown column {k!r}" for k in pk if k not in known]
        events = []
        for i, (row, cells, old) in enumerate(rows):
            if op is Op.INSERT:
                before, after = None, cells
            elif op is Op.DELETE:
                before, after = cells, None
            else:
                # Canal semantics: a column missing from `old` did not change, so its old value is the new one.
                before, after = {**cells, **old}, cells
            vendor: dict[str, Any] = {"type": kind}
            if old is not None:
                vendor["old_keys"] = list(old)
            warnings = pk_warnings + [f"old names column {k!r} that data does not have" for k in old or {}
                                      if k not in cells]
            if warnings:
                vendor["warnings"] = warnings
            if numbers:  # only a column flagged as bare can have a deviating (string) cell
                deviating = self._deviating(columns, row, olds[i] if old is not None else None)
                if deviating:
                    vendor["render"] = deviating
            if fixes:
                vendor["fix"] = fixes
            where = position if position.index == i else replace(position, index=i)
            events.append(Event(op=op, position=where, before=before, after=after,
                                columns=columns, vendor=vendor, **common))
        return events

    def _cells(self, row: Any, field: str, position: Position, index: int, numbers: set[str]) -> Image:
        if not isinstance(row, dict):
            raise self.error(f"{field}{index}]", replace(position, index=index), "expected an object of column values")
        if set(map(type, row.values())) <= _PLAIN_CELLS:  # Alibaba dialect: all strings or null
            return dict(row)
        cells: Image = {}
        for col, value in row.items():
            try:
                text, is_number = scalar_text(value)
            except TypeError as exc:
                raise self.error(f"{field}{index}].{col}", replace(position, index=index),
                                 f"a column value must be a string, number or null, got {exc}") from None
            cells[col] = text
            if is_number:
                numbers.add(col)
        return cells

    def _columns(self, msg: dict, data: list, position: Position, numbers: Optional[set[str]] = None
                 ) -> _Declared:
        """The declared columns (and their names). Every message of a table repeats the same declarations, so
        the result is cached by everything it depends on (values *and* their JSON types, so a cached success
        never hides a malformed declaration)."""
        mysql_types = msg.get("mysqlType")
        sql_types = msg.get("sqlType")
        if mysql_types is not None and not isinstance(mysql_types, dict):
            raise self.error("mysqlType", position, "expected an object of column -> type name")
        if sql_types is not None and not isinstance(sql_types, dict):
            raise self.error("sqlType", position, "expected an object of column -> java.sql.Types number")
        mysql_types, sql_types = mysql_types or {}, sql_types or {}
        data_names = tuple(data[0]) if len(data) == 1 else tuple(dict.fromkeys(k for row in data for k in row))
        numbers = frozenset(numbers or ())
        key = (tuple(mysql_types.items()), tuple(map(type, mysql_types.values())), tuple(sql_types.items()),
               tuple(map(type, sql_types.values())), data_names, numbers)
        try:
            cached = _COLUMNS_CACHE.get(key)
        except TypeError:  # an unhashable (object/list) declaration: malformed, the slow path names it
            key, cached = None, None
        if cached is not None:
            return cached
        names = dict.fromkeys([*mysql_types, *sql_types, *data_names])
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
            columns.append(Column(name, type_name, jdbc_type, name in numbers))
        result = _Declared(tuple(columns), frozenset(names), all(mysql_types.values()),
                           all(_canonical_int(v) for v in sql_types.values()))
        if key is not None:
            if len(_COLUMNS_CACHE) >= _COLUMNS_CACHE_SIZE:
                _COLUMNS_CACHE.clear()
            _COLUMNS_CACHE[key] = result
        return result

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
