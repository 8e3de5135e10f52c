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

Ordering (``sequence``) comes from ``payload.source``: MySQL binlog ``file`` number, ``pos``, ``row``;
PostgreSQL ``lsn``; Oracle ``scn``. ``source.ts_ms`` (else ``payload.ts_ms``) is the event time. The primary key
is not in the value: it is read from the Kafka record key (``Position.key``) when there is one.

Typed values: with a ``schema`` part, values are converted exactly to canonical text where the schema says how:
``org.apache.kafka.connect.data.Decimal`` (base64 two's-complement unscaled bytes, ``scale`` parameter),
``io.debezium.data.VariableScaleDecimal``, ``io.debezium.time.{Date,Time,MicroTime,NanoTime,Timestamp,
MicroTimestamp,NanoTimestamp,ZonedTimestamp,ZonedTime}`` (and the Kafka Connect Date/Time/Timestamp),
``io.debezium.data.Bits``, ``boolean``. Every conversion is checked to re-encode to the exact received JSON;
a value that would not (an unusual spelling) is kept as its raw text instead, so re-encode is always lossless.

Lossless re-encode uses the Canal codec's derive/fix scheme: the encoder derives the payload from the canonical
event, and ``vendor["fix"]`` holds the payload keys (``source`` key by key) where the received one differs.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import date
from decimal import Decimal
from typing import Any, Optional, Sequence

from . import jsontext
from .base import Capabilities, Codec, EncodedMessage, message_key
from .canal_json import apply_fix, derive_fix, is_json_number, literal, unliteral
from .event import Column, EncodeError, Event, Op, Position
from .jsontext import JsonNumber
from .types import JDBC, family

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
}
# Declared type -> java.sql.Types, so types.family() classifies Connect/Debezium type names correctly.
LOGICAL_JDBC = {
    "decimal": JDBC["DECIMAL"], "vsdecimal": JDBC["DECIMAL"], "date": JDBC["DATE"], "time3": JDBC["TIME"],
    "time6": JDBC["TIME"], "time9": JDBC["TIME"], "ts3": JDBC["TIMESTAMP"], "ts6": JDBC["TIMESTAMP"],
    "ts9": JDBC["TIMESTAMP"], "zts": JDBC["TIMESTAMP_WITH_TIMEZONE"], "ztime": JDBC["TIME_WITH_TIMEZONE"],
    "bits": JDBC["BIT"],
}
CONNECT_JDBC = {"int8": JDBC["TINYINT"], "int16": JDBC["SMALLINT"], "int32": JDBC["INTEGER"],
                "int64": JDBC["BIGINT"], "float32": JDBC["REAL"], "float64": JDBC["DOUBLE"],
                "boolean": JDBC["BOOLEAN"], "string": JDBC["VARCHAR"], "bytes": JDBC["VARBINARY"]}
CONVERSIONS = frozenset(LOGICAL_JDBC)
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DATETIME = re.compile(r"(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")
_TIME = re.compile(r"(-)?(\d{2,}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")
_ZONED = re.compile(r"(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:\d{2}(?::\d{2})?)\Z")
_ZONED_TIME = re.compile(r"(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:\d{2}(?::\d{2})?)\Z")
_CANON_ZONED = re.compile(r"(\d{4,}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) (\S+)\Z")
_CANON_ZONED_TIME = re.compile(r"(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) (\S+)\Z")


class _Unconvertible(ValueError):
    """A value that does not have the shape its schema announces; the caller keeps the raw text."""


