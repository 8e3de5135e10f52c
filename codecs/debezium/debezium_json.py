"""Debezium change-event envelope as JSON (Kafka Connect JsonConverter), as Debezium and CloudCanal write it.

A message is ``{"schema": ..., "payload": ...}`` (``schemas.enable=true``), the bare payload
(``schemas.enable=false``) or ``{"payload": ...}``; which one is kept in ``vendor["envelope"]`` and reproduced.
The payload is one of:

* a row change: ``op`` r (snapshot read) / c / u / d / t (truncate) / m (logical decoding message), plus
  CloudCanal's ``i`` (insert) and ``a`` (alter, with ``ddl``); ``before``/``after`` images, ``source`` position.
* a schema change (``ddl`` + ``tableChanges``, no ``op``) -> DDL;
* a transaction marker (``status`` BEGIN/END) -> BEGIN/COMMIT;
* a heartbeat (``{"ts_ms": ...}`` only) -> HEARTBEAT.

``op: m`` (PostgreSQL ``pg_logical_emit_message``) changes no table row, so it becomes a HEARTBEAT control event
whose prefix/content stay in the vendor data: verify accounts for it, merge ignores it, re-encode restores it.
A Kafka tombstone (empty value, or ``payload: null``) follows every delete for log compaction and carries no
change: it decodes to no event (documented, not an error).

Ordering (``sequence``) is the connector's own position from ``payload.source`` (``_connector_position``:
MySQL/MariaDB file number, pos, row, with ``file: ""``/``pos: 0`` in snapshots; PostgreSQL ``sequence``
[lastCommitLsn, lsn] else ``lsn``; SQL Server/Db2 commit_lsn, change_lsn, event_serial_no; Oracle commit_scn,
scn; MongoDB ts_ms, ord), then ``source.ts_ms``; the archive position breaks the remaining ties.
``source.ts_ms`` (else ``payload.ts_ms``) is the event time. The primary key is not in the value: it is read
from the Kafka record key (``Position.key``) when there is one.

MongoDB: ``after``/``before`` are the document as an Extended-JSON string; it decodes field by field (nested
values as JSON text), ``source.collection`` is the table, the record key's ``id`` is the ``_id`` column, and the
string is re-encoded verbatim while the image is unchanged (``vendor["documents"]``).

PostgreSQL's default REPLICA IDENTITY: an UPDATE without ``before`` is keyed by ``after``; a DELETE without a
before image takes the key values from the record key, and without those it is a ``DecodeError`` (dead letter)
whose reason names the fix (REPLICA IDENTITY FULL), because applying it would delete nothing or the wrong row.

Typed values: with a ``schema`` part, values are converted exactly to canonical text where the schema says how:
``org.apache.kafka.connect.data.Decimal`` (base64 two's-complement unscaled bytes, ``scale`` parameter),
``io.debezium.data.VariableScaleDecimal``, ``io.debezium.time.{Date,Time,MicroTime,NanoTime,Timestamp,
MicroTimestamp,NanoTimestamp,ZonedTimestamp,ZonedTime}`` (and the Kafka Connect Date/Time/Timestamp),
``io.debezium.data.Bits``, ``io.debezium.data.geometry.{Geometry,Geography,Point}`` (WKB base64; a non-null SRID travels
in ``vendor["render"]``), ``boolean``. ``io.debezium.data.{Json,Uuid,Enum,EnumSet,Xml}`` are strings and stay
so. Without a schema part the types are not in the message: values are kept as written (numbers verbatim,
strings as is), so a replay is exact only with the string-valued connector modes (see capabilities notes). Every conversion is checked to re-encode to the exact received JSON;
a value that would not (an unusual spelling) is kept as its raw text instead, so re-encode is always lossless.

Foreign events (another format's) are written with a schema part built from their declared column types
(``_foreign_fields``), the way a connector with ``column.propagate.source.type`` writes them.

Lossless re-encode uses the shared derive/fix scheme (``shared/json_fix.py``): the encoder derives the payload from the canonical
event, and ``vendor["fix"]`` holds the payload keys (``source`` key by key) where the received one differs.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import struct
from datetime import date
from decimal import Decimal
from typing import Any, Optional, Sequence

import orjson

from .. import jsontext
from ..base import Capabilities, Codec, EncodedMessage, message_key, untyped
from ..shared.declared_rows import ConnectSchema, DeclaredRows, Envelope, PositionRule, Positions
from ..shared.json_fix import apply_fix, literal, same_json, unliteral
from ..shared.value_text import cell_json, cell_text
from ..event import Column, DecodeError, EncodeError, Event, Op, Position
from .connect_schema import schema_problem
from .schema_prefix import SchemaPrefixes
from ..jsontext import JsonNumber
from ..shared.required import OBJECT, STRING, Required, need, same_needs
from ..types import JDBC, decimal_precision_scale, family

FORMAT = "debezium-json"
OPS = {"r": Op.SNAPSHOT, "c": Op.INSERT, "i": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE, "t": Op.TRUNCATE,
       "m": Op.HEARTBEAT, "a": Op.DDL}
OP_CODES = {Op.SNAPSHOT: "r", Op.INSERT: "c", Op.UPDATE: "u", Op.DELETE: "d", Op.TRUNCATE: "t"}

# Schema ``name`` -> conversion kind. Kinds not listed here are the JSON renderings "num", "str", "bool", "json".
LOGICAL_KINDS = {
    "org.apache.kafka.connect.data.Decimal": "decimal",
    "io.debezium.data.VariableScaleDecimal": "vsdecimal",
    "io.debezium.time.Date": "date",
    "org.apache.kafka.connect.data.Date": "date",
    "io.debezium.time.Time": "time3",
    "org.apache.kafka.connect.data.Time": "time3",
    "io.debezium.time.MicroTime": "time6",
    "io.debezium.time.NanoTime": "time9",
    "io.debezium.time.Timestamp": "ts3",
    "org.apache.kafka.connect.data.Timestamp": "ts3",
    "io.debezium.time.MicroTimestamp": "ts6",
    "io.debezium.time.NanoTimestamp": "ts9",
    "io.debezium.time.ZonedTimestamp": "zts",
    "io.debezium.time.ZonedTime": "ztime",
    "io.debezium.data.Bits": "bits",
    "io.debezium.data.geometry.Geometry": "geometry",
    "io.debezium.data.geometry.Geography": "geometry",
    "io.debezium.data.geometry.Point": "point",
}
# Declared type -> java.sql.Types, so types.family() classifies Connect/Debezium type names correctly.
LOGICAL_JDBC = {
    "decimal": JDBC["DECIMAL"], "vsdecimal": JDBC["DECIMAL"], "date": JDBC["DATE"], "time3": JDBC["TIME"],
    "time6": JDBC["TIME"], "time9": JDBC["TIME"], "ts3": JDBC["TIMESTAMP"], "ts6": JDBC["TIMESTAMP"],
    "ts9": JDBC["TIMESTAMP"], "zts": JDBC["TIMESTAMP_WITH_TIMEZONE"], "ztime": JDBC["TIME_WITH_TIMEZONE"],
    "bits": JDBC["BIT"], "geometry": JDBC["OTHER"], "point": JDBC["OTHER"],
}
CONNECT_JDBC = {"int8": JDBC["TINYINT"], "int16": JDBC["SMALLINT"], "int32": JDBC["INTEGER"],
                "int64": JDBC["BIGINT"], "float32": JDBC["REAL"], "float64": JDBC["DOUBLE"],
                "boolean": JDBC["BOOLEAN"], "string": JDBC["VARCHAR"], "bytes": JDBC["VARBINARY"]}
SOURCE_TYPE = "__debezium.source.column.type"  # column.propagate.source.type: the declared source type
LOGICAL_JDBC["epoch_zts"] = JDBC["TIMESTAMP"]
CONVERSIONS = frozenset(LOGICAL_JDBC)
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DATETIME = re.compile(r"(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")
_TIME = re.compile(r"(-)?(\d{2,}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")
_ZONED = re.compile(r"(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:\d{2}(?::\d{2})?)\Z")
_ZONED_TIME = re.compile(r"(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:\d{2}(?::\d{2})?)\Z")
_CANON_ZONED = re.compile(r"(\d{4,}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) (\S+)\Z")
_CANON_ZONED_TIME = re.compile(r"(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) (\S+)\Z")


# Keys of a change/schema-change/transaction payload: a message holding one of them is a bare payload.
_PAYLOAD_KEYS = frozenset({"op", "before", "after", "source", "ddl", "status", "tableChanges"})


def _enveloped(msg: dict) -> bool:
    """Whether the message is JsonConverter's ``{"schema", "payload"}`` envelope rather than a bare payload."""
    return "payload" in msg and msg.keys().isdisjoint(_PAYLOAD_KEYS)


