"""Alibaba DataWorks real-time synchronisation to Kafka, JSON message format.

``schema.dataColumn`` declares every column as one of six types (BOOLEAN, DOUBLE, DATE, BYTES, LONG, STRING),
``schema.primaryKey`` the key (null for tables without one: then the hidden ``#alibaba_rds_row_id#`` column
identifies the row and becomes the primary key, so merge can still match rows), ``schema.source`` the table.
``payload.before/after.dataColumn`` are the images, ``payload.sequenceId`` (a string of digits) the ordering
field, ``payload.timestamp.eventTime`` the source time in ms.

Values per declared type: LONG/DOUBLE are bare JSON numbers (literal kept, ``Column.number``), BOOLEAN a JSON
boolean ("true"/"false"), BYTES base64 text (already the canonical form), STRING text, DATE epoch milliseconds,
which is an instant, so its canonical text is the *timestamp* form: epoch seconds with the fraction
("1590315269" or "1590315269.123"); every conversion is checked to re-encode to the same JSON.

An UPDATE is either one message holding both images (option "one Kafka record per update", op
UPDATE_AFTER) or two messages UPDATE_BEFOR + UPDATE_AFTER sharing one ``sequenceId``. Each half decodes to a
fragment Event (``fragment_key`` = table + sequenceId, index 0 = BEFOR, 1 = AFTER, total 2) that
``assemble`` joins, halves in any order. The encoder writes the pair by default (counted on the first message)
and one message when the update came as one.

Control ops: MHEARTBEAT -> HEARTBEAT, TRANSACTION_BEGIN/END -> BEGIN/COMMIT, XACOMMIT -> COMMIT; GTID and
XAROLLBACK change no row and become HEARTBEAT control events (the op is kept for re-encode); DDL ops
CREATE/ALTER/ERASE/QUERY/RENAME/CINDEX/DINDEX -> DDL (``ddl.text``), TRUNCATE -> TRUNCATE.

Lossless re-encode uses the shared derive/fix recipe of ``Codec.decode`` (``vendor["fix"]``: ``version``,
``dbType``, ``systemTime``, ``scn``, ``ddlMeta``... wherever the message differs from what the canonical fields
derive).
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation, Overflow
from typing import Any, Optional, Sequence

from .. import jsontext
from ..base import Capabilities, Codec, EncodedMessage, message_key, statement, untyped
from ..shared.json_fix import apply_fix, same_json
from ..shared.memo import remember
from ..shared.value_text import cell_json, cell_text
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.required import INTEGER, NULL, OBJECT, STRING, Required, need, same_needs
from ..types import family

FORMAT = "dataworks-json"
ROW_ID = "#alibaba_rds_row_id#"
DDL_OPS = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"}
CONTROL_OPS = {"MHEARTBEAT": Op.HEARTBEAT, "TRANSACTION_BEGIN": Op.BEGIN, "TRANSACTION_END": Op.COMMIT,
               "XACOMMIT": Op.COMMIT, "GTID": Op.HEARTBEAT, "XAROLLBACK": Op.HEARTBEAT}
CONTROL_NAMES = {Op.HEARTBEAT: "MHEARTBEAT", Op.BEGIN: "TRANSACTION_BEGIN", Op.COMMIT: "TRANSACTION_END"}
TYPE_KIND = {"LONG": "num", "DOUBLE": "num", "BOOLEAN": "bool", "DATE": "date", "BYTES": "str", "STRING": "str"}
DATE_TYPE, JDBC_TIMESTAMP = "timestamp(3)", 93
FAMILY_TYPE = {"int": "LONG", "float": "DOUBLE", "bool": "BOOLEAN", "binary": "BYTES", "timestamp": "DATE"}
# Where the fix paths descend into objects, so the vendor data holds single keys, not whole blocks.
NESTED = {("schema",), ("schema", "source"), ("payload",), ("payload", "timestamp"), ("payload", "ddl")}
_EPOCH_MS = re.compile(r"-?\d+")
# Every message of a table repeats its schema.dataColumn: its columns are read once per distinct declaration, and
# compared with what the encoder derives from them once per columns tuple.
_DECLARED: dict[tuple, tuple[Column, ...]] = {}
_SELF_DERIVED: dict[int, tuple[tuple[Column, ...], bool]] = {}
_BY_NAME: dict[int, tuple[tuple[Column, ...], dict[str, tuple[Column, str]]]] = {}


def _payload_op(msg: dict) -> Optional[str]:
    payload = msg.get("payload")
    op_name = payload.get("op") if isinstance(payload, dict) else None
    if op_name in ("INSERT", "DELETE", "UPDATE_BEFOR", "UPDATE_AFTER"):
        return op_name
    return "DDL" if op_name in DDL_OPS or op_name == "TRUNCATE" else None


_SOURCE_NEEDS = (need("schema.source.tableName", STRING, nonempty=True),
                 need("schema.source.dbName", STRING, nonempty=True),
                 need("payload.timestamp.eventTime", INTEGER, NULL))  # null: a full-sync row without time
# A row message names its table in schema.source and carries the half of the row its op names.
REQUIRED = Required(_payload_op, {
    "INSERT": _SOURCE_NEEDS + (need("payload.after.dataColumn", OBJECT),),
    "UPDATE_AFTER": _SOURCE_NEEDS + (need("payload.after.dataColumn", OBJECT),),
    **same_needs(("DELETE", "UPDATE_BEFOR"), *_SOURCE_NEEDS, need("payload.before.dataColumn", OBJECT)),
    "DDL": (need("payload.ddl.text", STRING),),
}, table="schema.source.tableName")


class DataWorksJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Alibaba Cloud DataWorks"
    description = "DataWorks real-time sync JSON: schema.dataColumn/primaryKey/source, payload before/after, " \
                  "sequenceId; updates as UPDATE_BEFOR + UPDATE_AFTER pairs"
    capabilities = Capabilities(
        losses=untyped("bit", "date", "datetime", "decimal", "int"),
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.HEARTBEAT, Op.BEGIN,
                       Op.COMMIT}),
        transactions=False,
        messages_per_update=2,
        notes="Six value types only: declared source types are lost (foreign int->LONG, float->DOUBLE, "
              "bool->BOOLEAN, binary->BYTES, timestamp->DATE epoch ms, everything else STRING with the canonical "
              "text); no full-sync marker (SNAPSHOT is written as INSERT); no transaction id. An UPDATE needs its "
              "before image. sequenceId is one number: a multi-part foreign sequence is written as its parts "
              "zero-padded to 20 digits each (order kept, value not).",
    )

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; DataWorks supplies one event per message and its own fix paths.

    def events(self, msg: dict, position: Position) -> list[Event]:
        return [self._event(msg, position)]

    def derive(self, events: list[Event]) -> dict:
        # A present image is the event itself and never compared (``_paths``): derived without its cells.
        return self._message(events[0], cells=False)

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        paths = _paths(msg, derived, ())
        if _self_derived(msg, derived, events[0].columns):
            paths.remove(("schema", "dataColumn"))  # nothing to fix there
        return paths

    def _obj(self, parent: dict, key: str, where: str, position: Position) -> Optional[dict]:
        value = parent.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.error(where, position, "expected an object or null")
        return value

    def _event(self, msg: dict, position: Position) -> Event:
        payload = msg.get("payload")
        if not isinstance(payload, dict):
            raise self.error("payload", position, "expected an object")
        schema = self._obj(msg, "schema", "schema", position) or {}
        source = self._obj(schema, "source", "schema.source", position) or {}
        op_name = payload.get("op")
        if not isinstance(op_name, str):
            raise self.error("payload.op", position, f"expected a string, got {op_name!r}")
        columns = self._columns(schema, position)
        pk = schema.get("primaryKey")
        if pk is not None and not (isinstance(pk, list) and all(isinstance(p, str) for p in pk)):
            raise self.error("schema.primaryKey", position, "expected a list of column names or null")
        names = [c.name for c in columns]
        if not pk and ROW_ID in names:
            pk = [ROW_ID]  # no primary key: the RDS hidden row id is what identifies the row
        timestamp = self._obj(payload, "timestamp", "payload.timestamp", position) or {}
        event_ms = timestamp.get("eventTime")
        if event_ms is not None and not (isinstance(event_ms, JsonNumber) and _EPOCH_MS.fullmatch(event_ms)):
            raise self.error("payload.timestamp.eventTime", position, f"expected epoch milliseconds, got {event_ms!r}")
        seq_id = payload.get("sequenceId")
        sequence: tuple[Decimal, ...] = ()
        if seq_id is not None:
            try:
                if not isinstance(seq_id, str) or not seq_id.strip():
                    raise InvalidOperation
                sequence = (Decimal(seq_id),)
            except InvalidOperation:
                raise self.error("payload.sequenceId", position, f"expected a number as text, got {seq_id!r}") from None
            if not sequence[0].is_finite():
                raise self.error("payload.sequenceId", position, f"expected a number as text, got {seq_id!r}")
        ddl = self._obj(payload, "ddl", "payload.ddl", position) or {}
        ddl_text = ddl.get("text")
        if ddl_text is not None and not isinstance(ddl_text, str):
            raise self.error("payload.ddl.text", position, "expected the DDL statement as text")
        common = dict(
            format=FORMAT, position=position, database=_text(source.get("dbName")),
            schema=_text(source.get("schemaName")), table=_text(source.get("tableName")), columns=columns,
            primary_key=tuple(pk or ()), event_time_ms=int(event_ms) if event_ms is not None else None,
            sequence=sequence, ddl=ddl_text,
            # The RDS hidden row id identifies rows of a table without primary key (merge keys by it).
            row_id_column=ROW_ID if ROW_ID in names else None,
        )
        if op_name in CONTROL_OPS:
            return Event(op=CONTROL_OPS[op_name], **common)
        if op_name in DDL_OPS or op_name == "TRUNCATE":
            return Event(op=Op.TRUNCATE if op_name == "TRUNCATE" else Op.DDL, **common)
        if op_name not in ("INSERT", "DELETE", "UPDATE_BEFOR", "UPDATE_AFTER"):
            raise self.error("payload.op", position, f"unknown op {op_name!r}")
        return self._row(payload, op_name, columns, common, position, seq_id)

    def _columns(self, schema: dict, position: Position) -> tuple[Column, ...]:
        """schema.dataColumn's columns, read once per distinct declaration."""
        key = _declaration_key(schema.get("dataColumn"))
        try:
            cached = _DECLARED.get(key) if key is not None else None
        except TypeError:  # an object or list inside: malformed, ``_read_columns`` names it
            key, cached = None, None
        if cached is None:
            cached = self._read_columns(schema, position)
            if key is not None:
                remember(_DECLARED, key, cached)
        return cached

    def _read_columns(self, schema: dict, position: Position) -> tuple[Column, ...]:
        data_columns = schema.get("dataColumn")
        if data_columns is None:
            return ()
        if not isinstance(data_columns, list):
            raise self.error("schema.dataColumn", position, "expected a list of {name, type}")
        out = []
        for i, col in enumerate(data_columns):
            if not isinstance(col, dict) or not isinstance(col.get("name"), str):
                raise self.error(f"schema.dataColumn[{i}]", position, "expected {name, type}")
            type_name = col.get("type")
            if type_name is not None and not isinstance(type_name, str):
                raise self.error(f"schema.dataColumn[{i}].type", position, f"expected a type name, got {type_name!r}")
            if type_name == "DATE":
                # DataWorks DATE is an instant in epoch ms: declared as timestamp(3) so types.family() gives the
                # "timestamp" family its canonical text has (the name "DATE" would say calendar date)
                out.append(Column(col["name"], DATE_TYPE, JDBC_TIMESTAMP))
                continue
            out.append(Column(col["name"], type_name, None, TYPE_KIND.get(type_name or "") == "num"))
        return tuple(out)

    def _row(self, payload: dict, op_name: str, columns: tuple[Column, ...], common: dict, position: Position,
             seq_id: Optional[str]) -> Event:
        by_name = _by_name(columns)
        images: dict[str, Optional[Image]] = {}
        render: dict[str, dict[str, str]] = {}
        for part in ("before", "after"):
            holder = self._obj(payload, part, f"payload.{part}", position)
            if holder is None:
                images[part] = None
                continue
            cells = holder.get("dataColumn")
            if not isinstance(cells, dict):
                raise self.error(f"payload.{part}.dataColumn", position, "expected an object of column values")
            image: Image = {}
            for col, value in cells.items():
                where = f"payload.{part}.dataColumn.{col}"
                declared = by_name.get(col)
                if declared is None:
                    raise self.error(where, position, "column not declared in schema.dataColumn")
                column, column_kind = declared
                text, kind = self._cell(value, column, where, position)
                image[col] = text
                if text is not None and kind != column_kind:
                    render.setdefault(part, {})[col] = kind
            images[part] = image
        before, after = images["before"], images["after"]
        vendor: dict[str, Any] = {"render": render} if render else {}
        if op_name == "INSERT":
            if after is None:
                raise self.error("payload.after", position, "INSERT without an after image")
            return Event(op=Op.INSERT, before=before, after=after, vendor=vendor, **common)
        if op_name == "DELETE":
            if before is None:
                raise self.error("payload.before", position, "DELETE without a before image")
            return Event(op=Op.DELETE, before=before, after=after, vendor=vendor, **common)
        if before is not None and after is not None:  # one message per update
            return Event(op=Op.UPDATE, before=before, after=after, vendor=vendor, **common)
        index = 0 if op_name == "UPDATE_BEFOR" else 1
        part = "before" if index == 0 else "after"
        if images[part] is None:
            raise self.error(f"payload.{part}", position, f"{op_name} without its {part} image")
        if seq_id is None:
            raise self.error("payload.sequenceId", position,
                             f"{op_name} is half of an update and needs the sequenceId shared with its other half")
        key = f"{_qualified(common)}\x00{seq_id}"
        return Event(op=Op.UPDATE, before=before, after=after, vendor=vendor, fragment_key=key,
                     fragment_index=index, fragment_total=2, **common)

    def _cell(self, value: Any, column: Column, where: str, position: Position) -> tuple[Optional[str], str]:
        if value is None:
            return None, "null"
        if column.type_name == DATE_TYPE and isinstance(value, JsonNumber):
            text = _ms_to_seconds(value)
            if text is not None and _to_json("date", text) == value:
                return text, "date"
        text, kind = cell_text(value)
        if kind == "?":
            raise self.error(where, position, f"unsupported value {value!r}")
        return text, kind

    # ---------------------------------------------------------------------------------------------- assemble

    def assemble(self, fragments: Sequence[Event]) -> Event:
        if not fragments:
            raise self.error("fragment_key", None, "no fragments to assemble")
        first = min(fragments, key=lambda e: (e.position.source, e.position.partition, e.position.offset))
        halves = {e.fragment_index: e for e in fragments}
        if len(fragments) != 2 or set(halves) != {0, 1} or len({e.fragment_key for e in fragments}) != 1:
            found = sorted("UPDATE_BEFOR" if e.fragment_index == 0 else "UPDATE_AFTER" for e in fragments)
            raise self.error("payload.op", first.position,
                             f"an update needs exactly one UPDATE_BEFOR and one UPDATE_AFTER with sequenceId "
                             f"{first.sequence[0] if first.sequence else None}; found {found or 'nothing'}"
                             f" for {first.qualified_table}")
        before_half, after_half = halves[0], halves[1]
        vendor = {
            "halves": [_half_state(before_half), _half_state(after_half)],
            "first": first.fragment_index,
        }
        return replace(after_half, before=before_half.before, after=after_half.after, position=first.position,
                       fragment_key=None, fragment_index=0, fragment_total=1, vendor=vendor)

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out: list[EncodedMessage] = []
        for e in events:
            own = e.format == FORMAT
            if e.op is Op.UPDATE and e.fragment_total == 1 and not (own and "halves" not in e.vendor):
                out.extend(self._pair(e, own))
                continue
            if e.fragment_total != 1 and not own:
                raise EncodeError(FORMAT, "fragment_key", "assemble fragments of other formats before encoding")
            # a lone fragment is written as the half it is; the event is counted on the BEFOR half
            count = 0 if e.fragment_total != 1 and e.fragment_index != 0 else 1
            out.append(self._encoded(e, count))
        return out

    def _pair(self, e: Event, own: bool) -> list[EncodedMessage]:
        if e.before is None:
            raise EncodeError(FORMAT, "payload.before", "DataWorks writes an UPDATE with its before image")
        if own:
            states = e.vendor["halves"]
            halves = [_half_event(e, 0, states[0]), _half_event(e, 1, states[1])]
            order = [0, 1] if e.vendor.get("first", 0) == 0 else [1, 0]
        else:
            if not e.sequence:
                return [self._encoded(e, 1)]  # without a sequenceId a pair cannot be matched: one message
            halves = [e.with_(after=None, fragment_index=0, fragment_total=2),
                      e.with_(before=None, fragment_index=1, fragment_total=2)]
            order = [0, 1]
        return [self._encoded(halves[i], 1 if n == 0 else 0) for n, i in enumerate(order)]

    def _encoded(self, e: Event, count: int) -> EncodedMessage:
        msg = self._message(e, cells=True)
        if e.format == FORMAT and e.vendor.get("fix"):
            apply_fix(msg, e.vendor["fix"])
        return EncodedMessage(jsontext.dumps(self.written(msg, e)), message_key(e), e.qualified_table,
                              msg["payload"]["op"], count)

    def _message(self, e: Event, cells: bool) -> dict[str, Any]:
        """The message the canonical fields describe (for own events, before the vendor fixes); ``cells=False``:
        present images as empty placeholders."""
        own = e.format == FORMAT
        columns = list(e.columns)
        declared = {c.name for c in columns}
        for image in (e.before, e.after):  # a typeless source (Mongo, OMS Default) declares nothing
            for name in image or {}:
                if name not in declared:
                    declared.add(name)
                    columns.append(Column(name))
        source: Optional[dict[str, Any]] = None
        if e.database is not None or e.table is not None or e.schema is not None:
            source = {"dbName": e.database}
            if e.schema is not None:
                source["schemaName"] = e.schema
            source["tableName"] = e.table
        pk = None if e.primary_key in ((), (ROW_ID,)) else list(e.primary_key)
        schema = {
            "dataColumn": [{"name": c.name, "type": _dw_type(c, own)} for c in columns] if columns else None,
            "primaryKey": pk,
            "source": source,
        }
        ts = JsonNumber(str(e.event_time_ms)) if e.event_time_ms is not None else None
        text = statement(e)
        payload: dict[str, Any] = {
            "before": None, "after": None, "sequenceId": _sequence_id(e),
            "timestamp": {"eventTime": ts, "checkpointTime": ts}, "op": self._op_name(e),
            "ddl": {"text": text} if text is not None else None,
        }
        if e.op.is_data:
            types = {c.name: c for c in columns}
            render = e.vendor.get("render", {}) if own else {}
            for part in ("before", "after"):
                image = getattr(e, part)
                if image is None:
                    continue
                if not cells:
                    payload[part] = {"dataColumn": {}}
                    continue
                values = {}
                for col, text in image.items():
                    column = types.get(col) or Column(col)
                    kind = render.get(part, {}).get(col) or _kind(column, own)
                    try:
                        values[col] = _to_json(kind, text)
                    except (ValueError, ArithmeticError) as exc:
                        raise EncodeError(FORMAT, f"payload.{part}.dataColumn.{col}", str(exc)) from None
                payload[part] = {"dataColumn": values}
        return {"schema": schema, "payload": payload, "version": "0.0.1"}

    @staticmethod
    def _op_name(e: Event) -> str:
        if e.op in (Op.INSERT, Op.SNAPSHOT):
            return "INSERT"
        if e.op is Op.DELETE:
            return "DELETE"
        if e.op is Op.UPDATE:
            return "UPDATE_BEFOR" if e.fragment_total == 2 and e.fragment_index == 0 else "UPDATE_AFTER"
        if e.op is Op.TRUNCATE:
            return "TRUNCATE"
        if e.op is Op.DDL:
            return _ddl_op(e.ddl)
        return CONTROL_NAMES[e.op]