class DebeziumJsonCodec(Codec):
    name = FORMAT
    vendor = "Debezium (Red Hat) / CloudCanal"
    description = "Debezium envelope JSON: payload before/after/source/op, optional Kafka Connect schema"
    capabilities = Capabilities(
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset(Op),
        transactions=True,
        notes="Before images are full for MySQL; PostgreSQL sends them only with REPLICA IDENTITY FULL. The "
              "primary key comes from the Kafka record key. Foreign events are written without a schema part "
              "(schemas.enable=false): integer/float columns as JSON numbers, booleans as JSON booleans, "
              "everything else (decimals, dates, binary base64) as canonical text strings; a foreign sequence "
              "that is not a Debezium position is not carried.",
    )

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        if raw is None or not bytes(raw).strip():
            return []  # Kafka tombstone: no change to decode
        msg = self.json_object(raw, position)
        if "payload" in msg and set(msg) <= {"schema", "payload"}:
            envelope = "schema" if "schema" in msg else "payload"
            schema, payload = msg.get("schema"), msg["payload"]
            if payload is None:
                return []  # JsonConverter's rendering of a tombstone
        else:
            envelope, schema, payload = "bare", None, msg
        if not isinstance(payload, dict):
            raise self.error("payload", position, "expected an object")
        if schema is not None and not isinstance(schema, dict):
            raise self.error("schema", position, "expected a Kafka Connect schema object")
        event = self._event(payload, schema, position)
        vendor: dict[str, Any] = dict(event.vendor)
        vendor["envelope"] = envelope
        if envelope == "schema":
            vendor["schema"] = literal(schema)
        event = event.with_(vendor=vendor)
        derived = self._payload(event)
        fixes = derive_fix(payload, derived, _fix_paths(payload, derived))
        if fixes:
            event = event.with_(vendor={**event.vendor, "fix": fixes})
        return [event]

    def _event(self, payload: dict, schema: Optional[dict], position: Position) -> Event:
        source = payload.get("source")
        if source is not None and not isinstance(source, dict):
            raise self.error("payload.source", position, "expected an object")
        source = source or {}
        common = dict(
            format=FORMAT, position=position,
            database=_opt_text(source.get("db")), schema=_opt_text(source.get("schema")),
            table=_opt_text(source.get("table")),
            event_time_ms=self._time(payload, source, position),
            sequence=self._sequence(source, position),
            transaction_id=_transaction_id(payload, source),
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
            if set(payload) == {"ts_ms"}:
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
        return self._row(payload, schema, op, position, common)

    def _time(self, payload: dict, source: dict, position: Position) -> Optional[int]:
        for where, value in (("payload.source.ts_ms", source.get("ts_ms")), ("payload.ts_ms", payload.get("ts_ms"))):
            if value is None:
                continue
            if not (isinstance(value, str) and re.fullmatch(r"-?\d+", value)):
                raise self.error(where, position, f"expected epoch milliseconds, got {value!r}")
            return int(value)
        return None

    def _sequence(self, source: dict, position: Position) -> tuple[Decimal, ...]:
        """The connector's own position: MySQL (binlog file number, pos, row), PostgreSQL (lsn,), Oracle (scn,)."""
        try:
            if source.get("file") is not None and source.get("pos") is not None:
                match = re.search(r"(\d+)\s*\Z", str(source["file"]))
                if not match:
                    raise self.error("payload.source.file", position,
                                     f"binlog file name without a number: {source['file']!r}")
                row = source.get("row")
                return (Decimal(match.group(1)), Decimal(str(source["pos"])), Decimal(str(row if row is not None else 0)))
            for key in ("lsn", "scn"):
                if source.get(key) is not None:
                    return (Decimal(str(source[key])),)
        except ArithmeticError:
            raise self.error("payload.source", position, "position fields are not numbers") from None
        return ()

    def _ddl(self, payload: dict, position: Position, common: dict) -> Event:
        ddl = payload.get("ddl")
        if ddl is not None and not isinstance(ddl, str):
            raise self.error("payload.ddl", position, "expected the DDL statement as a string")
        if payload.get("databaseName"):
            common["database"] = _opt_text(payload["databaseName"])
        if payload.get("schemaName"):
            common["schema"] = _opt_text(payload["schemaName"])
        return Event(op=Op.DDL, ddl=ddl, **common)

    def _row(self, payload: dict, schema: Optional[dict], op: Op, position: Position, common: dict) -> Event:
        fields = _image_fields(schema)
        numbers: dict[str, bool] = {}
        images, render = {}, {}
        for part in ("before", "after"):
            raw = payload.get(part)
            if raw is None:
                images[part] = None
                continue
            if not isinstance(raw, dict):
                raise self.error(f"payload.{part}", position, "expected an object of column values")
            if not raw and (op in (Op.SNAPSHOT, Op.INSERT) and part == "before" or op is Op.DELETE and part == "after"):
                images[part] = None  # CloudCanal writes {} for the image an insert/delete does not have
                continue
            image, kinds = {}, {}
            for col, value in raw.items():
                text, kind = self._cell(value, fields.get(col), f"payload.{part}.{col}", position)
                image[col] = text
                if text is not None:
                    kinds[col] = kind
                    numbers[col] = numbers.get(col, False) or kind == "num"
            images[part] = image
            render[part] = kinds
        columns = _columns(fields, images, numbers)
        by_name = {c.name: c for c in columns}
        deviations = {}
        for part, kinds in render.items():
            dev = {col: kind for col, kind in kinds.items()
                   if kind != _expected_kind(fields.get(col), by_name.get(col), True)}
            if dev:
                deviations[part] = dev
        return Event(op=op, before=images["before"], after=images["after"], columns=columns,
                     primary_key=_key_columns(position.key), vendor={"render": deviations} if deviations else {},
                     **common)

    def _cell(self, value: Any, field: Optional[dict], where: str, position: Position) -> tuple[Optional[str], str]:
        if value is None:
            return None, "null"
        kind = _expected_kind(field, None, True)
        if kind in CONVERSIONS:
            try:
                text = _from_json(kind, value, field or {})
                if jsontext.normalise(_to_json(kind, text, field or {})) == jsontext.normalise(value):
                    return text, kind
            except (_Unconvertible, ValueError, ArithmeticError, OverflowError):
                pass  # not the announced shape: keep the raw rendering below
        text, generic = _generic(value)
        if generic == "?":
            raise self.error(where, position, f"unsupported value {value!r}")
        return text, generic

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for e in events:
            if e.fragment_total != 1:
                raise EncodeError(FORMAT, "fragment_key", "assemble fragments before encoding")
            own = e.format == FORMAT
            payload = self._payload(e)
            if own and e.vendor.get("fix"):
                apply_fix(payload, e.vendor["fix"])
            envelope = e.vendor.get("envelope", "bare") if own else "bare"
            if envelope == "schema":
                msg: dict[str, Any] = {"schema": unliteral(e.vendor["schema"]), "payload": payload}
            elif envelope == "payload":
                msg = {"payload": payload}
            else:
                msg = payload
            op = payload.get("op") if isinstance(payload.get("op"), str) else e.op.value
            out.append(EncodedMessage(jsontext.dumps(msg), self._key(e, own), e.qualified_table, op))
        return out

    def _key(self, e: Event, own: bool) -> Optional[bytes]:
        if own and e.position.key is not None:
            return e.position.key
        image = e.after if e.after is not None else e.before
        if e.primary_key and image is not None and all(k in image for k in e.primary_key):
            by_name = {c.name: c for c in e.columns}
            return jsontext.dumps({k: _to_json(_expected_kind(None, by_name.get(k), False), image[k], {})
                                   for k in e.primary_key})
        return message_key(e)

    def _payload(self, e: Event) -> dict[str, Any]:
        """The payload the canonical fields describe (own events: before vendor fixes are applied)."""
        own = e.format == FORMAT
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
        fields = _image_fields(unliteral(e.vendor["schema"])) if own and e.vendor.get("schema") else {}
        by_name = {c.name: c for c in e.columns}
        render = e.vendor.get("render", {}) if own else {}
        for part in ("before", "after"):
            image = getattr(e, part)
            if image is None:
                continue
            kinds = render.get(part, {})
            cells = {}
            for col, text in image.items():
                kind = kinds.get(col) or _expected_kind(fields.get(col), by_name.get(col), own)
                try:
                    cells[col] = _to_json(kind, text, fields.get(col) or {})
                except (ValueError, ArithmeticError) as exc:
                    raise EncodeError(FORMAT, f"payload.{part}.{col}", str(exc)) from None
            payload[part] = cells
        return payload


# ------------------------------------------------------------------------------------------- schema + kinds


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


def _columns(fields: dict[str, dict], images: dict, numbers: dict[str, bool]) -> tuple[Column, ...]:
    names = list(fields) or list(dict.fromkeys([*(images["after"] or {}), *(images["before"] or {})]))
    for image in (images["after"], images["before"]):
        names += [n for n in image or {} if n not in names]
    out = []
    for name in names:
        f = fields.get(name)
        type_name, jdbc = None, None
        if f:
            params = f.get("parameters") or {}
            kind = LOGICAL_KINDS.get(f.get("name") or "")
            type_name = params.get("__debezium.source.column.type") or f.get("name") or f.get("type")
            jdbc = LOGICAL_JDBC.get(kind) if kind else CONNECT_JDBC.get(f.get("type"))
            if kind == "decimal" and "scale" in params and type_name == f.get("name"):
                precision = params.get("connect.decimal.precision")
                # the declared precision/scale, so families and re-encoders see decimal(p,s)
                type_name = f"decimal({precision},{params['scale']})" if precision else type_name
        out.append(Column(name, type_name, jdbc, numbers.get(name, False)))
    return tuple(out)


def _generic(value: Any) -> tuple[Optional[str], str]:
    if isinstance(value, JsonNumber):
        return str(value), "num"
    if isinstance(value, str):
        return value, "str"
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if isinstance(value, (dict, list)):
        return literal(value), "json"
    return None, "?"


def _to_json(kind: str, text: Optional[str], field: dict) -> Any:
    """Canonical text -> the JSON value Debezium writes for this kind (exact, or ValueError)."""
    if text is None:
        return None
    if kind == "num":
        return JsonNumber(text) if is_json_number(text) else text
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "t"):
            return True
        if lowered in ("false", "0", "f"):
            return False
        raise ValueError(f"{text!r} is not a boolean")
    if kind == "json":
        return unliteral(text)
    if kind == "decimal":
        return base64.b64encode(_signed_bytes(_unscaled(text, _scale(field)))).decode()
    if kind == "vsdecimal":
        d = Decimal(text)
        scale = -d.as_tuple().exponent  # type: ignore[operator]
        return {"scale": JsonNumber(str(scale)),
                "value": base64.b64encode(_signed_bytes(_unscaled(text, scale))).decode()}
    if kind == "date":
        return JsonNumber(str(date.fromisoformat(text).toordinal() - EPOCH_ORDINAL))
    if kind in ("time3", "time6", "time9"):
        return JsonNumber(str(_time_units(text, int(kind[-1]))))
    if kind in ("ts3", "ts6", "ts9"):
        return JsonNumber(str(_datetime_units(text, int(kind[-1]))))
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
    if kind in ("zts", "ztime"):
        if not isinstance(value, str):
            raise _Unconvertible("expected ISO text")
        m = (_ZONED if kind == "zts" else _ZONED_TIME).match(value)
        if not m:
            raise _Unconvertible("not ISO-8601 with an offset")
        *parts, zone = m.groups()
        return " ".join([*parts, "+00:00" if zone == "Z" else zone])
    if not (isinstance(value, JsonNumber) and re.fullmatch(r"-?\d+", value)):
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
    return format(Decimal(unscaled).scaleb(-scale), "f")