class _Unnamed(ValueError):
    """A database/schema/table name in ``source`` that is not text."""


class _Unconvertible(ValueError):
    """A value that does not have the shape its schema announces; the caller keeps the raw text."""


def _as_payload(msg: dict) -> dict:
    """The change payload under the name the codec's errors give it, enveloped or bare."""
    return {"payload": msg["payload"] if _enveloped(msg) else msg}


def _change_op(msg: dict) -> Optional[str]:
    payload = msg["payload"]
    op_code = payload.get("op") if isinstance(payload, dict) else None
    return op_code if op_code in OPS and OPS[op_code].is_data else None


# A change names its table in source (source.table, MongoDB: source.collection); a create or read carries its
# after image. (A MongoDB update may carry updateDescription instead of after; a delete's before image may be
# absent: MongoDB keys it by the record key, PostgreSQL by its replica identity.)
_CHANGE_NEEDS = (need("payload.source", OBJECT),)
REQUIRED = Required(_change_op, {
    **same_needs(("c", "r"), *_CHANGE_NEEDS, need("payload.after", OBJECT, STRING)),
    **same_needs(("u", "d"), *_CHANGE_NEEDS),
}, table="payload.source.table", subject=_as_payload)


class DebeziumJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Debezium (Red Hat) / CloudCanal"
    description = "Debezium envelope JSON: payload before/after/source/op, optional Kafka Connect schema"
    capabilities = Capabilities(
        losses=untyped("timestamp"),
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset(Op),
        transactions=True,
        notes="Before images are full for MySQL; PostgreSQL sends them only with REPLICA IDENTITY FULL. The "
              "primary key comes from the Kafka record key. Foreign rows are written with the schema part, as a "
              "connector writes them (decimal.handling.mode=precise, adaptive time precision, bytes, "
              "column.propagate.source.type), so the declared types travel; a value its typed form cannot hold "
              "is written in a string field; a foreign sequence that is not a Debezium position is not carried. With the schema part every logical type "
              "(Decimal, VariableScaleDecimal, io.debezium.time.*, Bits, geometry) decodes exactly. Without it "
              "(schemas.enable=false) types are unknown and values are kept as the producer wrote them: exact "
              "for decimal.handling.mode=string, binary.handling.mode=base64 and time.precision.mode=isostring; "
              "with the numeric modes a date/time stays its epoch number and precise decimals stay base64 "
              "(declared loss). A PostgreSQL DELETE with neither a before image nor a record key is a dead "
              "letter (set REPLICA IDENTITY FULL at the source).",
    )

    # The declared JVM decode takes a row change whose cells are written as their Connect fields say, in the one
    # spelling each conversion writes back (geometries, and cells kept as written, are the codec's), in any envelope,
    # positioned as its connector writes positions (a MongoDB document is the codec's), its primary key named by the
    # Kafka record's key.
    jvm_declaration = DeclaredRows(
        op=("op", {code: op.value for code, op in OPS.items() if op.is_data}),
        images=(("before", "before"), ("after", "after")),
        reads={"database": ("source.db", "text"), "schema": ("source.schema", "text"),
               "table": ("source.table", "text"), "millis": ("source.ts_ms|ts_ms", "integer"),
               "transaction_id": ("transaction.id|source.gtid|source.txId", "scalar")},
        writes={"before": "null", "after": "null", "source.db": "database", "source.table": "table",
                "source.ts_ms": "millis_number_or_null", "source.schema": "schema_if_any", "op": "op",
                "ts_ms": "millis_number_or_null", "transaction": "transaction_object"},
        nested=("source",), schema_level=True, names_stripped=True, compare_unwritten_images=True,
        envelope=Envelope("payload", "schema", "envelope", tuple(sorted(_PAYLOAD_KEYS))),
        connect_schema=ConnectSchema(("before", "after"), SOURCE_TYPE, LOGICAL_KINDS, LOGICAL_JDBC, CONNECT_JDBC,
                                     {**dict.fromkeys(("int8", "int16", "int32", "int64", "float32", "float64"), "num"),
                                      "boolean": "bool", **dict.fromkeys(("struct", "array", "map"), "json")},
                                     "decimal", "connect.decimal.precision", ("zts", "timestamp", "epoch_zts")),
        positions=Positions("source", "connector", "ts_ms", (  # _connector_position's rules, in its order
            PositionRule("binlog", ("mysql", "mariadb"), (("file", "pos"),), ("file", "pos", "row")),
            PositionRule("lsn", ("postgresql",), (("lsn",),), ("sequence", "lsn")),
            PositionRule("hex_lsns", ("sqlserver", "db2"), (("change_lsn",), ("commit_lsn",)),
                         ("commit_lsn", "change_lsn", "event_serial_no")),
            PositionRule("scn", ("oracle",), (("scn",),), ("scn", "commit_scn")),
            PositionRule("codec", ("mongodb",), (("ord",),), ()))),
        record_key_names=True, needs_under="payload")

    def __init__(self) -> None:
        self.schema_prefixes = SchemaPrefixes()  # the Connect schema texts messages open with (parsed once each)

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; Debezium's differences: a tombstone decodes to nothing, and the fixes
    # are relative to the payload inside the JsonConverter envelope (the envelope is kept in the vendor data).

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        if raw is None or not bytes(raw).strip():
            return []  # Kafka tombstone: no change to decode
        return super().decode(raw, position)

    def json_object(self, raw: bytes, position: Position) -> dict:
        """The message parsed; a message opening with a Connect schema seen before has its payload parsed alone
        (``schema_prefix``)."""
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return super().json_object(raw, position)
        known = self.schema_prefixes.parse(text)
        if known is not None:
            return known
        msg = super().json_object(text, position)
        self.schema_prefixes.learn(text, msg)
        return msg

    def fix_subject(self, msg: dict) -> dict:
        return msg["payload"] if _enveloped(msg) else msg

    def derive(self, events: list[Event]) -> dict:
        return self._payload(events[0], with_cells=False)

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        return payload_fix_paths(msg, derived)

    def events(self, msg: dict, position: Position) -> list[Event]:
        extra: dict[str, Any] = {}
        if _enveloped(msg):
            envelope = "schema" if "schema" in msg else "payload"
            schema, payload = msg.get("schema"), msg["payload"]
            # keys a newer converter adds beside schema/payload are kept, so re-encode does not lose them
            extra = {k: literal(v) for k, v in msg.items() if k not in ("schema", "payload")}
            if payload is None:
                return []  # JsonConverter's rendering of a tombstone
        else:
            envelope, schema, payload = "bare", None, msg
        if not isinstance(payload, dict):
            raise self.error("payload", position, "expected an object")
        schema_text = self.schema_prefixes.text_of(schema) if schema is not None else None
        problem = _schema_problem(schema_text) if schema_text is not None else None
        if problem:
            raise self.error(problem[0], position, problem[1])
        kept: dict[str, Any] = {"envelope": envelope}
        if envelope == "schema":
            kept["schema"] = schema_text
        if extra:
            kept["envelope_extra"] = extra
        return [self._event(payload, schema_text, position, kept)]

    def _name(self, value: Any, field: str, position: Position) -> Optional[str]:
        try:
            return _opt_text(value)
        except _Unnamed:
            raise self.error(field, position, f"expected a name as text, got {str(value)[:60]!r}") from None

    def _event(self, payload: dict, schema_text: Optional[str], position: Position,
               envelope: dict[str, Any]) -> Event:
        """The event of one payload; ``schema_text`` is the exact JSON text of its (checked) Connect schema,
        ``envelope`` the vendor entries the message's envelope keeps (they follow the event's own entries)."""
        source = payload.get("source")
        if source is not None and not isinstance(source, dict):
            raise self.error("payload.source", position, "expected an object")
        source = source or {}
        common = dict(
            format=self.name, position=position,
            database=self._name(source.get("db"), "payload.source.db", position),
            schema=self._name(source.get("schema"), "payload.source.schema", position),
            table=self._name(source.get("table") or source.get("collection"),  # MongoDB names a collection
                             "payload.source.table", position),
            event_time_ms=self._time(payload, source, position),
            sequence=self._sequence(source, position),
            transaction_id=payload_transaction_id(payload, source),
            vendor=envelope,
        )
        op_code = payload.get("op")
        if op_code is None:
            if "ddl" in payload or "tableChanges" in payload:
                return self._ddl(payload, position, common)
            status = payload.get("status")
            if status in ("BEGIN", "END"):
                tid = payload.get("id")
                common["transaction_id"] = str(tid) if tid is not None else None
                return Event(op=Op.BEGIN if status == "BEGIN" else Op.COMMIT, **common)
            if "ts_ms" in payload and not any(k in payload for k in ("before", "after", "source")):
                # a heartbeat ({"ts_ms": ...}; keys a newer version adds are kept by the fixes)
                return Event(op=Op.HEARTBEAT, **common)
            raise self.error("payload.op", position, "missing: not a change, schema change, transaction or "
                                                     "heartbeat payload")
        if not isinstance(op_code, str) or op_code not in OPS:
            raise self.error("payload.op", position, f"unknown op {op_code!r} (expected one of {sorted(OPS)})")
        op = OPS[op_code]
        if op is Op.DDL:
            return self._ddl(payload, position, common)
        if not op.is_data:
            return Event(op=op, **common)
        return self._row(payload, schema_text, op, position, common)

    def _time(self, payload: dict, source: dict, position: Position) -> Optional[int]:
        for where, value in (("payload.source.ts_ms", source.get("ts_ms")), ("payload.ts_ms", payload.get("ts_ms"))):
            if value is None:
                continue
            if not (isinstance(value, str) and _INTEGER.fullmatch(value)):
                raise self.error(where, position, f"expected epoch milliseconds, got {value!r}")
            return int(value)
        return None

    def _sequence(self, source: dict, position: Position) -> tuple[Decimal, ...]:
        """The connector's own position (``source.connector``, else recognised by its fields), then ``ts_ms``;
        the archive position breaks the remaining ties (``Event.order_key``)."""
        connector = str(source.get("connector") or "").lower()
        try:
            parts = _connector_position(connector, source)
        except _BadPosition as exc:
            raise self.error(f"payload.source.{exc.field}", position,
                             f"{connector or 'connector'} position: {exc}") from None
        except (ArithmeticError, ValueError) as exc:
            raise self.error("payload.source", position, f"{connector or 'connector'} position: {exc}") from None
        ts = source.get("ts_ms")
        if parts and isinstance(ts, JsonNumber) and _INTEGER.fullmatch(ts):
            parts = (*parts, Decimal(ts))
        return parts

    def _ddl(self, payload: dict, position: Position, common: dict) -> Event:
        ddl = payload.get("ddl")
        if ddl is not None and not isinstance(ddl, str):
            raise self.error("payload.ddl", position, "expected the DDL statement as a string")
        if payload.get("databaseName"):
            common["database"] = self._name(payload["databaseName"], "payload.databaseName", position)
        if payload.get("schemaName"):
            common["schema"] = self._name(payload["schemaName"], "payload.schemaName", position)
        return Event(op=Op.DDL, ddl=ddl, **common)

    def _row(self, payload: dict, schema_text: Optional[str], op: Op, position: Position, common: dict) -> Event:
        fields = _literal_fields(schema_text) if schema_text is not None else {}
        field_kinds = _literal_kinds(schema_text) if schema_text is not None else {}
        numbers: set[str] = set()  # columns with a value written as a bare number
        images, render = {}, {}
        documents: dict[str, str] = {}
        odd = False  # a cell rendered otherwise than its field's kind says: the deviations are worked out
        for part in ("before", "after"):
            raw = payload.get(part)
            if raw is None:
                images[part] = None
                continue
            if isinstance(raw, str):  # the MongoDB connector writes a document as an Extended-JSON string
                documents[part] = raw
                raw = _document(raw)
                if raw is None:
                    raise self.error(f"payload.{part}", position, "expected an object of column values or a "
                                                                  "(MongoDB) Extended-JSON document string")
            if not isinstance(raw, dict):
                raise self.error(f"payload.{part}", position, "expected an object of column values")
            if not raw and (op in (Op.SNAPSHOT, Op.INSERT) and part == "before" or op is Op.DELETE and part == "after"):
                images[part] = None  # CloudCanal writes {} for the image an insert/delete does not have
                continue
            image, kinds = {}, {}
            for col, value in raw.items():
                expected = field_kinds.get(col)
                # most cells need no conversion: their JSON rendering, as _cell gives it for these kinds
                if expected is None or expected in _PLAIN_KINDS:
                    text, kind = cell_text(value)
                else:
                    text, kind = _cell(value, fields[col], expected)
                if kind == "?":
                    raise self._unsupported(f"payload.{part}.{col}", value, position)
                image[col] = text
                if text is not None:
                    kinds[col] = kind
                    if kind == "num":
                        numbers.add(col)
                    if kind != expected:  # a column without a field, or a value kept as written
                        odd = True
            images[part] = image
            render[part] = kinds
        columns = _columns(schema_text, fields, images, numbers)
        deviations = {}
        for part, kinds in render.items() if odd else ():
            # the kind _expected_kind gives: the schema's, else by how the column's values were written
            dev = {col: kind for col, kind in kinds.items()
                   if kind != field_kinds.get(col, "num" if col in numbers else "str")}
            if dev:
                deviations[part] = dev
        primary_key = _key_columns(position.key)
        source = payload.get("source") if isinstance(payload.get("source"), dict) else {}
        if (documents or source.get("connector") == "mongodb") and primary_key == ("id",):
            primary_key = ("_id",)  # MongoDB: the record key's "id" is the document's _id
        vendor: dict[str, Any] = {"render": deviations} if deviations else {}
        if documents:
            vendor["documents"] = documents  # re-encoded verbatim while the image is unchanged
        before = self._keyable(op, images, primary_key, position, vendor)
        common["vendor"] = {**vendor, **common["vendor"]}
        return Event(op=op, before=before, after=images["after"], columns=columns, primary_key=primary_key, **common)

    def _keyable(self, op: Op, images: dict, primary_key: tuple[str, ...], position: Position,
                 vendor: dict) -> Optional[dict]:
        """PostgreSQL with the default REPLICA IDENTITY sends no before image on UPDATE (fine: the key is in
        ``after``) and, with REPLICA IDENTITY NOTHING or no primary key, a DELETE that names no row. Such a
        delete cannot be applied: it is refused (dead letter) instead of deleting nothing or the wrong row. When
        the before image is missing but the record key holds the key values, the key is the before image."""
        before, after = images["before"], images["after"]
        fix = "at the source, ALTER TABLE ... REPLICA IDENTITY FULL (or give the table a primary key)"
        if op is Op.DELETE:
            key_image = self._key_image(position)
            if before is None and key_image:
                vendor["before_from_key"] = True
                return key_image
            if before is None or not any(v is not None for v in before.values()):
                raise self.error("payload.before", position,
                                 "DELETE without a before image or record key: the deleted row cannot be identified "
                                 f"(PostgreSQL's default REPLICA IDENTITY did not log it); {fix}")
            if primary_key and any(before.get(k) is None for k in primary_key) and not key_image:
                raise self.error("payload.before", position,
                                 f"DELETE before image lacks key columns {list(primary_key)}; {fix}")
        elif op is Op.UPDATE and before is None and primary_key:
            if after is None or any(after.get(k) is None for k in primary_key):
                raise self.error("payload.after", position,
                                 f"UPDATE without a before image whose after image lacks key columns "
                                 f"{list(primary_key)}; {fix}")
        return before

    def _key_image(self, position: Position) -> Optional[dict]:
        """Key column values from the Kafka record key (``{"id": 7}`` or with a Connect schema), as canonical
        text; None when the key is absent or not such JSON."""
        if not position.key:
            return None
        try:
            obj, _ = jsontext.loads(position.key)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        fields: dict[str, dict] = {}
        if isinstance(obj, dict) and "payload" in obj and set(obj) <= {"schema", "payload"}:
            schema = obj.get("schema")
            if schema is not None and schema_problem(schema, "key.schema"):
                return None  # not a Connect key: like a key that is not JSON, it names no key values
            for f in (schema or {}).get("fields") or ():
                if isinstance(f, dict) and isinstance(f.get("field"), str):
                    fields[f["field"]] = f
            obj = obj["payload"]
        if not isinstance(obj, dict) or not obj:
            return None
        image = {}
        for col, value in obj.items():
            if col == "id" and isinstance(value, str) and _document(value) is not None:
                col, value = "_id", _document(value)  # MongoDB key: {"id": "<_id as Extended JSON>"}
            field = fields.get(col)
            text, kind = _cell(value, field, _expected_kind(field, None, True))
            if kind == "?":
                raise self._unsupported(f"key.{col}", value, position)
            image[col] = text
        return image if any(v is not None for v in image.values()) else None

    def _unsupported(self, where: str, value: Any, position: Position) -> DecodeError:
        return self.error(where, position, f"unsupported value {value!r}")

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for e in events:
            if e.fragment_total != 1:
                raise EncodeError(self.name, "fragment_key", "assemble fragments before encoding")
            own = e.format == self.name
            if not own:
                _identifies_its_row(self.name, e)
            foreign, rendered = (None, None) if own or not e.op.is_data else _foreign_fields(e)
            payload = self._payload(e, foreign, rendered)
            if own and e.vendor.get("fix"):
                apply_fix(payload, e.vendor["fix"])
            # a foreign data event gets its schema even without columns (empty images): Avro needs one
            msg = self.written(self.enveloped(e, payload, None if foreign is None else _envelope_schema(e, foreign)), e)
            op = payload.get("op") if isinstance(payload.get("op"), str) else e.op.value
            out.append(EncodedMessage(jsontext.dumps(msg), self._key(e, own), e.qualified_table, op))
        return out

    def enveloped(self, e: Event, payload: dict, schema: Optional[dict] = None) -> dict:
        """The message around a payload: an own event's JsonConverter envelope as received (with the keys a newer
        converter added); another's with ``schema`` when given, else the bare payload."""
        own = e.format == self.name
        envelope = e.vendor.get("envelope", "bare") if own else ("schema" if schema is not None else "bare")
        if schema is not None:
            msg: dict[str, Any] = {"schema": schema, "payload": payload}
        elif envelope == "schema":
            # JsonConverter writes "schema": null for a record without a value schema
            kept = e.vendor.get("schema")
            msg = {"schema": None if kept is None else unliteral(kept), "payload": payload}
        elif envelope == "payload":
            msg = {"payload": payload}
        else:
            msg = payload
        if own and envelope != "bare" and e.vendor.get("envelope_extra"):
            msg.update({k: unliteral(v) for k, v in e.vendor["envelope_extra"].items()})
        return msg

    def _key(self, e: Event, own: bool) -> Optional[bytes]:
        if own and e.position.key is not None:
            return e.position.key
        image = e.after if e.after is not None else e.before
        if e.primary_key and image is not None and all(k in image for k in e.primary_key):
            by_name = {c.name: c for c in e.columns}
            return jsontext.dumps({k: _to_json(_expected_kind(None, by_name.get(k), False), image[k], {})
                                   for k in e.primary_key})
        return message_key(e)

    def _payload(self, e: Event, foreign: Optional[dict[str, dict]] = None,
                 rendered: Optional[dict[tuple[str, str], Any]] = None, with_cells: bool = True) -> dict[str, Any]:
        """The payload the canonical fields describe (own events: before vendor fixes are applied; foreign
        events: rendered by the field schemas ``_foreign_fields`` chose, which also hands over the cells it
        rendered while choosing them, as ``rendered``). ``with_cells=False`` (decode's derivation) puts the canonical
        image where the encoder writes one: ``payload_fix_paths`` never compares such an image, because decode
        (``_cell``) kept only renderings that re-encode to the exact received cell, so rendering them again
        (a fifth of decode's time) would decide nothing."""
        own = e.format == self.name
        ts = JsonNumber(str(e.event_time_ms)) if e.event_time_ms is not None else None
        source: dict[str, Any] = {"db": e.database, "table": e.table, "ts_ms": ts}
        if e.schema is not None:
            source["schema"] = e.schema
        if e.op is Op.HEARTBEAT:
            return {"ts_ms": ts}
        if e.op in (Op.BEGIN, Op.COMMIT):
            return {"status": "BEGIN" if e.op is Op.BEGIN else "END", "id": e.transaction_id, "ts_ms": ts}
        if e.op is Op.DDL:
            payload = {"source": source, "databaseName": e.database, "ddl": e.ddl, "tableChanges": [], "ts_ms": ts}
            if e.schema is not None:
                payload["schemaName"] = e.schema
            return payload
        payload = {"before": None, "after": None, "source": source, "op": OP_CODES[e.op], "ts_ms": ts}
        if e.transaction_id is not None:
            payload["transaction"] = {"id": e.transaction_id}
        if not e.op.is_data:
            return payload
        if not with_cells:
            for part in ("before", "after"):
                image = getattr(e, part)
                if image is not None and not (part == "before" and own and e.vendor.get("before_from_key")):
                    payload[part] = image
            return payload
        fields = _literal_fields(e.vendor["schema"]) if own and e.vendor.get("schema") else (foreign or {})
        by_name = {c.name: c for c in e.columns}
        render = e.vendor.get("render", {}) if own else {}
        for part in ("before", "after"):
            image = getattr(e, part)
            if image is None or (part == "before" and own and e.vendor.get("before_from_key")):
                continue
            kinds = render.get(part, {})
            cells = {}
            for col, text in image.items():
                if rendered is not None and (part, col) in rendered:
                    cells[col] = rendered[part, col]
                    continue
                kind = kinds.get(col) or _expected_kind(fields.get(col), by_name.get(col), own or bool(foreign))
                try:
                    cells[col] = _to_json(kind, text, fields.get(col) or {})
                except (ValueError, ArithmeticError) as exc:
                    raise EncodeError(self.name, f"payload.{part}.{col}", str(exc)) from None
            payload[part] = cells
            original = (e.vendor.get("documents") or {}).get(part) if own else None
            if original is not None:  # MongoDB: the document string as received, or one built from the image
                same = {k: _generic(v)[0] for k, v in (_document(original) or {}).items()} == image
                payload[part] = original if same else jsontext.dumps(cells).decode()
        return payload


