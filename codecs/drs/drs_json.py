"""Huawei Cloud DRS to Kafka, JSON format (MySQL / TaurusDB / Oracle sources), and the shared machinery of its
JSON-C (``drs_json_c``) and GaussDB/PostgreSQL (``drs_gaussdb``) variants, which parametrize this codec.

The message looks like Canal FlatMessage (``mysqlType``, ``sqlType``, ``data``, ``old``, ``pkNames``) but:
- ``id`` is DRS's own monotonically increasing event sequence number, so ``sequence = (id,)``;
- ``type`` also takes ``INIT`` (a full-sync row -> ``Op.SNAPSHOT``) and ``INIT_DDL`` (full-sync table structure
  -> ``Op.DDL``; the exact type is kept for re-encode);
- ``old`` is the full before image of an UPDATE and, in JSON (not JSON-C), holds the deleted row of a DELETE;
- every value is a JSON string; binary columns are Java ``Arrays.toString(byte[])`` text ("[106, 103]", signed
  bytes), converted to canonical base64 and back;
- strings are written by Gson with HTML escaping (``=`` as ``\\u003d`` ...), which the encoder reproduces.

Lossless re-encode: the encoder *derives* every message field from the canonical events. At decode time the
message is compared with that derivation; header keys that differ (``ts``, ``jobId``, ``INIT_DDL``, a table name
with a trailing space...) are kept as JSON literals in ``event.vendor["fix"]``, and cells whose text differs from
the rendering of their canonical value (unsigned bytes, a value written as a bare number) in
``event.vendor["cells"]``. Cell fixes are only re-applied while they still decode to the event's value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, cast

from ..base import Capabilities, Codec, EncodedMessage, flat_database, group_by_message, message_key
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.declared_rows import DeclaredRows
from ..shared.required import ARRAY, INTEGER, STRING, Required, need, same_needs
from ..shared.json_fix import literal, same_json, unliteral
from ..types import JDBC, JDBC_NAME, family
from .drs_wire import (apply_header_fixes, base64_to_java_bytes, drs_id, gson_dumps, header_fixes, integer_field,
                       java_bytes_to_base64, load_object, text_field)

FORMAT = "drs-json"

TYPE_TO_OP = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "INIT": Op.SNAPSHOT, "DDL": Op.DDL,
              "INIT_DDL": Op.DDL}
OP_TO_TYPE = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.SNAPSHOT: "INIT", Op.DDL: "DDL"}
DRS_OPS = frozenset(OP_TO_TYPE)

class Declared(NamedTuple):
    """A message's columns and what decode and derive look up per cell or per message (cached per distinct
    declaration by ``DrsJsonCodec._columns``)."""

    columns: tuple[Column, ...]
    by_name: dict[str, Column]
    families: dict[str, str]  # value_family of each column
    type_names: dict[str, str]  # the derived type-name declaration (mysqlType, columnType)
    type_codes: dict[str, JsonNumber]  # the derived sqlType
    numbers: bool  # some column holds bare numbers
    # The declaration keys (mysqlType, sqlType) the message has, with whether it writes each exactly as it
    # derives: decode need not compare them again for the header fixes of every message with this declaration.
    compared: Mapping[str, bool] = MappingProxyType({})


# Distinct declarations kept per codec; a replay sees a few per table (columns added over time).
_DECLARED_CACHE_SIZE = 1024
_INTEGER = re.compile(r"-?\d+")


def _exact(value: Any) -> tuple:
    """A hashable key that tells apart every declaration value, including number literals from equal strings."""
    if isinstance(value, dict):
        return tuple(value.items()), tuple(map(type, value.values()))
    return (type(value), value)


class Values:
    """How one DRS dialect writes a value, against the canonical text of ``event.py``. MySQL JSON: identity except
    binary (Java byte-array text). Subclasses add the dialect's own renderings. Raise ValueError when a text
    cannot be what the column's type says."""

    def to_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "binary":
            return java_bytes_to_base64(text)
        return text

    def from_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "binary":
            return base64_to_java_bytes(text)
        return text