# ------------------------------------------------------------------------------------------------ helpers


def _paths(original: dict, derived: dict, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Key paths to compare for the vendor fixes: images only where the canonical image is None (null vs
    absent), and the NESTED objects key by key."""
    paths: list[tuple[str, ...]] = []
    for key in dict.fromkeys([*original, *derived]):
        path = (*prefix, key)
        if path in (("payload", "before"), ("payload", "after")) and derived.get(key) is not None:
            continue
        o, d = original.get(key), derived.get(key)
        if path in NESTED and isinstance(o, dict) and isinstance(d, dict):
            paths.extend(_paths(o, d, path))
        else:
            paths.append(path)
    return paths


def _declaration_key(data_columns: Any) -> Optional[tuple]:
    """Everything the columns of schema.dataColumn depend on: each entry's items with their JSON types
    (``JsonNumber("1")`` equals ``"1"``: a cached success must never hide a malformed declaration); None for a
    declaration that is not a list of objects (``_read_columns`` reads or names it)."""
    if type(data_columns) is not list:
        return None
    key = []
    for col in data_columns:
        if type(col) is not dict:
            return None
        key.append((tuple(col.items()), tuple(map(type, col.values()))))
    return tuple(key)



def _self_derived(msg: dict, derived: dict, columns: tuple[Column, ...]) -> bool:
    """Whether the message's schema.dataColumn is exactly what the encoder derives from ``columns``, compared once
    per columns tuple (one per distinct declaration: ``_columns``); not the empty tuple, which Python shares."""
    hit = _SELF_DERIVED.get(id(columns)) if columns else None
    if hit is not None and hit[0] is columns:
        return hit[1]
    schema, derived_schema = msg.get("schema"), derived.get("schema")
    same = (isinstance(schema, dict) and "dataColumn" in schema and isinstance(derived_schema, dict)
            and same_json(schema["dataColumn"], derived_schema.get("dataColumn")))
    if columns:
        remember(_SELF_DERIVED, id(columns), (columns, same))  # holds the tuple, so its id stays unique
    return same


def _by_name(columns: tuple[Column, ...]) -> dict[str, tuple[Column, str]]:
    """Each declared column and how its values are written (``_kind``), once per columns tuple."""
    hit = _BY_NAME.get(id(columns))
    if hit is not None and hit[0] is columns:
        return hit[1]
    by_name = {c.name: (c, _kind(c, True)) for c in columns}
    remember(_BY_NAME, id(columns), (columns, by_name))  # holds the tuple, so its id stays unique
    return by_name


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _qualified(common: dict) -> str:
    return ".".join(p for p in (common["database"], common["schema"], common["table"]) if p)


def _kind(column: Column, own: bool) -> str:
    """How a value of this column is written: from its DataWorks type, else from its family (foreign)."""
    dw_type = _dw_type(column, own)
    kind = TYPE_KIND.get(dw_type, "str")
    return "num" if kind == "str" and column.number else kind


def _dw_type(column: Column, own: bool) -> Optional[str]:
    if own and column.type_name != DATE_TYPE:
        return column.type_name
    fam = family(column.type_name, column.jdbc_type)
    if column.number and fam not in FAMILY_TYPE:
        return "DOUBLE"  # a typeless source (OMS Default) that wrote the value as a number
    return FAMILY_TYPE.get(fam, "STRING")


def _ms_to_seconds(ms: str) -> Optional[str]:
    """Epoch milliseconds -> epoch seconds text, exactly ("1590315269000" -> "1590315269")."""
    try:
        d = Decimal(ms).scaleb(-3)
    except (InvalidOperation, Overflow):  # not a number, or an exponent beyond any context (1E+2147483648)
        return None
    if d == d.to_integral_value():
        return format(d.to_integral_value(), "f")
    return format(d.normalize(), "f")


def _to_json(kind: str, text: Optional[str]) -> Any:
    if text is not None and kind == "date":
        if not re.fullmatch(r"-?\d+(\.\d+)?", text):
            raise ValueError(f"{text!r} is not epoch seconds (the canonical timestamp form)")
        return JsonNumber(format(Decimal(text).scaleb(3), "f"))
    return cell_json(kind, text)


def _sequence_id(e: Event) -> Optional[str]:
    if not e.sequence:
        return None
    if len(e.sequence) == 1:
        return format(e.sequence[0], "f")
    parts = []
    for part in e.sequence:
        if part != part.to_integral_value() or part < 0 or len(format(part, "f")) > 20:
            raise EncodeError(FORMAT, "payload.sequenceId", f"cannot pack sequence {e.sequence} into one number")
        parts.append(format(part.copy_abs(), "f").zfill(20))  # -0 is 0: a sign inside the digits reads as no number
    return "".join(parts)


def _ddl_op(ddl: Optional[str]) -> str:
    words = (ddl or "").upper().split()
    first = words[0] if words else ""
    if first == "CREATE":
        return "CINDEX" if "INDEX" in words[1:3] else "CREATE"
    if first == "DROP":
        return "DINDEX" if "INDEX" in words[1:2] else "ERASE"
    return {"ALTER": "ALTER", "RENAME": "RENAME", "TRUNCATE": "TRUNCATE"}.get(first, "QUERY")


def _half_state(e: Event) -> dict[str, Any]:
    """What differs per half of a two-message update (each half's own metadata and vendor fixes)."""
    return {
        "vendor": dict(e.vendor),
        "event_time_ms": e.event_time_ms,
        "columns": [[c.name, c.type_name, c.number] for c in e.columns],
        "source": e.position.source, "partition": e.position.partition, "offset": e.position.offset,
    }


def _half_event(e: Event, index: int, state: dict[str, Any]) -> Event:
    columns = tuple(Column(n, t, None, bool(num)) for n, t, num in state["columns"])
    return e.with_(before=e.before if index == 0 else None, after=e.after if index == 1 else None,
                   columns=columns, event_time_ms=state["event_time_ms"], vendor=state["vendor"],
                   fragment_index=index, fragment_total=2)


CODEC = DataWorksJsonCodec()