# ------------------------------------------------------------------------------------- foreign events' schema


# Cached: a table's few columns are asked about once per foreign event. Callers must not change the dict.
@functools.lru_cache(maxsize=4096)
def _connect_field(c: Column) -> dict:
    """The Connect field a Debezium connector would write for a column of this declared type (its type mapping
    with decimal.handling.mode=precise, time.precision.mode=adaptive(_time_microseconds),
    binary.handling.mode=bytes, column.propagate.source.type on), so a consumer reads typed values."""
    fam = family(c.type_name, c.jdbc_type)
    params: dict[str, str] = {SOURCE_TYPE: c.type_name} if c.type_name else {}
    field: dict[str, Any] = {"type": "string", "optional": True, "field": c.name}
    digits = re.search(r"\((\d)\)", c.type_name or "")
    nano = bool(digits) and int(digits.group(1)) > 6
    t = (c.type_name or "").lower()
    if fam == "int":
        if re.search(r"\b(bigint|int8|long)\b.*unsigned|uint64", t) or (not c.type_name and c.jdbc_type == -5):
            field.update(type="bytes", name="org.apache.kafka.connect.data.Decimal")
            params.update({"scale": "0", "connect.decimal.precision": "20"})
        else:
            field["type"] = "int64"
    elif fam == "decimal":
        ps = decimal_precision_scale(c.type_name)
        if ps:
            field.update(type="bytes", name="org.apache.kafka.connect.data.Decimal")
            params.update({"scale": str(ps[1]), "connect.decimal.precision": str(ps[0])})
        else:
            field.update(type="struct", name="io.debezium.data.VariableScaleDecimal",
                         fields=[{"type": "int32", "optional": False, "field": "scale"},
                                 {"type": "bytes", "optional": False, "field": "value"}])
    elif fam == "float":
        field["type"] = "float64"
    elif fam == "bool":
        field["type"] = "boolean"
    elif fam == "binary":
        field["type"] = "bytes"
    elif fam == "bit":
        n = re.search(r"\((\d+)\)", c.type_name or "")
        field.update(type="bytes", name="io.debezium.data.Bits")
        params["length"] = n.group(1) if n else "1"
    elif fam == "date":
        field.update(type="int32", name="io.debezium.time.Date")
    elif fam == "time":
        field.update(type="int64", name="io.debezium.time.NanoTime" if nano else "io.debezium.time.MicroTime")
    elif fam == "datetime":
        field.update(type="int64",
                     name="io.debezium.time.NanoTimestamp" if nano else "io.debezium.time.MicroTimestamp")
    elif fam in ("timestamp", "zoned"):
        field["name"] = "io.debezium.time.ZonedTimestamp"
    elif fam == "json":
        field["name"] = "io.debezium.data.Json"
    if params:
        field["parameters"] = params
    return field


