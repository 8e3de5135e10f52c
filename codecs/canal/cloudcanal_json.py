"""CloudCanal JSON, CloudCanal's default MQ message format.

One message holds the rows of one statement: ``data`` is a list of row images (one canonical Event per row,
``Position.index`` = row index), ``before`` the matching before images of an UPDATE (full rows, not only the
changed columns as in Canal). A DELETE's rows are in ``before``; some producers put them in ``data`` (Canal
habit), both are accepted and the choice is kept. ``dbValType``/``jdbcType`` declare every column, ``pks`` the
key, ``execTs`` is the source execution time (ms) and the only ordering field, so ``sequence = (execTs,)``
(``bid`` is a batch id, ``sendTs`` a send time: neither orders rows). DDL messages (``isDdl: true``) carry the
statement in ``sql`` and the table's metadata in ``tableChanges``; ``entryType`` TRANSACTIONBEGIN /
TRANSACTIONEND / HEARTBEAT are the control records.

Values: strings stay text; bare numbers keep their literal (``Column.number``); JSON booleans become
"true"/"false" and nested JSON (a JSON column written as an object) its compact JSON text - both remembered per
cell in ``vendor["render"]``. For MySQL ``schema`` repeats ``db``; then ``Event.schema`` is None so the table is
``db.table`` as everywhere else.

Lossless re-encode uses the shared derive/fix recipe (``Codec.decode``/``Codec.encode``): the encoder derives the
message from the canonical events and ``vendor["fix"]`` holds only the keys where the received message differs
(``bid``, ``sendTs``, ``tableChanges``, unknown keys...).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any, Optional, Sequence

from ..base import Capabilities, Codec
from ..shared.declared_rows import DeclaredRows
from ..shared.json_cells import deviations, read_image, render_image
from ..shared.json_fix import fix_paths, same_json
from ..shared.memo import remember
from ..shared.required import ARRAY, INTEGER, NULL, STRING, Required, need
from ..shared.value_text import int_field
from ..event import Column, EncodeError, Event, Op, Position
from ..jsontext import JsonNumber
from ..types import FAMILY_JDBC, JDBC, family, jdbc_type_name

FORMAT = "cloudcanal-json"
DML_ACTIONS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
CONTROL_ENTRIES = {"TRANSACTIONBEGIN": Op.BEGIN, "TRANSACTIONEND": Op.COMMIT, "HEARTBEAT": Op.HEARTBEAT}
ENTRY_FOR_OP = {op: entry for entry, op in CONTROL_ENTRIES.items()}
DECLARATIONS = ("dbValType", "jdbcType")
_ABSENT = ("absent",)  # a declaration key's value for a message without that key (null is another value)
# Every message of a table repeats its declaration: the columns are read once per distinct declaration (and number
# flags), and whether the declaration is exactly what the encoder derives from them is compared once per columns.
_DECLARED: dict[tuple, tuple[Column, ...]] = {}
_NUMBERED: dict[tuple, tuple[Column, ...]] = {}
_SELF_DERIVED: dict[int, tuple[tuple[Column, ...], bool]] = {}


def _cloudcanal_kind(msg: dict) -> Optional[str]:
    if msg.get("entryType") in CONTROL_ENTRIES:
        return None
    if msg.get("isDdl") is True:
        return "DDL"
    action = msg.get("action")
    return action if action in DML_ACTIONS else None


# execTs may be null (a full-sync row of a source without time), never absent.
_ROW_NEEDS = (need("table", STRING, nonempty=True), need("db", STRING, nonempty=True),
              need("execTs", INTEGER, NULL))
REQUIRED = Required(_cloudcanal_kind, {
    "INSERT": _ROW_NEEDS + (need("data", ARRAY, nonempty=True),),
    "UPDATE": _ROW_NEEDS + (need("data", ARRAY, nonempty=True), need("before", ARRAY, nonempty=True)),
    "DELETE": _ROW_NEEDS,  # its rows are in data or in before (producers differ)
    "DDL": (need("sql", STRING), need("execTs", INTEGER, NULL)),
})


class CloudCanalJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "ClouGence CloudCanal"
    description = "CloudCanal JSON: action, data[]/before[] full rows, dbValType/jdbcType, pks, execTs, tableChanges"
    capabilities = Capabilities(
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.BEGIN, Op.COMMIT,
                       Op.HEARTBEAT}),
        transactions=False,
        packs_rows=True,
        notes="No full-sync marker (SNAPSHOT is written as INSERT); ordering is execTs (ms) only, rows of one "
              "millisecond are ordered by archive position; no transaction id. Foreign events: int/float "
              "families written as bare numbers, everything else as strings.",
    )

    # The JVM's declared decode of the row messages (shared.declared_rows), in the order ``_build`` writes; what it
    # declines (DDL, control entries, a schema level, cells written as booleans or JSON...) ``events`` decodes.
    jvm_declaration = DeclaredRows(
        op=("action", {action: op.value for action, op in DML_ACTIONS.items()}),
        images=(("rows", "data"), ("row_befores", "before")),
        reads={"database": ("db", "text"), "schema": ("schema", "text"), "table": ("table", "text"),
               "primary_key": ("pks", "list"), "millis": ("execTs", "integer"), "sequence": ("execTs", "integer"),
               "type_names": ("dbValType", "object"), "type_codes": ("jdbcType", "object")},
        writes={"bid": "=0", "db": "database", "schema": "database", "table": "table", "dbValType": "type_names",
                "jdbcType": "type_codes", "pks": "key_list_or_empty", "execTs": "millis_number_or_null",
                "sendTs": "millis_number_or_null", "entryType": '="ROWDATA"', "before": "=[]", "data": "=[]",
                "action": "op", "isDdl": "=false", "sql": '=""'},
        requires={"isDdl": ("false",), "entryType": ('"ROWDATA"',)}, delete_in_vendor="delete_in")

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; CloudCanal supplies its events, its derived message and the paths.

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        # Row lists are the events themselves; only an empty list may need a fix (null or absent instead of []).
        skip = {k for k in ("data", "before") if derived.get(k)}
        if _self_derived(msg, derived, events[0].columns):
            skip.update(DECLARATIONS)  # nothing to fix there
        return fix_paths(msg, derived, skip)

    def derive(self, events: list[Event]) -> dict:
        # Row lists are not compared when they hold rows (``fix_paths``): placeholders instead of rendered rows.
        return self._build(events, rows=False)

    def events(self, msg: dict, position: Position) -> list[Event]:
        action = msg.get("action")
        if not isinstance(action, str):
            raise self.error("action", position, f"expected a string, got {action!r}")
        is_ddl = msg.get("isDdl")
        if is_ddl is not None and not isinstance(is_ddl, bool):
            raise self.error("isDdl", position, f"expected true/false, got {is_ddl!r}")
        entry = msg.get("entryType")
        if entry is not None and not isinstance(entry, str):
            raise self.error("entryType", position, f"expected a string, got {entry!r}")
        database = self._text(msg, "db", position)
        schema = self._text(msg, "schema", position)
        table = self._text(msg, "table", position)
        exec_ts = msg.get("execTs")
        event_ms = int_field(exec_ts)
        if exec_ts is not None and event_ms is None:
            raise self.error("execTs", position, f"expected epoch milliseconds, got {exec_ts!r}")
        pks = msg.get("pks")
        if pks is not None and not (isinstance(pks, list) and all(isinstance(p, str) for p in pks)):
            raise self.error("pks", position, "expected a list of column names")
        common = dict(
            format=FORMAT, database=database, table=table or None,
            # MySQL sources repeat the database as schema; only a real schema level (PostgreSQL...) is kept.
            schema=schema if schema and schema != database else None,
            primary_key=tuple(pks or ()), event_time_ms=event_ms,
            sequence=(Decimal(event_ms),) if event_ms is not None else (),
        )
        key, columns = self._columns(msg, position)
        if entry in CONTROL_ENTRIES:
            return [Event(op=CONTROL_ENTRIES[entry], position=position, columns=columns,
                          vendor={"action": action}, **common)]
        if is_ddl:
            sql = msg.get("sql")
            if sql is not None and not isinstance(sql, str):
                raise self.error("sql", position, "expected the DDL statement as a string")
            op = Op.TRUNCATE if action.upper() == "TRUNCATE" else Op.DDL
            return [Event(op=op, position=position, ddl=sql, columns=columns, vendor={"action": action},
                          **common)]
        op = DML_ACTIONS.get(action)
        if op is None:
            raise self.error("action", position, f"unknown DML action {action!r} (isDdl is false)")
        return self._row_events(msg, op, position, key, columns, common)

    def _text(self, msg: dict, key: str, position: Position) -> Optional[str]:
        value = msg.get(key)
        if value is not None and not isinstance(value, str):
            raise self.error(key, position, f"expected a string, got {value!r}")
        return value

    def _rows(self, msg: dict, key: str, position: Position) -> list:
        rows = msg.get(key)
        if rows is None:
            return []
        if not isinstance(rows, list):
            raise self.error(key, position, "expected a list of row objects")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):  # a null in the list is not an absent image: there is no such row
                raise self.error(f"{key}[{i}]", replace(position, index=i),
                                 f"expected a row object, got {'null' if row is None else type(row).__name__}")
        return rows

    def _row_events(self, msg: dict, op: Op, position: Position, key: Optional[tuple],
                    columns: tuple[Column, ...], common: dict) -> list[Event]:
        data, befores = self._rows(msg, "data", position), self._rows(msg, "before", position)
        delete_in = None
        if op is Op.INSERT:
            if befores:
                raise self.error("before", position, "an INSERT carries no before image")
            pairs = [(None, row) for row in data]
        elif op is Op.UPDATE:
            if befores and len(befores) != len(data):
                raise self.error("before", position,
                                 f"UPDATE has {len(befores)} before rows for {len(data)} data rows")
            pairs = [(befores[i] if befores else None, row) for i, row in enumerate(data)]
        else:
            if data and befores:
                raise self.error("data", position, "a DELETE has rows in both data and before: ambiguous")
            delete_in = "data" if data else None
            pairs = [(row, None) for row in (data or befores)]
        if not pairs:
            raise self.error("data", position, f"{op.value} without any row")
        numbers: dict[str, bool] = {}
        decoded = []
        for i, (before_raw, after_raw) in enumerate(pairs):
            where = position if position.index == i else replace(position, index=i)
            before_field = f"data[{i}]" if delete_in else f"before[{i}]"
            before, r_before = read_image(self, before_raw, before_field, where, numbers)
            after, r_after = read_image(self, after_raw, f"data[{i}]", where, numbers)
            decoded.append((where, before, after, r_before, r_after))
        columns = _with_numbers(key, columns, numbers)
        flags = {c.name: c.number for c in columns}
        events = []
        for where, before, after, r_before, r_after in decoded:
            vendor: dict[str, Any] = {}
            render = {part: dev for part, dev in (("before", deviations(r_before, flags)),
                                                  ("after", deviations(r_after, flags))) if dev}
            if render:
                vendor["render"] = render
            if delete_in:
                vendor["delete_in"] = delete_in
            events.append(Event(op=op, position=where, before=before, after=after, columns=columns,
                                vendor=vendor, **common))
        return events

    def _columns(self, msg: dict, position: Position) -> tuple[Optional[tuple], tuple[Column, ...]]:
        """The declaration's cache key (None: not cacheable) and its columns, read once per distinct declaration."""
        key = _declaration_key(msg)
        try:
            cached = _DECLARED.get(key)
        except TypeError:  # an object or list as a type: malformed, ``_read_columns`` names it
            key, cached = None, None
        if cached is None:
            cached = self._read_columns(msg, position)
            if key is not None:
                remember(_DECLARED, key, cached)
        return key, cached

    def _read_columns(self, msg: dict, position: Position) -> tuple[Column, ...]:
        types, jdbc = msg.get("dbValType"), msg.get("jdbcType")
        if types is not None and not isinstance(types, dict):
            raise self.error("dbValType", position, "expected an object of column -> type name")
        if jdbc is not None and not isinstance(jdbc, dict):
            raise self.error("jdbcType", position, "expected an object of column -> java.sql.Types number")
        types, jdbc = types or {}, jdbc or {}
        columns = []
        for name in dict.fromkeys([*types, *jdbc]):
            type_name = types.get(name)
            if type_name is not None and not isinstance(type_name, str):
                raise self.error(f"dbValType.{name}", position, f"expected a type name, got {type_name!r}")
            number = jdbc.get(name)
            jdbc_type = int_field(number) if number is not None else None
            if number is not None and jdbc_type is None:
                raise self.error(f"jdbcType.{name}", position, f"expected a java.sql.Types number, got {number!r}")
            columns.append(Column(name, type_name, jdbc_type))
        return tuple(columns)

    # ---------------------------------------------------------------------------------------------- encode

    # ``Codec.encode`` runs the recipe (packs_rows: rows of one source message go back into one message).

    def check_encodable(self, event: Event) -> None:
        if event.fragment_total != 1:
            raise EncodeError(FORMAT, "fragment_key", "assemble fragments before encoding")

    def build(self, events: list[Event]) -> dict:
        return self._build(events, rows=True)

    def message_op(self, msg: dict, first: Event) -> str:
        return msg["action"] if isinstance(msg.get("action"), str) else first.op.value

    def _build(self, group: Sequence[Event], rows: bool) -> dict[str, Any]:
        first = group[0]
        own = first.format == FORMAT
        columns = _merge_columns(group)
        ts = JsonNumber(str(first.event_time_ms)) if first.event_time_ms is not None else None
        msg: dict[str, Any] = {
            "bid": JsonNumber("0"),
            "db": first.database,
            "schema": first.schema if first.schema is not None else first.database,
            "table": first.table if first.table is not None else "",
            "dbValType": {c.name: c.type_name or _type_name(c) for c in columns if c.type_name or not own},
            "jdbcType": {c.name: JsonNumber(str(_jdbc(c))) for c in columns if c.jdbc_type is not None or not own},
            "pks": list(first.primary_key),
            "execTs": ts,
            "sendTs": ts,
            "entryType": "ROWDATA",
            "before": [],
            "data": [],
        }
        if not first.op.is_data:
            return self._build_control(first, own, columns, msg)
        flags = {c.name: (c.number if own else _bare_family(c)) for c in columns}
        action = "INSERT" if first.op is Op.SNAPSHOT else first.op.value
        data, befores = [], []

        def row(image: dict, kinds: dict, part: str) -> dict:
            return render_image(FORMAT, image, flags, kinds.get(part, {}), part) if rows else {}

        for e in group:
            render = e.vendor.get("render", {}) if own else {}
            if e.op is Op.DELETE:
                into = data if own and e.vendor.get("delete_in") == "data" else befores
                into.append(row(e.before or {}, render, "before"))
                continue
            data.append(row(e.after or {}, render, "after"))
            if e.op is Op.UPDATE and e.before is not None:
                befores.append(row(e.before, render, "before"))
        msg.update(action=action, isDdl=False, sql="", data=data, before=befores)
        return msg

    @staticmethod
    def _build_control(e: Event, own: bool, columns: list[Column], msg: dict[str, Any]) -> dict[str, Any]:
        action = e.vendor.get("action") if own else None
        if e.op in ENTRY_FOR_OP:
            msg.update(action=action or ENTRY_FOR_OP[e.op], isDdl=False, sql="", entryType=ENTRY_FOR_OP[e.op])
            return msg
        if e.op not in (Op.DDL, Op.TRUNCATE):
            raise EncodeError(FORMAT, "action", f"CloudCanal JSON cannot carry a {e.op.value} event")
        action = action or ("TRUNCATE" if e.op is Op.TRUNCATE else _ddl_action(e.ddl))
        msg.update(action=action, isDdl=True, sql=e.ddl or "")
        if columns:
            msg["tableChanges"] = {
                "table": {
                    "columns": [{"jdbcType": JsonNumber(str(_jdbc(c))), "name": c.name, "position": JsonNumber(str(i)),
                                 "typeExpression": c.type_name or _type_name(c),
                                 "typeName": (c.type_name or _type_name(c)).split("(")[0]}
                                for i, c in enumerate(columns)],
                    "primaryKeyColumnNames": list(e.primary_key),
                },
                "type": action,
            }
        return msg


