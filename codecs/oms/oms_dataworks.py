"""OceanBase OMS "DataWorks 2.0" JSON: what OMS writes when the serialisation is set to Dataworks.

It is *not* the DataWorks real-time-sync format (``dataworks_json``: ``schema.dataColumn``, ``payload.before.
dataColumn``, an update split into UPDATE_BEFOR / UPDATE_AFTER messages sharing a ``sequenceId``). OMS writes one
message per change::

    {"version": "2.0",
     "schema": {"source": {"dbType", "dbVersion", "dbName", "schema", "table"},
                "column": [{"name", "type"}...], "pk": [...]},
     "payload": {"before": {"data": {...}} | null, "after": {"data": {...}} | null,
                 "op": "INSERT/UPDATE/DELETE/HEARTBEAT/TRANSACTION_BEGIN/...", "timestamp": {"eventTime": ms,
                 "systemTime": ms, "checkpointTime": s}, "ddl": {"text": ...} | null, "scn": "<id>"},
     "extend": {...}}

and a heartbeat as ``{"version": "2.0", "payload": {"timestamp": {"eventTime": ms}, "op": "HEARTBEAT"}}``.

Mapping: ``dbName`` -> database, ``source.schema`` -> schema, ``column[].type`` -> ``Column.type_name``,
``pk`` -> primary_key, ``eventTime`` -> event_time_ms, ``scn`` (an increasing id; OMS writes the string
"null" when it has none) -> sequence. Values are OMS's text mapping (bare numbers for Long/BigDecimal/Double).
Everything the canonical fields do not hold (``dbType``, ``systemTime``, ``extend``...) is kept as the difference
from the derived message in ``vendor["fix"]``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

from ..base import Capabilities, statement
from ..shared.declared_rows import DeclaredRows
from ..shared.value_text import int_field, is_text, render
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.columns import column, shared_columns
from .oms_json import OmsJsonCodec
from ..shared.required import OBJECT, STRING, Required, need
from ..types import JDBC_NAME

CONTROL = {"HEARTBEAT": Op.HEARTBEAT, "TRANSACTION_BEGIN": Op.BEGIN, "TRANSACTION_END": Op.COMMIT,
           # MySQL XA / GTID markers have no canonical op of their own: GTID opens a transaction, XA COMMIT and
           # XA ROLLBACK end one. The received op name is kept in vendor["op"].
           "GTID": Op.BEGIN, "XACOMMIT": Op.COMMIT, "XAROLLBACK": Op.COMMIT}
DDL_OPS = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"}
DATA_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
OUT_OP = {Op.INSERT: "INSERT", Op.SNAPSHOT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE",
          Op.HEARTBEAT: "HEARTBEAT", Op.BEGIN: "TRANSACTION_BEGIN", Op.COMMIT: "TRANSACTION_END",
          Op.TRUNCATE: "TRUNCATE"}
NO_SCN = "null"


def _payload_op(msg: dict) -> Optional[str]:
    payload = msg.get("payload")
    code = payload.get("op") if isinstance(payload, dict) else None
    if code in DATA_OPS:
        return code
    return "DDL" if code in DDL_OPS or code == "TRUNCATE" else None


# No time: a full-sync row of a source without one is written without payload.timestamp.
_SOURCE_NEEDS = (need("schema.source.table", STRING, nonempty=True),
                 need("schema.source.dbName", STRING, nonempty=True))
REQUIRED = Required(_payload_op, {
    "INSERT": _SOURCE_NEEDS + (need("payload.after.data", OBJECT),),
    "UPDATE": _SOURCE_NEEDS + (need("payload.before.data", OBJECT), need("payload.after.data", OBJECT)),
    "DELETE": _SOURCE_NEEDS + (need("payload.before.data", OBJECT),),
    "DDL": (need("payload.ddl.text", STRING),),
}, table="schema.source.table")


class OmsDataWorksCodec(OmsJsonCodec):
    name = "oms-dataworks"
    required = REQUIRED
    description = "OMS DataWorks 2.0 JSON: schema.source/column/pk, payload.before/after.data, op, timestamp, scn"
    capabilities = Capabilities(
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.HEARTBEAT, Op.BEGIN, Op.COMMIT}),
        transactions=True,
        notes="no snapshot marker (full-sync rows are INSERT); column types are OMS type names (no JDBC numbers).",
    )

    # The JVM's declared decode of the row messages (shared.declared_rows), in the order ``_build`` writes; what it
    # declines (DDL and control records, a schema level, columns the schema does not list, booleans or JSON in
    # cells...) ``events`` decodes.
    jvm_declaration = DeclaredRows(
        op=("payload.op", {code: op.value for code, op in DATA_OPS.items()}),
        images=(("before", "payload.before.data"), ("after", "payload.after.data")),
        reads={"database": ("schema.source.dbName", "text"), "table": ("schema.source.table", "text"),
               "primary_key": ("schema.pk", "list"), "millis": ("payload.timestamp.eventTime", "integer"),
               "sequence": ("payload.scn", "digits"), "column_specs": ("schema.column", "list")},
        writes={"version": '="2.0"', "schema.source.dbType": "null", "schema.source.dbVersion": "null",
                "schema.source.dbName": "database", "schema.source.schema": "null", "schema.source.table": "table",
                "schema.column": "column_specs", "schema.pk": "key_list_or_empty", "payload.op": "op",
                "payload.timestamp": "object_if_time", "payload.timestamp.eventTime": "millis_number",
                "payload.timestamp.checkpointTime": "seconds_number", "payload.before": "null",
                "payload.after": "null", "payload.ddl": "null", "payload.scn": "sequence_text"},
        requires={"schema.source.schema": ()}, sequence_none=NO_SCN, leaf_paths=True, columns_exact=True)

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; OMS DataWorks compares leaf paths (its images are the event itself).

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        skip = {("payload", "before"), ("payload", "after")} if events[0].op.is_data else set()
        if _same_declaration(msg, derived):
            skip.add(("schema", "column"))  # it would give no fix; comparing it was ~half of derive_fix
        return leaf_paths(msg, derived, skip)

    def _event(self, msg: dict, position: Position) -> Event:
        payload = msg.get("payload")
        if not isinstance(payload, dict):
            raise self.error("payload", position, "expected an object")
        code = payload.get("op")
        if not is_text(code):
            raise self.error("payload.op", position, f"expected the operation name, got {code!r}")
        op = DATA_OPS.get(code) or CONTROL.get(code) or (
            Op.TRUNCATE if code == "TRUNCATE" else Op.DDL if code in DDL_OPS else None)
        if op is None:
            raise self.error("payload.op", position, f"unknown operation {code!r}")
        schema = msg.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise self.error("schema", position, "expected an object")
        schema = schema or {}
        database, schema_name, table = self._source(schema.get("source"), position)
        columns, pk = self._columns(schema, position)
        vendor: dict[str, Any] = {"op": code} if code != OUT_OP.get(op) else {}
        fields: dict[str, Any] = dict(
            format=self.name, op=op, position=position, database=database, schema=schema_name, table=table,
            columns=columns, primary_key=pk,
            event_time_ms=self._event_time(payload.get("timestamp"), position),
            sequence=self._sequence(payload.get("scn"), position),
        )
        if op.is_data:
            before, bare_b = self._image(payload.get("before"), "payload.before", position)
            after, bare_a = self._image(payload.get("after"), "payload.after", position)
            self._check(op, before, after, position)
            declared = {c.name for c in columns}
            columns = _with_bare(columns, [bare_b, bare_a], [before, after])
            undeclared = [c.name for c in columns if c.name not in declared]
            if undeclared:
                vendor["undeclared"] = undeclared  # image columns schema.column does not list
            numbers = {c.name for c in columns if c.number}
            deviating = [[part, col] for part, bare in (("before", bare_b), ("after", bare_a))
                         for col, b in bare.items() if not b and col in numbers]
            if deviating:
                vendor["render"] = deviating
            warnings = _warnings(columns, pk, before, after)
            if warnings:
                vendor["warnings"] = warnings
            return Event(before=before, after=after, vendor=vendor, **{**fields, "columns": columns})
        if op in (Op.DDL, Op.TRUNCATE):
            fields["ddl"] = self._ddl(payload.get("ddl"), position)
        return Event(vendor=vendor, **fields)

    def _source(self, source: Any, position: Position) -> tuple[Optional[str], Optional[str], Optional[str]]:
        if source is None:
            return None, None, None
        if not isinstance(source, dict):
            raise self.error("schema.source", position, "expected an object")
        out = []
        for key in ("dbName", "schema", "table"):
            value = source.get(key)
            if value is not None and not is_text(value):
                raise self.error(f"schema.source.{key}", position, f"expected a string, got {value!r}")
            out.append(value)
        return out[0], out[1], out[2]

    def _columns(self, schema: dict, position: Position) -> tuple[tuple[Column, ...], tuple[str, ...]]:
        columns = []
        specs = schema.get("column")
        if specs is not None and not isinstance(specs, list):
            raise self.error("schema.column", position, f"expected a list of {{name, type}}, got {str(specs)[:60]!r}")
        for i, spec in enumerate(specs or ()):
            if not (isinstance(spec, dict) and is_text(spec.get("name"))):
                raise self.error(f"schema.column[{i}]", position, f"expected {{name, type}}, got {spec!r}")
            type_name = spec.get("type")
            if type_name is not None and not is_text(type_name):
                raise self.error(f"schema.column[{i}].type", position, f"expected a type name, got {type_name!r}")
            columns.append(column(spec["name"], type_name))
        pk = schema.get("pk")
        if pk is not None and not (isinstance(pk, list) and all(is_text(p) for p in pk)):
            raise self.error("schema.pk", position, "expected a list of column names")
        return shared_columns(columns), tuple(pk or ())

    def _image(self, value: Any, field: str, position: Position) -> tuple[Optional[Image], dict[str, bool]]:
        if value is None:
            return None, {}
        data = value.get("data") if isinstance(value, dict) else None
        if not isinstance(data, dict):
            raise self.error(f"{field}.data", position, "expected {\"data\": {column: value}}")
        return self.cells(data, f"{field}.data", position)

    def _check(self, op: Op, before: Optional[Image], after: Optional[Image], position: Position) -> None:
        if op in (Op.INSERT, Op.UPDATE) and after is None:
            raise self.error("payload.after", position, f"{op.value} needs an after image")
        if op in (Op.DELETE, Op.UPDATE) and before is None:
            raise self.error("payload.before", position, f"{op.value} needs a before image")

    def _ddl(self, value: Any, position: Position) -> Optional[str]:
        if value is None:
            return None
        text = value.get("text") if isinstance(value, dict) else None
        if not is_text(text):
            raise self.error("payload.ddl.text", position, "expected the DDL statement as a string")
        return text

    def _event_time(self, value: Any, position: Position) -> Optional[int]:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error("payload.timestamp", position, "expected an object")
        event_time = value.get("eventTime")
        if event_time is None:
            return None
        ms = int_field(event_time)
        if ms is None:
            raise self.error("payload.timestamp.eventTime", position, f"expected epoch ms, got {event_time!r}")
        return ms

    def _sequence(self, value: Any, position: Position) -> tuple[Decimal, ...]:
        if value is None or value == NO_SCN:
            return ()
        number = int_field(value)
        if number is None:
            raise self.error("payload.scn", position, f"expected an increasing integer id, got {value!r}")
        return (Decimal(number),)

    # ---------------------------------------------------------------------------------------------- encode

    # ``Codec.encode`` runs the recipe, one message per event.

    def check_encodable(self, event: Event) -> None:
        if event.op not in OUT_OP and event.op is not Op.DDL:
            raise EncodeError(self.name, "payload.op", f"cannot carry a {event.op.value} event")

    def message_op(self, msg: dict, first: Event) -> str:
        return msg_op(msg, first)

    def derive(self, events: list[Event]) -> dict:
        # ``fix_paths`` never compares a data event's payload.before/after (the images are the event itself), so
        # the derivation leaves their cells unrendered: rendering them was ~10% of a decode, for nothing.
        return self._build(events[0], images=not events[0].op.is_data)

    def _build(self, e: Event, images: bool = True) -> dict[str, Any]:
        own = e.format == self.name
        op = e.vendor.get("op") if own and e.vendor.get("op") else OUT_OP.get(e.op) or _ddl_op(e.ddl)
        timestamp = None
        if e.event_time_ms is not None:
            timestamp = {"eventTime": JsonNumber(str(e.event_time_ms))}
            if e.op.is_data or e.op in (Op.DDL, Op.TRUNCATE):
                timestamp["checkpointTime"] = JsonNumber(str(e.event_time_ms // 1000))
        payload: dict[str, Any] = {"op": op, "timestamp": timestamp}
        seq = e.sequence
        single = len(seq) == 1 and seq[0] == seq[0].to_integral_value()
        if e.op in (Op.HEARTBEAT, Op.BEGIN, Op.COMMIT):
            if single:
                payload["scn"] = str(int(seq[0]))
            msg = {"version": "2.0", "payload": payload}
            if e.database is not None or e.schema is not None or e.table is not None:
                msg["schema"] = {"source": _source(e)}  # a transaction marker of one table
            return msg
        payload["before"] = payload["after"] = None
        text = statement(e)
        payload["ddl"] = {"text": text} if text is not None else None
        render_fix = {tuple(x) for x in e.vendor.get("render", ())} if own else set()
        for part, image in (("before", e.before), ("after", e.after)):
            if image is not None and images:
                payload[part] = {"data": {c: render(v, self.bare(e, c, own) != ((part, c) in render_fix))
                                          for c, v in image.items()}}
        payload["scn"] = str(int(seq[0])) if single else NO_SCN
        source = {"dbType": None, "dbVersion": None, "dbName": e.database, "schema": e.schema, "table": e.table}
        undeclared = set(e.vendor.get("undeclared", ())) if own else set()
        column = [{"name": c.name, "type": _type(c, own)} for c in e.columns if c.name not in undeclared]
        schema = {"source": source, "column": column, "pk": list(e.primary_key)}
        return {"version": "2.0", "schema": schema, "payload": payload}


def msg_op(msg: dict, e: Event) -> str:
    payload = msg.get("payload")
    op = payload.get("op") if isinstance(payload, dict) else None
    return op if isinstance(op, str) else e.op.value


def leaf_paths(original: Any, derived: Any, skip: set[tuple[str, ...]], prefix: tuple[str, ...] = ()
               ) -> list[tuple[str, ...]]:
    """Key paths down to the first non-object on either side (lists are leaves), minus ``skip``."""
    paths: list[tuple[str, ...]] = []
    keys = [*original, *(k for k in derived if k not in original)]  # both sides' keys, the original's first
    for key in keys:
        path = prefix + (key,)
        if path in skip:
            continue
        o, d = original.get(key), derived.get(key)
        if isinstance(o, dict) and isinstance(d, dict):
            paths.extend(leaf_paths(o, d, skip, path))
        else:
            paths.append(path)
    return paths


def _same_declaration(msg: dict, derived: dict) -> bool:
    """Whether schema.column is on both sides and ``same_json`` on them would say equal, told by Python's ==
    (C speed). == would also equal a number literal to the same text, but schema.column's names and types are
    never numbers here: ``_columns`` rejected any, and the derived list is built from those same values."""
    schema, derived_schema = msg.get("schema"), derived.get("schema")
    if not isinstance(schema, dict) or not isinstance(derived_schema, dict):
        return False
    return "column" in schema and "column" in derived_schema and schema["column"] == derived_schema["column"]


def _with_bare(columns: tuple[Column, ...], bares: list[dict[str, bool]], images: list[Optional[Image]]
               ) -> tuple[Column, ...]:
    """Declared columns flagged with their rendering; image columns the schema does not list are appended."""
    numbers = {name for bare in bares for name, is_number in bare.items() if is_number}
    out = [column(c.name, c.type_name, c.jdbc_type, c.name in numbers) for c in columns]
    declared = {c.name for c in columns}
    extra = dict.fromkeys(n for image in images for n in image or {} if n not in declared)
    return shared_columns([*out, *(column(n, None, None, n in numbers) for n in extra)])


def _warnings(columns: tuple[Column, ...], pk: tuple[str, ...], before: Optional[Image], after: Optional[Image]
              ) -> list[str]:
    present = {n for image in (before, after) for n in image or {}}
    typed = [c.name for c in columns if c.name not in present]
    out = [f"schema.column names columns the images do not have: {typed}"] if typed else []
    missing_pk = [k for k in pk if k not in present]
    if missing_pk:
        out.append(f"pk names columns the images do not have: {missing_pk}")
    return out


def _source(e: Event) -> dict[str, Any]:
    return {"dbType": None, "dbVersion": None, "dbName": e.database, "schema": e.schema, "table": e.table}


def _type(c: Column, own: bool) -> Optional[str]:
    if c.type_name is not None or own:
        return c.type_name
    return JDBC_NAME.get(c.jdbc_type) if c.jdbc_type is not None else None


def _ddl_op(ddl: Optional[str]) -> str:
    first = (ddl or "").split(None, 1)[0].upper() if (ddl or "").strip() else ""
    return {"CREATE": "CREATE", "ALTER": "ALTER", "DROP": "ERASE", "RENAME": "RENAME",
            "TRUNCATE": "TRUNCATE"}.get(first, "QUERY")


CODEC = OmsDataWorksCodec()