def _foreign_fields(e: Event) -> tuple[dict[str, dict], dict[tuple[str, str], Any]]:
    """Field schemas for a foreign event's columns; a column whose values its typed form cannot hold exactly
    (text in a numeric column, nine fraction digits in a microsecond type) is written as a string field, still
    naming its source type. Beside them, the cells of the typed columns as the payload writes them, by
    (image, column): choosing a field renders every value of its column already."""
    columns = list(e.columns)
    known = {c.name for c in columns}
    columns += [Column(n) for n in dict.fromkeys([*(e.before or {}), *(e.after or {})]) if n not in known]
    out = {}
    rendered: dict[tuple[str, str], Any] = {}
    for c in columns:
        field = _connect_field(c)
        kind = _expected_kind(field, c, True)
        cells = []
        try:
            for part, image in (("before", e.before), ("after", e.after)):
                text = (image or {}).get(c.name)
                if text is not None:
                    value = _to_json(kind, text, field)
                    if kind in CONVERSIONS and _from_json(kind, value, field) != text and kind != "epoch_zts":
                        raise ValueError("not exact")
                    if kind == "num" and not isinstance(value, JsonNumber):
                        raise ValueError("not a JSON number")
                    cells.append((part, value))
        except (ValueError, ArithmeticError, OverflowError, _Unconvertible):
            params = {SOURCE_TYPE: c.type_name} if c.type_name else None
            field = {"type": "string", "optional": True, "field": c.name, **({"parameters": params} if params else {})}
            for part in ("before", "after"):  # a column declared twice: the last declaration's field holds
                rendered.pop((part, c.name), None)
        else:
            for part, value in cells:
                rendered[part, c.name] = value
        out[c.name] = field
    return out, rendered