# ------------------------------------------------------------------------------------------------ helpers



def _declaration_key(msg: dict) -> Optional[tuple]:
    """Everything the declared columns depend on: per declaration key its presence and items with their JSON types
    (``JsonNumber("4")`` equals ``"4"``: a cached success must never hide a malformed declaration); None for a
    declaration that is neither an object nor null (``_read_columns`` names it)."""
    key = []
    for name in DECLARATIONS:
        value = msg.get(name, _ABSENT)
        if type(value) is dict:
            key.append((tuple(value.items()), tuple(map(type, value.values()))))
        elif value is None or value is _ABSENT:
            key.append(value)
        else:
            return None
    return tuple(key)



def _self_derived(msg: dict, derived: dict, columns: tuple[Column, ...]) -> bool:
    """Whether the message's dbValType and jdbcType are exactly what the encoder derives from ``columns``. The
    columns tuple is one per distinct declaration (``_columns``), so this is compared once per tuple; but not the
    empty tuple, which Python shares between all declarations without columns (``{}``, null, absent)."""
    hit = _SELF_DERIVED.get(id(columns)) if columns else None
    if hit is not None and hit[0] is columns:
        return hit[1]
    same = all(name in msg and same_json(msg[name], derived.get(name)) for name in DECLARATIONS)
    if columns:
        remember(_SELF_DERIVED, id(columns), (columns, same))  # holds the tuple, so its id stays unique
    return same