def _unscaled(text: str, scale: int) -> int:
    scaled = Decimal(text).scaleb(scale)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{text!r} has more than {scale} fraction digits")
    return int(scaled)


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


# ------------------------------------------------------------------------------------------------ helpers


def _fix_paths(original: dict, derived: dict) -> list[tuple[str, ...]]:
    """Payload keys to compare; images only where the canonical image is None (null vs {} vs absent);
    ``source`` key by key, so a Debezium source block costs only what the canonical fields do not say."""
    paths: list[tuple[str, ...]] = []
    for key in dict.fromkeys([*original, *derived]):
        if key in ("before", "after") and derived.get(key) is not None:
            continue
        o, d = original.get(key), derived.get(key)
        if key == "source" and isinstance(o, dict) and isinstance(d, dict):
            paths.extend((key, k) for k in dict.fromkeys([*o, *d]))
        else:
            paths.append((key,))
    return paths


def _opt_text(value: Any) -> Optional[str]:
    return None if value is None or value == "" else str(value)


def _transaction_id(payload: dict, source: dict) -> Optional[str]:
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
    try:
        obj, _ = jsontext.loads(key)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ()
    if isinstance(obj, dict) and "payload" in obj and set(obj) <= {"schema", "payload"}:
        obj = obj["payload"]
    return tuple(obj) if isinstance(obj, dict) else ()


CODEC = DebeziumJsonCodec()