def _identifies_its_row(vendor: str, e: Event) -> None:
    """EncodeError for an event of another format whose message would not name its row (what decode refuses: a
    DELETE without before image or without the key columns in it, an UPDATE without before image whose after
    image lacks them); the message key is written from the same images."""
    key = e.primary_key
    if e.op is Op.DELETE:
        if e.before is None or not any(v is not None for v in e.before.values()):
            raise EncodeError(vendor, "payload.before", "a DELETE without before image names no row")
        if key and any(e.before.get(k) is None for k in key):
            raise EncodeError(vendor, "payload.before", f"the DELETE's before image lacks key columns {list(key)}")
    elif e.op is Op.UPDATE and e.before is None and key and (e.after is None or
                                                              any(e.after.get(k) is None for k in key)):
        raise EncodeError(vendor, "payload.after", f"an UPDATE without before image whose after image lacks key "
                                                   f"columns {list(key)} names no row")


def _envelope_schema(e: Event, fields: dict[str, dict]) -> dict:
    """The JsonConverter schema of a change event value, as Debezium writes it."""
    prefix = ".".join(p for p in (e.database, e.schema, e.table) if p) or "table"
    row = {"type": "struct", "fields": list(fields.values()), "optional": True, "name": f"{prefix}.Value"}
    return {"type": "struct", "optional": False, "name": f"{prefix}.Envelope", "version": 1,
            "fields": [{**row, "field": "before"}, {**row, "field": "after"},
                       {"type": "struct", "fields": [], "optional": False, "name": "io.debezium.connector.common.Source",
                        "field": "source"},
                       {"type": "string", "optional": False, "field": "op"},
                       {"type": "int64", "optional": True, "field": "ts_ms"}]}


# ------------------------------------------------------------------------------------------- schema + kinds


# A connector writes the same schema part in every message of a table (schemas.enable=true: ~2 KB of each
# message), so what decode and encode read from it is worked out once per distinct schema text: checking and
# indexing it per message was half of this codec's decode time. Callers must not change what these return.
_SCHEMA_CACHE = 1024


@functools.lru_cache(maxsize=_SCHEMA_CACHE)
def _schema_problem(text: str) -> Optional[tuple[str, str]]:
    """``schema_problem`` of the envelope schema whose exact JSON text is ``text``."""
    return schema_problem(unliteral(text), "schema")


@functools.lru_cache(maxsize=_SCHEMA_CACHE)
def _literal_fields(text: str) -> dict[str, dict]:
    """``_image_fields`` of the schema whose exact JSON text is ``text``."""
    return _image_fields(unliteral(text))


@functools.lru_cache(maxsize=_SCHEMA_CACHE)
def _literal_kinds(text: str) -> dict[str, str]:
    """Column name -> ``_expected_kind`` of its field, for the schema whose exact JSON text is ``text``."""
    return {col: _expected_kind(field, None, True) for col, field in _literal_fields(text).items()}