def _with_numbers(key: Optional[tuple], columns: tuple[Column, ...], numbers: dict[str, bool]
                  ) -> tuple[Column, ...]:
    """The declared columns with the number flags of the rows (and the row columns nothing declares)."""
    numbered_key = (key, tuple(numbers.items())) if key is not None else None
    cached = _NUMBERED.get(numbered_key) if numbered_key is not None else None
    if cached is None:
        cached = _numbered(columns, numbers)
        if numbered_key is not None:
            remember(_NUMBERED, numbered_key, cached)
    return cached


def _numbered(columns: tuple[Column, ...], numbers: dict[str, bool]) -> tuple[Column, ...]:
    known = {c.name for c in columns}
    out = [replace(c, number=numbers.get(c.name, False)) for c in columns]
    out += [Column(name, number=flag) for name, flag in numbers.items() if name not in known]
    return tuple(out)


def _bare_family(c: Column) -> bool:
    """Foreign events: CloudCanal writes integer and floating columns as JSON numbers, the rest as strings."""
    return c.number or family(c.type_name, c.jdbc_type) in ("int", "float")


def _merge_columns(group: Sequence[Event]) -> list[Column]:
    seen: dict[str, Column] = {}
    for e in group:
        for c in e.columns:
            seen.setdefault(c.name, c)
    return list(seen.values())


def _jdbc(c: Column) -> int:
    if c.jdbc_type is not None:
        return c.jdbc_type
    fam = family(c.type_name)
    if fam == "int" and c.type_name and c.type_name.lower().startswith("bigint"):
        return JDBC["BIGINT"]
    if fam == "int":  # CloudCanal writes other integers as INTEGER
        return JDBC["INTEGER"]
    return FAMILY_JDBC.get(fam, JDBC["VARCHAR"])


def _type_name(c: Column) -> str:
    return jdbc_type_name(c.jdbc_type)


def _ddl_action(ddl: Optional[str]) -> str:
    words = (ddl or "").split()
    first = words[0].upper() if words else ""
    return {"CREATE": "CREATE", "ALTER": "ALTER", "DROP": "DROP", "RENAME": "RENAME",
            "TRUNCATE": "TRUNCATE"}.get(first, "QUERY")


CODEC = CloudCanalJsonCodec()
