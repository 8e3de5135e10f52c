"""Canal FlatMessage JSON (Alibaba Canal, and the Canal serialisation of OceanBase OMS / CloudCanal).

One message holds one statement's rows: ``data`` is a list (one canonical Event per row, ``Position.index`` = row
index), ``old`` holds for an UPDATE only the *changed* columns with their old values, DELETE rows are in ``data``.
``id`` is the batch id shared by every row of one batch, not an ordering field, so the sequence is ``(es,)``.

Two dialects exist and are reproduced per column: Alibaba Canal writes every value as a JSON string, OMS writes
numbers bare. ``Column.number`` records which, per column, as decoded.

Lossless re-encode: the encoder *derives* every message field from the canonical events; at decode time the
message is compared with that derivation and only the metadata keys that differ (a null ``mysqlType``, a
``tableChanges`` block, ``id``, ``ts``...) are kept in ``event.vendor["fix"]`` and re-applied on encode. The
recipe runs in ``Codec.decode``/``Codec.encode`` (helpers in ``codecs/shared/json_fix.py``); Canal supplies its
hooks and computes a row message's fixes while reading it (``_data_fixes``).
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import orjson

from ..base import Capabilities, Codec, flat_database
from ..shared.declared_rows import DeclaredRows
from ..shared.required import ARRAY, STRING, Required, need, same_needs
from ..event import Column, DecodeError, EncodeError, Event, Image, Op, Position
from ..jsontext import MAX_DEPTH, JsonNumber
from ..shared.plain_rows import INT64, column_dicts, columns_fit, data_row, name_fits
from ..shared.json_fix import fix_paths, literal
from ..shared.value_text import int_field, is_text, render, scalar_text
from ..types import FAMILY_JDBC, JDBC, family, jdbc_type_name
from ..shared.memo import remember

# --------------------------------------------------------------------------------------------------------------

FORMAT = "canal-json"
# INIT: a full-sync row, as Canal-based full-sync tools write it (Flink's canal-json reads it as an insert).
DML_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "INIT": Op.SNAPSHOT}
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


def _data_fixes(msg: dict, event_ms: Optional[int], declared: "_Declared", ints: bool = False
                ) -> Optional[list[list[Any]]]:
    """``generic_fixes`` of a row message, computed key by key instead of building the message ``_build`` would
    write and diffing it. Each test below mirrors what ``_build`` derives for an event decoded from this very
    message; ``tests/codecs/test_canal_oms_fast_paths.py`` checks the result against ``generic_fixes``.
    ``ints``: the message as orjson read it (``plain_rows``), where an integer stands for the ``JsonNumber`` of
    its canonical literal; then None when a value to keep holds a float, whose literal orjson lost."""
    es_text = None if event_ms is None else str(event_ms)
    fixes: list[list[Any]] = []
    for key, value in msg.items():
        if key == "type" or key == "data" or key == "old":
            continue  # type: the DML type the op was read from; data/old: the rows themselves
        if key == "database" or key == "table":
            same = value is not None  # derived: the decoded name, or "" for null
        elif key == "es" or key == "ts":
            same = value is None if es_text is None else (
                type(value) is int and value == event_ms if ints
                else isinstance(value, JsonNumber) and str.__eq__(value, es_text))
        elif key == "id":
            same = (type(value) is int and value == 0 if ints
                    else isinstance(value, JsonNumber) and str.__eq__(value, "0"))
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
            if ints and not _no_float(value):
                return None
            fixes.append([[key], literal(value)])
    if len(msg) < len(_DERIVED_KEYS) or not _DERIVED_SET.issubset(msg):
        fixes.extend([[key], None] for key in _DERIVED_KEYS if key not in msg and key not in ("data", "old"))
    return fixes


_PLAIN_OPS = DML_TYPES
_I64_LO, _I64_HI = INT64
# A bare ``-0`` (orjson reads it as 0, whose spelling differs); also found inside strings, which only sends the
# message to the exact path.
_MINUS_ZERO = re.compile(rb"-0[^.0-9eE]")
_PLAIN_CACHE: dict[tuple, tuple] = {}


def _plain(row: dict) -> bool:
    """Every cell a JSON string or null (orjson gives exactly ``str``; a number would be int or float)."""
    for v in row.values():
        if v is not None and type(v) is not str:
            return False
    return True


def _no_float(value: Any) -> bool:
    """No float anywhere in an orjson value (its literal is lost; ints and the rest keep their JSON text)."""
    if type(value) is float:
        return False
    if type(value) is dict:
        return all(_no_float(v) for v in value.values())
    if type(value) is list:
        return all(_no_float(v) for v in value)
    return True


class _Declared(NamedTuple):
    """What a message's mysqlType/sqlType/row keys declare (cached per distinct declaration)."""

    columns: tuple[Column, ...]
    names: frozenset[str]
    mysql_named: bool  # every mysqlType value is a non-empty name
    sql_canonical: bool  # every sqlType value is a bare integer in str(int) spelling
    byte_columns: tuple[tuple[str, int], ...] = ()  # binary/blob (width 0) and bit(n) (width in bytes) columns
    stamp_columns: tuple[str, ...] = ()  # TIMESTAMP columns (Alibaba Canal writes them as wall-clock text)