def _image_fields(schema: Optional[dict]) -> dict[str, dict]:
    """Column name -> field schema, from the envelope schema's ``after`` struct (else ``before``)."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, dict] = {}
    for part in ("before", "after"):
        for f in schema.get("fields") or ():
            if isinstance(f, dict) and f.get("field") == part:
                for col in f.get("fields") or ():
                    if isinstance(col, dict) and isinstance(col.get("field"), str):
                        out[col["field"]] = col
    return out


def _expected_kind(field: Optional[dict], column: Optional[Column], own: bool) -> str:
    """How a cell of this column is rendered: a conversion kind from its schema, else a JSON rendering."""
    if field:
        kind = LOGICAL_KINDS.get(field.get("name") or "")
        if kind == "zts" and family((field.get("parameters") or {}).get(SOURCE_TYPE)) == "timestamp":
            return "epoch_zts"  # a zone-free instant column (MySQL TIMESTAMP): canonical epoch seconds
        if kind:
            return kind
        ftype = field.get("type")
        if ftype in ("int8", "int16", "int32", "int64", "float32", "float64"):
            return "num"
        if ftype == "boolean":
            return "bool"
        if ftype in ("struct", "array", "map"):
            return "json"
        return "str"
    if column is None:
        return "str"
    if own:
        return "num" if column.number else "str"
    fam = family(column.type_name, column.jdbc_type)
    if column.number or fam in ("int", "float"):
        return "num"
    return "bool" if fam == "bool" else "str"


def _columns(schema_text: Optional[str], fields: dict[str, dict], images: dict, numbers: set[str]
             ) -> tuple[Column, ...]:
    """The schema's columns in its order, then those only the images name (after's first); ``numbers`` says
    which were written as bare numbers."""
    after, before = images["after"] or {}, images["before"] or {}
    if fields.keys() >= after.keys() and fields.keys() >= before.keys():
        names = tuple(fields)  # the usual message: its images hold the schema's columns only
    else:
        names = tuple(dict.fromkeys([*fields, *after, *before]))
    return _declared_columns(schema_text, names, tuple(name in numbers for name in names))


# Cached: a table's messages repeat one schema and one column list, so they share their Column tuple.
@functools.lru_cache(maxsize=_SCHEMA_CACHE)
def _declared_columns(schema_text: Optional[str], names: tuple[str, ...], numbers: tuple[bool, ...]
                      ) -> tuple[Column, ...]:
    fields = _literal_fields(schema_text) if schema_text is not None else {}
    out = []
    for name, number in zip(names, numbers):
        f = fields.get(name)
        type_name, jdbc = None, None
        if f:
            params = f.get("parameters")
            params = params if isinstance(params, dict) else {}  # any other JSON value: no declared parameters
            kind = LOGICAL_KINDS.get(f.get("name") or "")
            type_name = params.get(SOURCE_TYPE) or f.get("name") or f.get("type")
            jdbc = LOGICAL_JDBC.get(kind) if kind else CONNECT_JDBC.get(f.get("type"))
            if kind == "decimal" and "scale" in params and type_name == f.get("name"):
                precision = params.get("connect.decimal.precision")
                # the declared precision/scale, so families and re-encoders see decimal(p,s)
                type_name = f"decimal({precision},{params['scale']})" if precision else type_name
        out.append(Column(name, type_name, jdbc, number))
    return tuple(out)


def _cell(value: Any, field: Optional[dict], kind: str) -> tuple[Optional[str], str]:
    """A cell's canonical text and how it was rendered: ``kind`` (``_expected_kind`` of its field) when the
    value has that shape and converts back to the exact received JSON, else its raw rendering (``_generic``;
    "?" for a value no column can hold, which the caller reports)."""
    if value is None:
        return None, "null"
    quick = _QUICK.get(kind)
    if quick is not None:
        text = quick(value, field or {}, kind)
        if text is not None:
            return text, kind
    return _converted_cell(value, field, kind)


def _converted_cell(value: Any, field: Optional[dict], kind: str) -> tuple[Optional[str], str]:
    """``_cell`` by converting the value and back (every kind, every shape)."""
    if kind in CONVERSIONS:
        if kind in ("geometry", "point") and isinstance(value, dict) and isinstance(value.get("srid"), JsonNumber):
            render = f"{kind}:{value['srid']}"  # the SRID travels in the render kind (vendor["render"])
        else:
            render = kind
        try:
            text = _from_json(kind, value, field or {})
            if same_json(_to_json(render, text, field or {}), value):
                return text, render
        except (_Unconvertible, ValueError, ArithmeticError, OverflowError):
            pass  # not the announced shape: keep the raw rendering below
    return _generic(value)


# Quick exact conversions of the commonest kinds: the text of a value in the one spelling its conversion back writes
# (an integer literal as Python prints it; base64 of the minimal two's complement bytes, as Java's BigInteger
# writes them), so it converts back to the value without doing so. None: take ``_converted_cell``'s way.
# (tests/codecs/test_debezium_json.py holds both ways equal.)
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")


def _quick_units(value: Any, field: dict, kind: str) -> Optional[str]:
    if type(value) is not JsonNumber or not _CANONICAL_INT.fullmatch(value):
        return None
    try:
        n = int(value)  # ValueError beyond the 4,300 digits Python reads
        if kind == "date":
            return date.fromordinal(EPOCH_ORDINAL + n).isoformat()
        if kind[:4] == "time":
            return _time_text(n, int(kind[-1]))
        return _datetime_text(n, int(kind[-1]))
    except (ValueError, OverflowError):  # outside the calendar, or too long: _converted_cell says how it is kept
        return None


def _quick_decimal(value: Any, field: dict, kind: str) -> Optional[str]:
    if type(value) is not str:
        return None
    scale = (field.get("parameters") or {}).get("scale")
    try:
        scale = int(scale)
        data = binascii.a2b_base64(value, strict_mode=True)  # base64.b64decode(value, validate=True)
    except (TypeError, ValueError):  # no or no integer scale, not base64 (binascii.Error is a ValueError)
        return None
    if not data:
        return None
    n = int.from_bytes(data, "big", signed=True)
    if binascii.b2a_base64(_signed_bytes(n), newline=False).decode("ascii") != value:  # b64encode's spelling
        return None
    try:
        return _decimal_text(n, scale)
    except ValueError:  # more digits than Python writes (4300): _converted_cell says how it is kept
        return None


_INTEGER = re.compile(r"-?\d+")  # an integer literal (compiled once: decode matches two per message)
# Kinds with no conversion (``_expected_kind``): ``_cell`` renders their values by ``cell_text`` alone.
_PLAIN_KINDS = frozenset({"num", "str", "bool", "json"})
_QUICK = {"decimal": _quick_decimal, **{k: _quick_units for k in ("date", "time3", "time6", "time9", "ts3", "ts6",
                                                                   "ts9")}}


def _generic(value: Any) -> tuple[Optional[str], str]:
    """``cell_text``, except that a null reaching here (where a value was required) is not a value: "?"."""
    return (None, "?") if value is None else cell_text(value)


def _to_json(kind: str, text: Optional[str], field: dict) -> Any:
    """Canonical text -> the JSON value Debezium writes for this kind (exact, or ValueError)."""
    if text is None or kind in ("num", "bool", "json", "str"):
        return cell_json(kind, text)
    if kind == "decimal":
        return base64.b64encode(_signed_bytes(_unscaled(text, _scale(field)))).decode()
    if kind == "vsdecimal":
        exponent = Decimal(text).as_tuple().exponent
        if not isinstance(exponent, int):  # NaN, Infinity: no scale and no unscaled bytes spell them
            raise ValueError(f"{text!r} is not a finite decimal")
        scale = -exponent
        return {"scale": JsonNumber(str(scale)),
                "value": base64.b64encode(_signed_bytes(_unscaled(text, scale))).decode()}
    if kind == "date":
        return JsonNumber(str(date.fromisoformat(text).toordinal() - EPOCH_ORDINAL))
    if kind in ("time3", "time6", "time9"):
        return JsonNumber(str(_time_units(text, int(kind[-1]))))
    if kind in ("ts3", "ts6", "ts9"):
        return JsonNumber(str(_datetime_units(text, int(kind[-1]))))
    if kind == "epoch_zts":
        whole, _, frac = text.partition(".")
        if not _INTEGER.fullmatch(whole) or not re.fullmatch(r"\d{0,9}", frac):
            raise ValueError(f"{text!r} is not epoch seconds")
        units = _datetime_units("1970-01-01 00:00:00", 9) + int(whole) * 10 ** 9 + \
            (-1 if whole.startswith("-") else 1) * int((frac + "0" * 9)[:9])
        wall = _datetime_text(units, 9)
        return wall.replace(" ", "T") + "Z"
    if kind == "zts":
        m = _CANON_ZONED.match(text)
        if not m:
            raise ValueError(f"{text!r} is not 'YYYY-MM-DD HH:MM:SS[.f] ZONE'")
        return f"{m.group(1)}T{m.group(2)}{_iso_zone(m.group(3))}"
    if kind == "ztime":
        m = _CANON_ZONED_TIME.match(text)
        if not m:
            raise ValueError(f"{text!r} is not 'HH:MM:SS[.f] ZONE'")
        return f"{m.group(1)}{_iso_zone(m.group(2))}"
    if kind.startswith(("geometry", "point")):
        srid = kind.partition(":")[2]
        wkb = base64.b64decode(text, validate=True)
        out: dict[str, Any] = {"wkb": text, "srid": JsonNumber(srid) if srid else None}
        if kind.startswith("point"):  # io.debezium.data.geometry.Point repeats the coordinates of its WKB
            if len(wkb) != 21 or wkb[0] not in (0, 1):
                raise ValueError("a Point needs the 21-byte WKB of a point")
            x, y = struct.unpack("<dd" if wkb[0] == 1 else ">dd", wkb[5:21])
            out = {"x": JsonNumber(repr(x)), "y": JsonNumber(repr(y)), **out}
        return out
    if kind == "bits":
        n = int(text)
        length = int((field.get("parameters") or {}).get("length", 0))
        size = max((length + 7) // 8, (n.bit_length() + 7) // 8, 1)
        return base64.b64encode(n.to_bytes(size, "little")).decode()
    return text


def _from_json(kind: str, value: Any, field: dict) -> str:
    """The JSON value of a converted kind -> canonical text (raises _Unconvertible for another shape)."""
    if kind == "decimal":
        return _decimal_text(_b64_int(value, signed=True), _scale(field))
    if kind == "vsdecimal":
        if not isinstance(value, dict) or not isinstance(value.get("scale"), JsonNumber):
            raise _Unconvertible("VariableScaleDecimal needs {scale, value}")
        return _decimal_text(_b64_int(value.get("value"), signed=True), int(value["scale"]))
    if kind == "bits":
        return str(int.from_bytes(_b64_bytes(value), "little"))
    if kind in ("geometry", "point"):
        allowed = {"wkb", "srid"} | ({"x", "y"} if kind == "point" else set())
        if not isinstance(value, dict) or set(value) - allowed:
            raise _Unconvertible(f"{kind} needs {sorted(allowed)}")
        return base64.b64encode(_b64_bytes(value.get("wkb"))).decode()
    if kind == "epoch_zts":
        m = _ZONED.match(value) if isinstance(value, str) else None
        if not m or m.group(3) not in ("Z", "+00:00"):
            raise _Unconvertible("not ISO-8601 UTC")
        units = _datetime_units(f"{m.group(1)} {m.group(2)}", 9)
        digits = len(m.group(2).partition(".")[2])  # keep the fraction digits as written
        return format(Decimal(units).scaleb(-9).quantize(Decimal(1).scaleb(-digits)), "f")
    if kind in ("zts", "ztime"):
        if not isinstance(value, str):
            raise _Unconvertible("expected ISO text")
        m = (_ZONED if kind == "zts" else _ZONED_TIME).match(value)
        if not m:
            raise _Unconvertible("not ISO-8601 with an offset")
        *parts, zone = m.groups()
        return " ".join([*parts, "+00:00" if zone == "Z" else zone])
    if not (isinstance(value, JsonNumber) and _INTEGER.fullmatch(value)):
        raise _Unconvertible("expected an integer")
    n = int(value)
    if kind == "date":
        return date.fromordinal(EPOCH_ORDINAL + n).isoformat()
    if kind in ("time3", "time6", "time9"):
        return _time_text(n, int(kind[-1]))
    return _datetime_text(n, int(kind[-1]))


def _scale(field: dict) -> int:
    scale = (field.get("parameters") or {}).get("scale")
    if scale is None:
        raise _Unconvertible("Decimal schema without a scale parameter")
    return int(scale)


def _b64_bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Unconvertible("expected base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise _Unconvertible("not base64") from None


def _b64_int(value: Any, signed: bool) -> int:
    data = _b64_bytes(value)
    if not data:
        raise _Unconvertible("empty bytes")
    return int.from_bytes(data, "big", signed=signed)


def _decimal_text(unscaled: int, scale: int) -> str:
    """Exact ``unscaled * 10**-scale`` as plain text (integer arithmetic: Decimal's default 28-digit context
    would round a DECIMAL(65,30))."""
    sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled))
    if scale <= 0:
        return sign + digits + "0" * -scale if unscaled else "0"
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


# PostgreSQL's numeric, the widest decimal a connector writes: 131,072 digits before the point, 16,383 after
_MAX_UNSCALED_DIGITS = 147_455


def _unscaled(text: str, scale: int) -> int:
    """The unscaled integer of ``text`` at ``scale`` (exact, or ValueError when it has more fraction digits)."""
    sign, digits, exp = Decimal(text).as_tuple()
    if not isinstance(exp, int):
        raise ValueError(f"{text!r} is not a finite decimal")
    n = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    # An exponent is a few characters: 1E+999999999 made a billion-digit power of ten (the encode task hung)
    if n and shift > 0 and len(digits) + shift > _MAX_UNSCALED_DIGITS:
        raise ValueError(f"{text!r} has more than {_MAX_UNSCALED_DIGITS} digits at scale {scale}")
    if n and -shift >= len(digits):
        raise ValueError(f"{text!r} has more than {scale} fraction digits")
    if shift >= 0:
        n *= 10 ** shift if n else 1
    else:
        n, rest = divmod(n, 10 ** -shift) if n else (0, 0)
        if rest:
            raise ValueError(f"{text!r} has more than {scale} fraction digits")
    return -n if sign else n


def _signed_bytes(n: int) -> bytes:
    """Java BigInteger.toByteArray(): minimal big-endian two's complement."""
    size = (n if n >= 0 else ~n).bit_length() // 8 + 1
    return n.to_bytes(size, "big", signed=True)