# --------------------------------------------------------------------------------------------------------------
# Declared types


_MYSQL_JDBC_ALIASES = {
    "INT": JDBC["INTEGER"], "MEDIUMINT": JDBC["INTEGER"], "DATETIME": JDBC["TIMESTAMP"], "TEXT": JDBC["LONGVARCHAR"],
    "TINYTEXT": JDBC["VARCHAR"], "MEDIUMTEXT": JDBC["LONGVARCHAR"], "LONGTEXT": JDBC["LONGVARCHAR"],
    "TINYBLOB": JDBC["VARBINARY"], "MEDIUMBLOB": JDBC["LONGVARBINARY"], "LONGBLOB": JDBC["LONGVARBINARY"],
    "YEAR": JDBC["DATE"], "JSON": JDBC["VARCHAR"], "ENUM": JDBC["CHAR"], "SET": JDBC["CHAR"],
    "GEOMETRY": JDBC["BINARY"],
}
_FAMILY_JDBC = {"int": "BIGINT", "decimal": "DECIMAL", "float": "DOUBLE", "bit": "BIT", "bool": "BOOLEAN",
                "binary": "BLOB", "date": "DATE", "time": "TIME", "datetime": "TIMESTAMP", "timestamp": "TIMESTAMP",
                "zoned": "TIMESTAMP_WITH_TIMEZONE"}
_FAMILY_MYSQL = {"int": "bigint", "decimal": "decimal", "float": "double", "bit": "bit", "bool": "tinyint",
                 "binary": "blob", "date": "date", "time": "time", "datetime": "datetime", "timestamp": "timestamp",
                 "json": "json"}


def base_type(type_name: str) -> str:
    """``decimal(10,2) unsigned`` -> ``DECIMAL``."""
    return re.sub(r"\(.*?\)", "", type_name).split(" unsigned")[0].strip().upper()


def jdbc_for(column: Column) -> int:
    """java.sql.Types for a column that came without one (encoding events of another format)."""
    if column.jdbc_type is not None:
        return column.jdbc_type
    if column.type_name:
        base = base_type(column.type_name)
        if base in _MYSQL_JDBC_ALIASES:
            return _MYSQL_JDBC_ALIASES[base]
        if base in JDBC:
            return JDBC[base]
    return JDBC[_FAMILY_JDBC.get(family(column.type_name, column.jdbc_type), "VARCHAR")]


def mysql_type_for(column: Column) -> str:
    if column.type_name:
        return column.type_name
    fam = family(None, column.jdbc_type)
    if fam in _FAMILY_MYSQL:
        return _FAMILY_MYSQL[fam]
    return JDBC_NAME.get(column.jdbc_type, "VARCHAR").lower() if column.jdbc_type is not None else "varchar"


# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """What distinguishes the DRS row formats that share this codec."""

    name: str
    description: str
    delete_in: str = "old"  # where the documented deleted row lives: "old" (JSON) or "data" (JSON-C)
    values: Values = field(default_factory=Values)
    types_key: str = "mysqlType"
    notes: str = ""
    schema_level: bool = False  # a ``schema`` header beside ``database`` (GaussDB's)


JSON_DIALECT = Dialect(
    name=FORMAT,
    description="Huawei DRS JSON: Canal-like data[]/old[] with mysqlType/sqlType, INIT/INIT_DDL full sync, "
                "monotonic id",
    notes="UPDATE old is the full before image; DELETE row in old (accepted in data too); id is DRS's monotonic "
          "sequence; no heartbeat, transaction or truncate records; binary as Java byte-array text.",
)


def _drs_type(msg: dict) -> Optional[str]:
    kind = msg.get("type")
    return kind if kind in TYPE_TO_OP else None