_DERIVED_SET = frozenset(_DERIVED_KEYS)


def _canal_kind(msg: dict) -> Optional[str]:
    kind, is_ddl = msg.get("type"), msg.get("isDdl")
    if is_ddl is True or (is_ddl is None and kind in DDL_TYPES):
        return "DDL"
    return kind if kind in DML_TYPES else None


_ROW_NEEDS = (need("table", STRING, nonempty=True), need("database", STRING, nonempty=True),
              need("data", ARRAY, nonempty=True))
# What every FlatMessage dialect carries; an UPDATE its old values. (``es`` is not required: hand-written and
# converted Canal lines without it exist, and an event without time is legitimate: it sorts by position.)
REQUIRED = Required(_canal_kind, {
    **same_needs(("INSERT", "INIT", "DELETE"), *_ROW_NEEDS),
    "UPDATE": _ROW_NEEDS + (need("old", ARRAY, nonempty=True),),
    "DDL": (need("sql", STRING),),
})


class CanalJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Alibaba Canal / OceanBase OMS / CloudCanal"
    description = "Canal FlatMessage JSON: data[] rows, old[] changed columns, mysqlType/sqlType, es/ts"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        typed_values=True,
        before_image="changed",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE}),
        losses=(("timestamp", "wall-clock"),),
        packs_rows=True,
        notes="UPDATE carries old values of changed columns only (unchanged columns equal the new values); "
              "Canal's full sync writes INSERT (type INIT, of Canal-based full-sync tools, decodes as SNAPSHOT "
              "and re-encodes as INIT; a foreign SNAPSHOT is written as INSERT); column types by mysqlType "
              "(TEXT is text whatever sqlType says); no heartbeat or transaction markers; id is a batch id, "
              "ordering is es (ms).",
    )

    # The JVM's declared decode of the row messages (shared.declared_rows), in the order ``_build`` writes; what it
    # declines (DDL, warnings, a column written both as a number and as text, floats...) ``events`` decodes.
    # Alibaba's messages (those with the batch ``id``) convert byte, BIT, geometry and TIMESTAMP text as
    # ``_bytes_in`` and ``_stamps_in`` do, families by ``family(type name, code)``.
    jvm_declaration = DeclaredRows(
        op=("type", {kind: op.value for kind, op in DML_TYPES.items()}),
        images=(("rows", "data"), ("row_changes", "old")),
        reads={"database": ("database", "text"), "table": ("table", "text"), "primary_key": ("pkNames", "list"),
               "millis": ("es", "integer"), "sequence": ("es", "integer"), "type_names": ("mysqlType", "object"),
               "type_codes": ("sqlType", "object")},
        writes={"database": "database", "table": "table", "pkNames": "key_list_or_null", "es": "millis_number_or_null",
                "ts": "millis_number_or_null", "id": "=0", "mysqlType": "type_names", "sqlType": "type_codes",
                "type": "op", "isDdl": "=false", "sql": '=""'},
        requires={"isDdl": ("false",)}, delete_main="rows", null_cells_declare=True, key_declared=True,
        op_in_vendor="type", conversions_when="id", convert_numbers=True, family_by_name_then_code=True,
        value_conversions={"binary": "latin1_base64", "bit": "latin1_unsigned", "geometry": "latin1_wkb",
                           "timestamp": "local_seconds+00:00"})

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; Canal's differences: row messages get their fixes key by key while they
    # are read (``_data_fixes``, no message built), and the row lists are the events themselves, never compared.

    def fixes(self, msg: dict, events: list[Event]) -> list[list[Any]]:
        if events[0].op.is_data:
            return []  # _row_events already attached the fixes (see _data_fixes)
        return super().fixes(msg, events)

    def generic_fixes(self, msg: dict, events: list[Event]) -> list[list[Any]]:
        """The lossless-re-encode fixes by definition (the base recipe, also for row messages), which
        ``_data_fixes`` must equal for row messages (tests compare)."""
        return super().fixes(msg, events)

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        return fix_paths(msg, derived, {"data", "old"} if events[0].op.is_data else set())

    def events(self, msg: dict, position: Position) -> list[Event]:
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
        # Alibaba Canal (every message has the batch ``id``) writes binary/blob/bit values as ISO-8859-1 text,
        # one character per byte; OMS's Canal dialect (no ``id``) writes binary as base64 already.
        alibaba = "id" in msg  # OMS's Canal dialect has no batch id; it writes base64 and epoch seconds
        latin = declared.byte_columns if alibaba else ()
        stamps = declared.stamp_columns if alibaba else ()
        srids: list[dict[str, int]] = [{} for _ in rows]
        if latin or stamps:
            for i, (row, cells, old) in enumerate(rows):
                where = replace(position, index=i)
                srids[i] = _bytes_in(cells, latin, self, f"data[{i}]", where)
                _stamps_in(cells, stamps, self, f"data[{i}]", where)
                if old is not None:
                    srids[i].update(_bytes_in(old, latin, self, f"old[{i}]", where))
                    _stamps_in(old, stamps, self, f"old[{i}]", where)
        fixes = _data_fixes(msg, common["event_time_ms"], declared)
        kind = msg["type"]
        pk = common["primary_key"]
        pk_warnings = [f"pkNames names unknown column {k!r}" for k in pk if k not in known]
        events = []
        for i, (row, cells, old) in enumerate(rows):
            if op is Op.INSERT or op is Op.SNAPSHOT:
                before, after = None, cells
            elif op is Op.DELETE:
                before, after = cells, None
            else:
                # Canal semantics: a column missing from `old` did not change, so its old value is the new one.
                before, after = {**cells, **old}, cells
            vendor: dict[str, Any] = {"type": kind}
            if srids[i]:
                vendor["srid"] = srids[i]
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
                           all(_canonical_int(v) for v in sql_types.values()), byte_columns(columns),
                           tuple(c.name for c in columns if family(c.type_name, c.jdbc_type) == "timestamp"))
        if key is not None:
            remember(_COLUMNS_CACHE, key, result, limit=_COLUMNS_CACHE_SIZE)
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

    # ------------------------------------------------------------------------------------- decode, fast path

    def plain_rows(self, raw: bytes, at: tuple) -> Optional[list[tuple]]:
        """The rows of a plain row message (``Codec.plain_rows``): INSERT/UPDATE/DELETE whose cells are all JSON
        strings or null (Alibaba Canal's dialect), numbers only as integers in es/ts/id/sqlType. Parsed by orjson,
        which reads an integer literal exactly but a decimal point or exponent as a float and ``-0`` as ``0``:
        a message with any of those, or with any other shape, takes ``decode`` (``jsontext``, every literal kept).
        Each test mirrors ``events``/``_row_events``/``_data_fixes`` on the types orjson gives."""
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None  # trailing commas, NaN, lone surrogates, ...: decode repairs or names them
        if type(msg) is not dict or _MINUS_ZERO.search(raw) or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
            return None  # -0, or nesting jsontext refuses (orjson reads deeper than it writes)
        if not REQUIRED.satisfied(msg):
            return None  # decode names the missing field
        kind = msg.get("type")
        op = _PLAIN_OPS.get(kind) if type(kind) is str else None
        is_ddl = msg.get("isDdl")
        if op is None or (is_ddl is not False and is_ddl is not None):
            return None
        database, table, es, pk = msg.get("database"), msg.get("table"), msg.get("es"), msg.get("pkNames")
        if not (name_fits(database) and name_fits(table) and type(es) is int and _I64_LO <= es <= _I64_HI):
            return None
        if pk is None:
            pk = ()
        elif type(pk) is list and all(type(k) is str for k in pk):
            pk = tuple(pk)
        else:
            return None
        data = msg.get("data")
        if type(data) is not list or not data or not all(type(r) is dict and _plain(r) for r in data):
            return None
        olds = msg.get("old")
        is_update = op is Op.UPDATE
        if is_update and not (type(olds) is list and len(olds) == len(data)
                              and all(type(r) is dict and _plain(r) for r in olds)):
            return None
        declared = self._plain_declared(msg, data)
        if declared is None:
            return None
        declared, dicts, known = declared
        alibaba = "id" in msg
        latin = declared.byte_columns if alibaba else ()
        stamps = declared.stamp_columns if alibaba else ()
        srids: list[dict[str, int]] = []
        if latin or stamps:
            try:
                for i, row in enumerate(data):
                    srids.append(_bytes_in(row, latin, self, f"data[{i}]", None))
                    _stamps_in(row, stamps, self, f"data[{i}]", None)
                    if is_update:
                        srids[-1].update(_bytes_in(olds[i], latin, self, f"old[{i}]", None))
                        _stamps_in(olds[i], stamps, self, f"old[{i}]", None)
            except DecodeError:
                return None
        fixes = _data_fixes(msg, es, declared, ints=True)
        if fixes is None:
            return None
        pk_warnings = [f"pkNames names unknown column {k!r}" for k in pk if k not in known]
        sequence = (Decimal(es),)
        rows = []
        for i, cells in enumerate(data):
            vendor: dict[str, Any] = {"type": kind}
            if srids and srids[i]:
                vendor["srid"] = srids[i]
            if is_update:
                old = olds[i]
                before = {**cells, **old}
                vendor["old_keys"] = list(old)
                warnings = pk_warnings + [f"old names column {k!r} that data does not have" for k in old
                                          if k not in cells]
            else:
                before, warnings = None, pk_warnings
            if warnings:
                vendor["warnings"] = warnings
            if fixes:
                vendor["fix"] = fixes
            if op is Op.DELETE:
                before, after = cells, None
            else:
                after = cells
            rows.append(data_row(FORMAT, op.value, database, table, before, after, dicts, pk, es, sequence, at, i,
                                 orjson.dumps(vendor).decode(), i == 0))
        return rows

    def _plain_declared(self, msg: dict, data: list) -> Optional[tuple["_Declared", list[dict], frozenset]]:
        """``_columns`` of a plain message (sqlType integers as orjson reads them), with the ``columns`` field's
        dicts, cached by the declaration; None for a declaration ``decode`` must look at (and name)."""
        mysql_types, sql_types = msg.get("mysqlType"), msg.get("sqlType")
        if mysql_types is not None and type(mysql_types) is not dict or sql_types is not None and type(
                sql_types) is not dict:
            return None
        mysql_items = tuple(mysql_types.items()) if mysql_types else ()
        sql_items = tuple(sql_types.items()) if sql_types else ()
        for _, v in mysql_items:
            if v is not None and type(v) is not str:
                return None
        for _, v in sql_items:
            if type(v) is not int:  # bool is an int subclass, but True == 1 must not hit a cached 1
                return None
        data_names = tuple(data[0]) if len(data) == 1 else tuple(dict.fromkeys(k for row in data for k in row))
        key = (mysql_items, sql_items, data_names)
        hit = _PLAIN_CACHE.get(key)
        if hit is not None:
            return hit
        exact = {"mysqlType": mysql_types, "sqlType": {k: JsonNumber(str(v)) for k, v in sql_items}}
        try:
            declared = self._columns(exact, data, None)
        except DecodeError:
            return None
        if not columns_fit(declared.columns):
            return None
        hit = remember(_PLAIN_CACHE, key, (declared, column_dicts(declared.columns), declared.names),
                       limit=_COLUMNS_CACHE_SIZE)
        return hit

    # ---------------------------------------------------------------------------------------------- encode

    # ``Codec.encode`` runs the recipe (packs_rows: rows of one source message go back into one message).

    def check_encodable(self, event: Event) -> None:
        if event.op not in self.capabilities.ops and event.op is not Op.SNAPSHOT:
            raise EncodeError(FORMAT, "type", f"Canal JSON cannot carry a {event.op.value} event")

    def build(self, events: list[Event]) -> dict:
        return self._build(events)

    def message_op(self, msg: dict, first: Event) -> str:
        return msg.get("type") if isinstance(msg.get("type"), str) else first.op.value

    def _build(self, group: Sequence[Event]) -> dict[str, Any]:
        first = group[0]
        own = first.format == FORMAT
        columns = _merge_columns(group)
        msg: dict[str, Any] = {
            "database": flat_database(first) or "",
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
        kind = first.op.value
        if first.op is Op.SNAPSHOT:  # Canal's own full sync writes INSERT; an own INIT row stays INIT
            kind = "INIT" if own and first.vendor.get("type") == "INIT" else "INSERT"
        alibaba = not (own and [["id"], None] in first.vendor.get("fix", ()))  # own OMS dialect: as received
        latin = byte_columns(columns) if alibaba else ()
        data, old = [], []
        for e in group:
            render_fix = {tuple(x) for x in e.vendor.get("render", ())} if own else set()
            row = e.before if e.op is Op.DELETE else e.after
            srids = e.vendor.get("srid", {}) if own else {}
            data.append(_render_image(_canal_cells(row or {}, latin, srids, columns, alibaba), flags, "data",
                                      render_fix))
            if e.op is Op.UPDATE:
                old.append(_render_image(_canal_cells(_old_cells(e, own), latin, srids, columns, alibaba), flags,
                                         "old", render_fix))
        msg.update(type=kind, isDdl=False, sql="", data=data, old=old if kind == "UPDATE" else None)
        return msg


_GEOMETRY = re.compile(r"\s*(geometry|point|linestring|polygon|multipoint|multilinestring|multipolygon|"
                       r"geometrycollection)\b", re.I)


def byte_columns(columns: Sequence[Column]) -> tuple[tuple[str, int], ...]:
    """Columns whose Canal value is ISO-8859-1 text of raw bytes: binary/varbinary/*blob (width 0: as many bytes
    as characters), bit(n) (width ceil(n/8) bytes, big-endian, as the binlog stores it) and geometry (width -1:
    MySQL's internal value, a 4-byte little-endian SRID then the WKB)."""
    out = []
    for c in columns:
        fam = family(c.type_name, c.jdbc_type)
        if _GEOMETRY.match(c.type_name or ""):
            out.append((c.name, -1))
        elif fam == "binary":
            out.append((c.name, 0))
        elif fam == "bit":
            m = re.search(r"\(\s*(\d+)\s*\)", c.type_name or "")
            out.append((c.name, (int(m.group(1)) + 7) // 8 if m else 1))
    return tuple(out)


def _bytes_in(cells: Image, byte_cols: Sequence[tuple[str, int]], codec: Codec, field: str,
              position: Position) -> dict[str, int]:
    """ISO-8859-1 text -> canonical text in place: base64 of the bytes (binary), the unsigned integer (bit), the
    WKB (geometry). Returns the non-zero geometry SRIDs."""
    srids: dict[str, int] = {}
    for name, width in byte_cols:
        text = cells.get(name)
        if text is None:
            continue
        try:
            data = text.encode("latin-1")
        except UnicodeEncodeError as exc:
            raise codec.error(f"{field}.{name}", position,
                              f"binary column value is not ISO-8859-1 text (one character per byte): "
                              f"character {text[exc.start]!r} at {exc.start}") from None
        if width < 0:  # geometry: canonical is the WKB; a non-zero SRID is kept for re-encoding
            if len(data) < 9 or data[4] not in (0, 1):  # not SRID + WKB (byte order mark 0/1): text (WKT)
                if _BASE64.match(text):  # canonical base64 means WKB: this text would come back as other bytes
                    raise codec.error(f"{field}.{name}", position,
                                      f"geometry value {text[:40]!r} is neither MySQL's SRID + WKB bytes nor WKT")
                continue
            srid = int.from_bytes(data[:4], "little")
            if srid:
                srids[name] = srid
            data = data[4:]
        if 0 < width and len(data) > _BIT_BYTES_MAX:
            raise codec.error(f"{field}.{name}", position,
                              f"bit value of {len(data)} bytes: MySQL's BIT holds at most 64 bits")
        cells[name] = str(int.from_bytes(data, "big")) if width > 0 else base64.b64encode(data).decode()
    return srids


def _bytes_out(image: Image, byte_cols: Sequence[tuple[str, int]], srids: Mapping[str, int]) -> Image:
    """Canonical text -> Canal's ISO-8859-1 text of the bytes (the inverse of ``_bytes_in``)."""
    if not byte_cols or not image:
        return image
    out = dict(image)
    for name, width in byte_cols:
        text = out.get(name)
        if text is None:
            continue
        try:
            if width > 0:
                n = int(text)
                data = n.to_bytes(max(width, (n.bit_length() + 7) // 8), "big")
                if len(data) > _BIT_BYTES_MAX:  # what the decoder refuses: MySQL's BIT holds at most 64 bits
                    raise ValueError(f"{len(data)} bytes, MySQL's BIT holds at most 64 bits")
            elif width < 0 and not _BASE64.match(text):
                text.encode("latin-1")  # geometry as text (WKT) stays text: one character a byte, as decode reads it
                continue
            else:
                data = base64.b64decode(text, validate=True)
                if width < 0:
                    data = int(srids.get(name, 0)).to_bytes(4, "little") + data
        except UnicodeEncodeError:
            raise EncodeError(FORMAT, name, f"geometry text {text[:40]!r} is not ISO-8859-1 (one character a "
                                            "byte, as Canal writes binary columns)") from None
        except (ValueError, OverflowError) as exc:
            raise EncodeError(FORMAT, name, f"{text!r} is not {'a bit value' if width else 'base64'}: {exc}") from None
        out[name] = data.decode("latin-1")
    return out


_BIT_BYTES_MAX = 8  # MySQL's BIT(M) has M <= 64
_BASE64 = re.compile(r"([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
_EPOCH_TEXT = re.compile(r"-?\d+(\.\d{1,9})?\Z")


def _canal_cells(image: Image, latin: Sequence[tuple[str, int]], srids: Mapping[str, int],
                 columns: Sequence[Column], alibaba: bool) -> Image:
    """Canonical text -> the text Alibaba Canal writes: raw bytes as ISO-8859-1, TIMESTAMP instants as wall-clock
    text (Canal uses the MySQL server's zone; the canonical instant is written in UTC, see ``_stamps_in``)."""
    out = _bytes_out(image, latin, srids)
    if not alibaba or not out:
        return out
    for c in columns:
        text = out.get(c.name)
        if text is not None and family(c.type_name, c.jdbc_type) == "timestamp" and _EPOCH_TEXT.match(text):
            out = dict(out) if out is image else out
            try:
                out[c.name] = _wall_clock_utc(text)
            except (OverflowError, ValueError):  # beyond year 9999: an encode dead letter, not a crashed task
                raise EncodeError(FORMAT, c.name, f"timestamp {text[:40]} is beyond the years Canal's "
                                                  "wall-clock text can write") from None
    return out


_WALL_CLOCK = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\Z")


def _stamps_in(cells: Image, stamps: Sequence[str], codec: Codec, field: str, position: Optional[Position]) -> None:
    """Alibaba Canal writes a TIMESTAMP as wall-clock text in the MySQL server's zone, without the zone. It is
    read as UTC (the declared loss ``timestamp: wall-clock``): exact for a UTC server, shifted by the server's
    offset otherwise. Text that is not a valid wall-clock time (MySQL's zero date) stays as written, unless it
    reads as the canonical epoch seconds: the encoder would write that as another instant's wall clock."""
    for name in stamps:
        text = cells.get(name)
        m = _WALL_CLOCK.match(text) if text is not None else None
        if m is None:
            if text is not None and _EPOCH_TEXT.match(text):
                raise codec.error(f"{field}.{name}", position,
                                  f"timestamp value {text[:40]!r} is not Canal's wall-clock text")
            continue
        y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
        try:
            seconds = (datetime(y, mo, d) - datetime(1970, 1, 1)).days * 86400 + h * 3600 + mi * 60 + sec
        except ValueError:
            continue
        frac = m.group(7)
        # Decimal keeps the written fraction digits ("1.000000"), so re-encoding gives the same text
        cells[name] = format(Decimal(seconds) + Decimal(f"0.{frac}"), "f") if frac else str(seconds)


def _wall_clock_utc(epoch_text: str) -> str:
    whole, _, frac = epoch_text.partition(".")
    seconds = int(whole)
    if epoch_text.startswith("-") and frac:  # -1.25 is 1.25 s before the epoch: floor, complement the fraction
        seconds -= 1
        frac = str(10 ** len(frac) - int(frac)).rjust(len(frac), "0")
    stamp = datetime(1970, 1, 1) + timedelta(seconds=seconds)
    return f"{stamp.year:04d}-{stamp:%m-%d %H:%M:%S}" + (f".{frac}" if frac else "")


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
    return FAMILY_JDBC.get(family(c.type_name), JDBC["VARCHAR"])


def _type_name(c: Column) -> str:
    # JDBC's TIMESTAMP (93) is MySQL's DATETIME and TIMESTAMP alike, and a column of no other name is a DATETIME
    # (``types.family``): named "timestamp", its text was read back as an instant's wall clock (or refused)
    return "datetime" if family(None, c.jdbc_type) == "datetime" else jdbc_type_name(c.jdbc_type)


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