def _fraction(frac: int, digits: int) -> str:
    return "" if frac == 0 else "." + f"{frac:0{digits}d}".rstrip("0")


def _datetime_text(n: int, digits: int) -> str:
    per_sec = 10 ** digits
    days, rem = divmod(n, 86400 * per_sec)
    secs, frac = divmod(rem, per_sec)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    return f"{date.fromordinal(EPOCH_ORDINAL + days).isoformat()} {h:02d}:{m:02d}:{s:02d}{_fraction(frac, digits)}"


def _time_text(n: int, digits: int) -> str:
    """Time of day or (MySQL TIME) a signed duration beyond 24 h."""
    per_sec = 10 ** digits
    sign = "-" if n < 0 else ""
    secs, frac = divmod(abs(n), per_sec)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h:02d}:{m:02d}:{s:02d}{_fraction(frac, digits)}"


def _fraction_units(frac: Optional[str], digits: int, text: str) -> int:
    frac = frac or ""
    if len(frac.rstrip("0")) > digits:
        raise ValueError(f"{text!r} has more than {digits} fraction digits")
    return int((frac + "0" * digits)[:digits])


def _datetime_units(text: str, digits: int) -> int:
    m = _DATETIME.match(text)
    if not m:
        raise ValueError(f"{text!r} is not 'YYYY-MM-DD HH:MM:SS[.f]'")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    days = date(y, mo, d).toordinal() - EPOCH_ORDINAL
    return ((days * 86400 + h * 3600 + mi * 60 + s) * 10 ** digits) + _fraction_units(m.group(7), digits, text)