# database may be "" (an Oracle source of drs-gaussdb has none: its schema names the table).
_ROW_NEEDS = (need("table", STRING, nonempty=True), need("database", STRING), need("id", INTEGER))
# A row message names its table and carries its DRS id (the sequence); the rows its type implies (a DELETE's are
# in old or data, per dialect); a DDL its statement.
REQUIRED = Required(_drs_type, {
    **same_needs(("INSERT", "INIT"), *_ROW_NEEDS, need("data", ARRAY, nonempty=True)),
    "UPDATE": _ROW_NEEDS + (need("data", ARRAY, nonempty=True), need("old", ARRAY, nonempty=True)),
    "DELETE": _ROW_NEEDS,
    **same_needs(("DDL", "INIT_DDL"), need("sql", STRING), need("id", INTEGER)),
})


class DrsJsonCodec(Codec):
    vendor = "Huawei Cloud DRS"
    required = REQUIRED
    # The JVM's declared decode of the row messages (shared.declared_rows), in the order ``_build`` writes; what it
    # declines (DDL, a column without its declared types, names with blanks around, a DELETE's rows in both lists,
    # byte arrays spelled otherwise than DRS writes them...) ``decode`` decodes.
    jvm_declaration = DeclaredRows(
        op=("type", {kind: op.value for kind, op in TYPE_TO_OP.items() if op.is_data}),
        images=(("rows", "data"), ("row_befores", "old")),
        reads={"database": ("database", "text"), "table": ("table", "text"), "primary_key": ("pkNames", "list"),
               "millis": ("es", "scalar"), "sequence": ("id", "integer"),
               "type_names": ("mysqlType", "object"), "type_codes": ("sqlType", "object")},
        writes={"mysqlType": "type_names", "id": "sequence_number", "es": "millis_number_or_null",
                "ts": "record_millis", "database": "database_or_empty", "table": "table", "type": "op",
                "isDdl": "=false", "sql": '=""', "sqlType": "type_codes", "data": "null", "old": "null",
                "pkNames": "key_list_or_null"},
        requires={"isDdl": ("false", "true")}, null_cells_declare=True, names_stripped=True, types_complete=True,
        value_conversions={"binary": "java_bytes"}, delete_in_vendor="delete_rows", delete_hides_other=True,
        fix_keys=True)

    def __init__(self, dialect: Dialect = JSON_DIALECT):
        self.dialect = dialect
        self._declared_cache: dict[tuple, Declared] = {}
        self.name = dialect.name
        self.description = dialect.description
        self.capabilities = Capabilities(
            typed_values=True, before_image="full", delete_image="full", ops=DRS_OPS, transactions=False,
            packs_rows=True, schema_level=dialect.schema_level,
            notes=dialect.notes,
        )

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        msg = load_object(self, raw, position)
        events, declared = self._events(msg, position)
        self.required.check(self.name, msg, position)
        derived = self._build(events, declared)
        if declared is None:
            fixes = header_fixes(msg, derived, ())
        else:
            fixes = header_fixes(msg, derived, self._image_keys(msg, events[0].op), declared.compared)
        numbers = declared is not None and declared.numbers
        for e in events:
            # Each event's vendor dict was made for it by ``_events`` and nothing else holds it yet, so it is
            # completed in place rather than copying every event once more (``dataclasses.replace``).
            vendor = cast(dict, e.vendor)
            if fixes:
                vendor["fix"] = fixes
            cells = self._cell_fixes(msg, derived, e, numbers)
            if cells:
                vendor["cells"] = cells
        return events

    def _events(self, msg: dict, position: Position) -> tuple[list[Event], Optional[Declared]]:
        """The message's events, and the columns their rows declare (None for a DDL)."""
        kind = text_field(self, msg, "type", position)
        if kind not in TYPE_TO_OP:
            raise self.error("type", position, f"unknown operation type {kind!r}; expected one of "
                                               f"{', '.join(TYPE_TO_OP)}")
        op = TYPE_TO_OP[kind]
        drs_seq = integer_field(self, msg, "id", position, required=True)
        es = integer_field(self, msg, "es", position, required=False)
        is_ddl = msg.get("isDdl")
        if is_ddl is not None and not isinstance(is_ddl, bool):
            raise self.error("isDdl", position, f"expected true/false, got {is_ddl!r}")
        common = dict(format=self.name, event_time_ms=es, sequence=(Decimal(drs_seq),),
                      **self._names(msg, position))
        if op is Op.DDL:
            sql = text_field(self, msg, "sql", position)
            return [Event(op=op, position=position, ddl=sql, **common)], None
        pk = msg.get("pkNames")
        if pk is not None and not (isinstance(pk, list) and all(type(p) is str for p in pk)):
            raise self.error("pkNames", position, "expected a list of column names or null")
        rows = self._rows(msg, op, position)
        declared = self._columns(msg, rows, position)
        events = []
        for i, (before_raw, after_raw) in enumerate(rows):
            where = position if position.index == i else replace(position, index=i)
            before = self._image(before_raw, self._row_field(msg, op, "before", i), declared, where)
            after = self._image(after_raw, self._row_field(msg, op, "after", i), declared, where)
            vendor = self._row_vendor(msg, op)
            events.append(Event(op=op, position=where, before=before, after=after, columns=declared.columns,
                                primary_key=tuple(pk or ()), vendor=vendor, **common))
        return events, declared

    def _names(self, msg: dict, position: Position) -> dict[str, Optional[str]]:
        """database/table (GaussDB adds schema). A name is stripped of surrounding blanks: MySQL forbids trailing
        spaces in identifiers, and DRS's own UPDATE example writes "test " for table test (kept in the fix)."""
        database = text_field(self, msg, "database", position)
        table = text_field(self, msg, "table", position)
        return dict(database=(database.strip() or None) if database is not None else None,
                    table=(table.strip() or None) if table is not None else None)

    # rows ------------------------------------------------------------------------------------------------

    def _rows(self, msg: dict, op: Op, position: Position) -> list[tuple[Optional[dict], Optional[dict]]]:
        """(before, after) raw row objects, one pair per row of the message."""
        data = self._row_list(msg, "data", position)
        old = self._row_list(msg, "old", position)
        if op in (Op.INSERT, Op.SNAPSHOT):
            self._unused(old, "old", op, position)
            self._nonempty(data, "data", op, position)
            return [(None, row) for row in data]
        if op is Op.UPDATE:
            self._nonempty(data, "data", op, position)
            if len(old or ()) != len(data):
                raise self.error("old", position, f"UPDATE needs one old row per data row ({len(data)}), "
                                                  f"got {len(old or ())}")
            return list(zip(old, data))
        main, other = self._delete_sides()
        rows, spare = (old, data) if main == "old" else (data, old)
        if rows:
            if spare and not same_json(spare, rows):
                raise self.error(other, position, f"DELETE carries different rows in {main} and {other}; "
                                                  "cannot tell which is the deleted row")
            return [(row, None) for row in rows]
        self._nonempty(spare, f"{main}", op, position)  # error names the documented side
        return [(row, None) for row in spare]

    def _delete_sides(self) -> tuple[str, str]:
        return ("old", "data") if self.dialect.delete_in == "old" else ("data", "old")

    def _image_keys(self, msg: dict, op: Op) -> set[str]:
        """The top-level keys whose rows became images (the others are diffed as header keys)."""
        if op is Op.UPDATE:
            return {"data", "old"}
        if op is not Op.DELETE:
            return {"data"}
        main, other = self._delete_sides()
        return {main, other} if msg.get(main) else {other}

    def _row_field(self, msg: dict, op: Op, side: str, i: int) -> str:
        if side == "after" or op is Op.UPDATE:
            return f"{'data' if side == 'after' else 'old'}[{i}]"
        main, other = self._delete_sides()
        return f"{main if msg.get(main) else other}[{i}]"

    def _row_vendor(self, msg: dict, op: Op) -> dict[str, Any]:
        if op is not Op.DELETE:
            return {}
        main, other = self._delete_sides()
        if not msg.get(main):
            return {"delete_rows": other}
        if msg.get(other):
            return {"delete_rows": "both"}
        return {}

    def _row_list(self, msg: dict, key: str, position: Position) -> Optional[list]:
        rows = msg.get(key)
        if rows is None:
            return None
        if not isinstance(rows, list):
            raise self.error(key, position, "expected a list of row objects or null")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise self.error(f"{key}[{i}]", replace(position, index=i), "expected an object of column values")
        return rows

    def _nonempty(self, rows: Optional[list], key: str, op: Op, position: Position) -> None:
        if not rows:
            raise self.error(key, position, f"{op.value} message carries no rows")

    def _unused(self, rows: Optional[list], key: str, op: Op, position: Position) -> None:
        if rows:
            raise self.error(key, position, f"{key} must be null for {op.value}")

    # columns and values ----------------------------------------------------------------------------------

    def _columns(self, msg: dict, rows: list[tuple[Optional[dict], Optional[dict]]],
                 position: Position) -> Declared:
        """The declared columns (type name, sqlType and the rows' column names), then any column only the rows
        name. Every message of a table repeats the same declarations, so the result is cached by everything it
        depends on: the declarations' values *and* their JSON types (so a cached success never hides a
        malformed declaration), the rows' column names and which of them hold bare numbers."""
        row_names: dict[str, Any] = {}  # the keys, in order
        bare: set[str] = set()
        for pair in rows:
            for row in pair:
                if row:
                    row_names.update(row)
                    bare.update([col for col, value in row.items() if isinstance(value, JsonNumber)])
        types, codes = msg.get(self.dialect.types_key), msg.get("sqlType")
        try:
            key = (_exact(types), _exact(codes), tuple(row_names), frozenset(bare))
            cached = self._declared_cache.get(key)
        except TypeError:  # an object or list inside a declaration: malformed, the full check names it
            key, cached = None, None
        if cached is not None:
            return cached
        types = self._type_map(msg, self.dialect.types_key, str, "a type name", position)
        codes = self._type_map(msg, "sqlType", JsonNumber, "an integer type number", position)
        names = dict.fromkeys([*types, *codes, *row_names])
        declared = self._declare(self._column(name, types.get(name), codes.get(name), name in bare)
                                 for name in names)
        derived = {self.dialect.types_key: declared.type_names, "sqlType": declared.type_codes}
        declared = declared._replace(compared={key: same_json(msg[key], value) for key, value in derived.items()
                                               if key in msg})
        if key is not None:
            if len(self._declared_cache) >= _DECLARED_CACHE_SIZE:
                self._declared_cache.clear()
            self._declared_cache[key] = declared
        return declared

    def _declare(self, columns: Iterable[Column]) -> Declared:
        columns = tuple(columns)
        return Declared(columns, {c.name: c for c in columns}, {c.name: value_family(c) for c in columns},
                        {c.name: self._type_name(c) for c in columns},
                        {c.name: JsonNumber(str(self._sql_type(c))) for c in columns},
                        any(c.number for c in columns))

    def _column(self, name: str, type_name: Optional[str], code: Optional[JsonNumber], number: bool) -> Column:
        return Column(name, type_name, int(code) if code is not None else None, number)

    def _type_map(self, msg: dict, key: str, kind: type, what: str, position: Position) -> dict:
        value = msg.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, position, f"expected an object of column -> {what}")
        for col, v in value.items():
            ok = isinstance(v, JsonNumber) and _INTEGER.fullmatch(v) if kind is JsonNumber else (
                isinstance(v, str) and not isinstance(v, JsonNumber))
            if not ok:
                raise self.error(f"{key}.{col}", position, f"expected {what}, got {v!r}")
        return value

    def _image(self, row: Optional[dict], where: str, declared: Declared, position: Position) -> Optional[Image]:
        """``where`` names the row (``data[0]``) in errors."""
        if row is None:
            return None
        image: Image = {}
        for col, value in row.items():
            image[col] = self._cell(declared.by_name[col], declared.families[col], value, where, position)
        return image

    def _cell(self, column: Column, fam: str, value: Any, where: str, position: Position) -> Optional[str]:
        if value is None:
            return None
        if isinstance(value, JsonNumber):
            return str(value)
        if not isinstance(value, str):
            raise self.error(f"{where}.{column.name}", position,
                             f"a column value must be a string, number or null, got {value!r}")
        try:
            return self.dialect.values.to_canonical(column, fam, value)
        except ValueError as exc:
            raise self.error(f"{where}.{column.name}", position, f"{column.type_name or 'value'}: {exc}") from None

    def _cell_fixes(self, msg: dict, derived: dict, e: Event, numbers: bool) -> dict[str, dict[str, str]]:
        """Cells whose text is not the rendering of their canonical value, per side (data/old). ``numbers``: some
        column holds bare numbers."""
        if not e.op.is_data:
            return {}
        i = e.position.index
        out: dict[str, dict[str, str]] = {}
        for key in ("data", "old"):
            orig, der = msg.get(key), derived.get(key)
            if not (isinstance(orig, list) and isinstance(der, list) and i < len(orig) and i < len(der)):
                continue
            derived_row = der[i]
            if not numbers and orig[i] == derived_row:
                continue  # every cell of both rows is text or null, so plain equality is the exact comparison
            diff = {col: literal(v) for col, v in orig[i].items() if not _same_cell(v, derived_row.get(col))}
            if diff:
                out[key] = diff
        return out

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for group in self._messages(events):
            first = group[0]
            msg = self._build(group)
            if first.format == self.name and first.vendor.get("fix"):
                apply_header_fixes(msg, first.vendor["fix"])
            out.append(EncodedMessage(gson_dumps(self.written(msg, first)), message_key(first), first.qualified_table,
                                      OP_TO_TYPE[first.op], events=len(group)))
        return out

    def _messages(self, events: Sequence[Event]) -> list[list[Event]]:
        """Rows of one DRS message go back into one message; anything else is one message per event, so each
        keeps its own ``id``. Ops DRS cannot carry (heartbeat, transaction markers, truncate) are left out, as
        ``capabilities.ops`` declares."""
        groups: list[list[Event]] = []
        for run in group_by_message(e for e in events if e.op in DRS_OPS):
            groups.append([run[0]])
            for e in run[1:]:
                last = groups[-1][-1]
                if (e.format == self.name and e.op.is_data and e.op is last.op
                        and e.qualified_table == last.qualified_table):
                    groups[-1].append(e)
                else:
                    groups.append([e])
        return groups

    def _build(self, group: Sequence[Event], declared: Optional[Declared] = None) -> dict[str, Any]:
        """The message the events derive to (before header fixes). ``declared``: the group's columns when the
        caller has them (decode: the message's own declaration, which names every column of its rows)."""
        first = group[0]
        msg: dict[str, Any] = {}
        data_op = first.op.is_data
        if data_op and declared is None:
            declared = self._declare(merged_columns(group))
        msg[self.dialect.types_key] = declared.type_names if declared is not None else None
        msg.update(self._header(first))
        msg.update(type=OP_TO_TYPE[first.op], isDdl=not data_op,
                   sql="" if data_op else (first.ddl or ""))
        msg["sqlType"] = declared.type_codes if declared is not None else None
        data, old = self._render_rows(group, declared) if declared is not None else (None, None)
        msg.update(data=data, old=old,
                   pkNames=list(first.primary_key) if first.primary_key else None)
        return msg

    def _header(self, first: Event) -> dict[str, Any]:
        ms = first.event_time_ms
        ts = first.position.timestamp_ms if first.position.timestamp_ms is not None else ms
        return {
            "id": JsonNumber(str(drs_id(first))),
            "es": JsonNumber(str(ms)) if ms is not None else None,
            "ts": JsonNumber(str(ts)) if ts is not None else None,
            # DRS JSON has no schema field; an Oracle or PostgreSQL source writes the schema as database.
            "database": flat_database(first) or "",
            "table": first.table or "",
        }

    def _type_name(self, column: Column) -> str:
        return mysql_type_for(column)

    def _sql_type(self, column: Column) -> int:
        return jdbc_for(column)

    def _render_rows(self, group: Sequence[Event], declared: Declared) -> tuple[Optional[list], Optional[list]]:
        first = group[0]
        own = first.format == self.name
        op = first.op
        data: list = []
        old: list = []
        for e in group:
            cells = e.vendor.get("cells", {}) if own else {}
            if op is Op.DELETE:
                where = e.vendor.get("delete_rows", self.dialect.delete_in) if own else self.dialect.delete_in
                side = self.dialect.delete_in if where == "both" else where
                row = self._render(e.before or {}, declared, own, cells.get(side, {}))
                if where in ("data", "both"):
                    data.append(row)
                if where in ("old", "both"):
                    old.append(row)
                continue
            data.append(self._render(e.after or {}, declared, own, cells.get("data", {})))
            if op is Op.UPDATE:
                old.append(self._render(e.before or {}, declared, own, cells.get("old", {})))
        return data or None, old or None

    def _render(self, image: Image, declared: Declared, own: bool, fixes: Mapping[str, str]) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for col, text in image.items():
            column = declared.by_name[col]  # the declaration names every column of the group's images
            fixed = fixes.get(col)
            if fixed is not None and self._fix_still_holds(column, unliteral(fixed), text):
                row[col] = unliteral(fixed)
            elif text is None:
                row[col] = None
            elif own and column.number:
                row[col] = JsonNumber(text)
            else:
                try:
                    row[col] = self.dialect.values.from_canonical(column, declared.families[col], text)
                except ValueError as exc:
                    raise EncodeError(self.name, col, str(exc)) from None
        return row

    def _fix_still_holds(self, column: Column, value: Any, text: Optional[str]) -> bool:
        """A recorded cell text is reused only while it still decodes to the event's value."""
        if value is None or text is None:
            return value is None and text is None
        if isinstance(value, JsonNumber):
            return str(value) == text
        try:
            return isinstance(value, str) and self.dialect.values.to_canonical(
                column, value_family(column), value) == text
        except ValueError:
            return False


def _same_cell(a: Any, b: Any) -> bool:
    """``same_json`` for the values a decoded cell can hold (text, number literal, null) without its recursion: a
    number equals only a number with the same literal."""
    return a == b and isinstance(a, JsonNumber) is isinstance(b, JsonNumber)


def value_family(column: Column) -> str:
    """The family that decides a value's conversion. The declared type name alone when there is one: DRS always
    names its types, and a JDBC fallback would misread e.g. MySQL geometry (JDBC BINARY) text as bytes."""
    if column.type_name:
        return family(column.type_name)
    return family(None, column.jdbc_type)


def merged_columns(group: Sequence[Event]) -> list[Column]:
    """Declared columns of the group's events, then a bare Column for any image column without a declaration."""
    seen: dict[str, Column] = {}
    for e in group:
        for c in e.columns:
            seen.setdefault(c.name, c)
    for e in group:
        for image in (e.before, e.after):
            for name in image or {}:
                seen.setdefault(name, Column(name))
    return list(seen.values())


CODEC = DrsJsonCodec(JSON_DIALECT)