def _time_units(text: str, digits: int) -> int:
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"{text!r} is not '[-]HH:MM:SS[.f]'")
    n = (int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4))) * 10 ** digits
    n += _fraction_units(m.group(5), digits, text)
    return -n if m.group(1) else n


def _iso_zone(zone: str) -> str:
    if zone in ("+00:00", "Z"):
        return "Z"  # Debezium normalises to UTC and writes it as Z
    if not re.fullmatch(r"[+-]\d{2}:\d{2}(:\d{2})?", zone):
        raise ValueError(f"zone {zone!r} is not an offset (Debezium writes offsets only)")
    return zone


# ---------------------------------------------------------------------------------------------- positions

class _BadPosition(ValueError):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


_LSN_PART = re.compile(r"[0-9A-Fa-f]+\Z")


def _number(value: Any, what: str) -> Decimal:
    """A position component written as a JSON number or a string of digits."""
    if isinstance(value, bool) or not isinstance(value, str) or not _INTEGER.fullmatch(value):
        raise _BadPosition(what.split("[")[0], f"{what} is not an integer: {value!r}")
    return Decimal(value)


def _hex_lsn(value: Any, what: str) -> Decimal:
    """SQL Server / Db2 LSN text ``00000027:00000758:0005`` (hex groups of fixed width) -> one integer."""
    if not isinstance(value, str) or not value or not all(_LSN_PART.match(p) for p in value.split(":")):
        raise _BadPosition(what.split("[")[0], f"{what} is not a hex LSN: {value!r}")
    return Decimal(int(value.replace(":", ""), 16))


def _pg_lsn(value: Any, what: str) -> Decimal:
    """PostgreSQL LSN: Debezium writes the 64-bit number; ``X/Y`` text is accepted too."""
    if isinstance(value, str) and "/" in value:
        hi, _, lo = value.partition("/")
        return Decimal((int(hi, 16) << 32) + int(lo, 16))
    return _number(value, what)


def _connector_position(connector: str, source: dict) -> tuple[Decimal, ...]:
    """Each connector orders its events by its own fields (Debezium connector reference, "source" tables):

    * MySQL/MariaDB: binlog ``file`` number, ``pos``, ``row``; snapshots (and embedded engines such as Flink
      CDC's) write ``file: ""`` and ``pos: 0``, which sorts before every binlog event.
    * PostgreSQL: ``sequence`` = ``["lastCommitLsn","lsn"]`` when present (events of one transaction share the
      first), else ``lsn``. ``txId`` is the transaction, not a position.
    * SQL Server: ``commit_lsn``, ``change_lsn``, ``event_serial_no``; Db2: ``commit_lsn``, ``change_lsn``.
    * Oracle: ``commit_scn`` (or ``scn`` before a commit is known), ``scn``.
    * MongoDB: oplog time ``ts_ms`` then ``ord`` (the increment within that second).
    """
    get = source.get
    if connector in ("mysql", "mariadb") or (not connector and "file" in source and "pos" in source):
        if get("pos") is None and get("file") is None:
            return ()
        file = get("file")
        if file is not None and not isinstance(file, str):
            raise _BadPosition("file", f"file is not a binlog file name: {file!r}")
        match = re.search(r"(\d+)\s*\Z", file or "")
        if file and not match:
            raise _BadPosition("file", f"binlog file name without a number: {file!r}")
        row = get("row")
        return (Decimal(match.group(1)) if match else Decimal(0), _number(get("pos", JsonNumber("0")), "pos"),
                _number(row if row is not None else JsonNumber("0"), "row"))
    if connector == "postgresql" or (not connector and "lsn" in source):
        seq = get("sequence")
        if isinstance(seq, str) and seq:
            try:
                pair = json.loads(seq)
            except json.JSONDecodeError:
                raise _BadPosition("sequence", f"sequence is not a JSON array: {seq!r}") from None
            if not (isinstance(pair, list) and len(pair) == 2):
                raise _BadPosition("sequence", f"sequence is not [lastCommitLsn, lsn]: {seq!r}")
            last, lsn = pair
            return (_pg_lsn(str(last), "sequence[0]") if last is not None else Decimal(0),
                    _pg_lsn(str(lsn) if lsn is not None else get("lsn"), "sequence[1]"))
        return (_pg_lsn(get("lsn"), "lsn"),) if get("lsn") is not None else ()
    if connector in ("sqlserver", "db2") or (not connector and ("change_lsn" in source or "commit_lsn" in source)):
        out = []
        for key in ("commit_lsn", "change_lsn"):
            value = get(key)
            out.append(_hex_lsn(value, key) if value not in (None, "", "NULL") else Decimal(0))
        if get("event_serial_no") is not None:
            out.append(_number(get("event_serial_no"), "event_serial_no"))
        return tuple(out) if any(out) else ()
    if connector == "oracle" or (not connector and "scn" in source):
        scn = get("scn")
        if scn is None:
            return ()
        commit = get("commit_scn")
        scn_n = _number(scn, "scn")
        return (_number(commit, "commit_scn") if commit not in (None, "") else scn_n, scn_n)
    if connector == "mongodb" or (not connector and "ord" in source):
        if get("ord") is None:
            return ()
        ts = get("ts_ms")
        return (_number(ts, "ts_ms") if ts is not None else Decimal(0), _number(get("ord"), "ord"))
    return ()


# ------------------------------------------------------------------------------------------------ helpers


def payload_fix_paths(original: dict, derived: dict) -> list[tuple[str, ...]]:
    """Payload keys to compare; images only where the canonical image is None (null vs {} vs absent);
    ``source`` key by key, so a Debezium source block costs only what the canonical fields do not say."""
    paths: list[tuple[str, ...]] = []
    for key in dict.fromkeys([*original, *derived]):
        if key in ("before", "after") and derived.get(key) is not None:
            continue
        o, d = original.get(key), derived.get(key)
        if key == "source" and isinstance(o, dict) and isinstance(d, dict):
            if same_json(o, d):
                continue  # no key of it differs (most messages of a format whose source the events say)
            paths.extend((key, k) for k in dict.fromkeys([*o, *d]))
        else:
            paths.append((key,))
    return paths


def _document(text: str) -> Optional[Any]:
    """A MongoDB Extended-JSON document string as JSON (numbers exact), or None when it is not such JSON."""
    try:
        obj, _ = jsontext.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, (dict, list)) else None


def _opt_text(value: Any) -> Optional[str]:
    """A name from ``source``: text as it is, or None when absent or empty. Anything else (an object, a number)
    is not a name: ``_Unnamed`` (the caller names the field)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or isinstance(value, JsonNumber):
        raise _Unnamed(value)
    return value


def payload_transaction_id(payload: dict, source: dict) -> Optional[str]:
    tx = payload.get("transaction")
    if isinstance(tx, dict) and tx.get("id") is not None:
        return str(tx["id"])
    for key in ("gtid", "txId"):
        if source.get(key) is not None:
            return str(source[key])
    return None


def _key_columns(key: Optional[bytes]) -> tuple[str, ...]:
    """Primary-key column names from a Debezium record key (``{"id": 1}`` or ``{"schema":..,"payload":{..}}``).
    A key that is not such JSON (a custom partitioner's key) gives no key columns; it is not the value's fault."""
    if not key:
        return ()
    raw, obj = bytes(key), None
    # Only names are read, so orjson's numbers do. What it refuses (trailing commas, NaN, invalid text) and keys
    # nested deeper than jsontext reads, jsontext decides, as before.
    if raw.count(b"[") + raw.count(b"{") <= jsontext.MAX_DEPTH:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    if obj is None:
        try:
            obj, _ = jsontext.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return ()
    if isinstance(obj, dict) and "payload" in obj and set(obj) <= {"schema", "payload"}:
        obj = obj["payload"]
    return tuple(obj) if isinstance(obj, dict) else ()


CODEC = DebeziumJsonCodec()
