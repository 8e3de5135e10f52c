"""Debezium's envelope through Confluent's AvroConverter: the Confluent wire format (magic byte 0, 4-byte
big-endian schema id, Avro binary body), key and value schemas in a Schema Registry under ``<topic>-key`` /
``<topic>-value``.

Decoding: the schema id names the writer schema (``shared/schema_registry``: a registry URL or a folder of
archived ``<id>.avsc``, each id fetched once per process). The Avro schema is read back into the Kafka Connect
schema it was made from (AvroConverter keeps ``connect.name``, ``connect.version``, ``connect.parameters``,
``connect.type`` on every field), and the datum into the values Kafka Connect's JsonConverter would have written
(bytes as base64, numbers exact), so the whole Debezium reading of ``debezium_json`` applies unchanged: every
logical type (``Decimal`` with its scale, ``VariableScaleDecimal``, ``io.debezium.time.*``, ``Bits``, geometry)
decodes exactly. Avro ``logicalType`` annotations are not applied: the Connect name says what a value means.
A record key in the wire format is read the same way and gives the primary key.

Re-encoding an event of this format writes the received schema id and the writer schema's layout, so the bytes
are the received ones (the payload by the derive/fix scheme of ``debezium_json``). Another format's event is
written with the Connect schema ``debezium_json`` builds for it (Debezium's type mapping), converted to Avro as
AvroConverter does, and registered under ``<database>.<table>-value`` (key: ``-key``) where the process's schema
store registers (``shared/schema_registry.register``).
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence

import fastavro

from .. import jsontext
from ..base import Capabilities, EncodedMessage, message_key
from ..event import EncodeError, Event, Op, Position
from ..jsontext import JsonNumber
from ..shared import schema_registry
from ..shared.avro import read_datum
from ..shared.json_fix import apply_fix, derive_fix, literal
from ..shared.value_text import double_text, float32_text, float_holds, parse_float, to_float32
from .debezium_json import DebeziumJsonCodec, payload_fix_paths

FORMAT = "debezium-avro-confluent"
MAGIC = 0
PRIMITIVE_CONNECT = {"int": "int32", "long": "int64", "float": "float32", "double": "float64", "boolean": "boolean",
                     "string": "string", "bytes": "bytes", "enum": "string", "fixed": "bytes"}
CONNECT_PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
                     "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Bad(ValueError):
    """A datum or payload that does not fit its schema; ``field`` is the dotted path."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


# ----------------------------------------------------------------------------------------- wire format

def frame(schema_id: int, body: bytes) -> bytes:
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big") + body


def unframe(raw: bytes) -> tuple[int, bytes]:
    """(schema id, Avro body) of a Confluent wire-format message; ValueError when it is not one."""
    if len(raw) < 5:
        raise ValueError(f"{len(raw)} bytes: shorter than the 5-byte header (magic byte, schema id)")
    if raw[0] != MAGIC:
        raise ValueError(f"magic byte {raw[0]} is not 0: not Confluent's wire format")
    return int.from_bytes(raw[1:5], "big"), bytes(raw[5:])


class _Schema:
    """One writer schema: the Avro JSON, its fastavro parse (logical types off), its Connect schema."""

    def __init__(self, avro: dict):
        self.avro = avro
        self.parsed = fastavro.parse_schema(_without_logical_types(avro))
        self.names = _Names(avro)
        self.to_json = to_json_converter(avro, self.names)
        self.connect = to_connect(avro, "", _Names(avro))
        self.connect_literal = literal(self.connect)

    def read(self, body: bytes) -> Any:
        datum, used = read_datum(self.parsed, body)  # its errors name no memory address: the same on every run
        if used != len(body):
            raise ValueError(f"{len(body) - used} bytes left after the record")
        return self.to_json(datum, "")

    def write(self, payload: Any) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self.parsed, from_json(self.avro, payload, "", self.names))
        return buf.getvalue()


def _without_logical_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(s) for s in schema]
    return schema


# ----------------------------------------------------------------------------- Avro <-> Kafka Connect JSON

class _Names:
    """Named Avro types met so far in a walk (a name is defined at its first use and referenced after)."""

    def __init__(self, schema: Any = None) -> None:
        self.types: dict[str, dict] = {}
        if schema is not None:
            self._collect(schema, "")

    def _collect(self, schema: Any, namespace: str) -> None:
        """Define every named type up front: a walk of a datum skips the definitions inside null branches."""
        if isinstance(schema, list):
            for s in schema:
                self._collect(s, namespace)
        elif isinstance(schema, dict):
            schema, namespace = self.resolve(schema, namespace)
            for f in schema.get("fields") or ():
                self._collect(f["type"], namespace)
            for k in ("items", "values"):
                if k in schema:
                    self._collect(schema[k], namespace)

    def resolve(self, schema: Any, namespace: str) -> tuple[Any, str]:
        if isinstance(schema, str) and schema not in PRIMITIVE_CONNECT and schema != "null":
            full = schema if "." in schema else f"{namespace}.{schema}" if namespace else schema
            found = self.types.get(full) or self.types.get(schema)
            if found is None:
                raise _Bad("", f"unknown Avro type name {schema!r}")
            return found, full.rpartition(".")[0]
        if isinstance(schema, dict) and schema.get("type") in ("record", "enum", "fixed"):
            namespace = schema.get("namespace", namespace) if "." not in schema["name"] \
                else schema["name"].rpartition(".")[0]
            full = schema["name"] if "." in schema["name"] else f"{namespace}.{schema['name']}" if namespace \
                else schema["name"]
            self.types[full] = schema
        return schema, namespace


def _primitive(schema: Any) -> Optional[str]:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] in PRIMITIVE_CONNECT:
        return schema["type"]
    return None


def to_connect(schema: Any, namespace: str = "", names: Optional[_Names] = None) -> dict:
    """The Kafka Connect schema (JsonConverter's JSON form) an AvroConverter Avro schema was made from."""
    names = names or _Names()
    schema, namespace = names.resolve(schema, namespace)
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        inner = to_connect(branches[0], namespace, names) if len(branches) == 1 else {"type": "string"}
        return {**inner, "optional": "null" in schema}
    out: dict[str, Any]
    prim = _primitive(schema)
    if prim is not None:
        props = schema if isinstance(schema, dict) else {}
        out = {"type": props.get("connect.type") or PRIMITIVE_CONNECT[prim], "optional": False}
    elif schema.get("type") == "record":
        fields = []
        for f in schema["fields"]:
            fields.append({**to_connect(f["type"], namespace, names), "field": f["name"]})
        full = schema["name"] if "." in schema["name"] else ".".join(p for p in (namespace, schema["name"]) if p)
        out = {"type": "struct", "fields": fields, "optional": False, "name": full}
        props = schema
    elif schema.get("type") == "array":
        out = {"type": "array", "items": to_connect(schema["items"], namespace, names), "optional": False}
        props = schema
    elif schema.get("type") == "map":
        out = {"type": "map", "keys": {"type": "string", "optional": False},
               "values": to_connect(schema["values"], namespace, names), "optional": False}
        props = schema
    else:
        raise _Bad("", f"Avro type {schema!r} has no Kafka Connect counterpart")
    if "connect.name" in props:
        out["name"] = props["connect.name"]
    if "connect.version" in props:
        out["version"] = props["connect.version"]
    if "connect.parameters" in props:
        out["parameters"] = props["connect.parameters"]
    return out


# A datum -> JSON converter made once per writer schema: working out each node's kind, name and namespace again for
# every datum was ~30% of a decode. Every node checks its own value, so an error names the field path of the datum.
Converter = Callable[[Any, str], Any]


def to_json_converter(schema: Any, names: _Names) -> Converter:
    """``(datum, path) -> JSON`` for an Avro schema: the value JsonConverter writes for the datum (numbers exact as
    ``JsonNumber``, bytes base64); _Bad, with the field path, when the datum does not fit."""
    return _compile(schema, "", names, {})


def _compile(schema: Any, namespace: str, names: _Names, named: dict) -> Converter:
    """A name is resolved in its namespace (``names.resolve``'s rule) and compiled once; other nodes as they are."""
    if isinstance(schema, str) and schema not in PRIMITIVE_CONNECT and schema != "null":
        full = schema if "." in schema else f"{namespace}.{schema}" if namespace else schema
        found = names.types.get(full) or names.types.get(schema)
        if found is None:
            return _refusing(f"unknown Avro type name {schema!r}", also_null=True)
        key = (id(found), full.rpartition(".")[0])
        if key not in named:  # a named type used again (or inside itself) shares one converter
            named[key] = None
            named[key] = _compile_node(found, key[1], names, named)
        return named[key] or (lambda value, path: named[key](value, path))
    schema, namespace = names.resolve(schema, namespace)
    return _compile_node(schema, namespace, names, named)


def _refusing(reason: str, also_null: bool = False) -> Converter:
    def refuse(value: Any, path: str) -> Any:
        if value is None and not also_null:
            return None
        raise _Bad(path, reason)
    return refuse


def _compile_node(schema: Any, namespace: str, names: _Names, named: dict) -> Converter:
    if isinstance(schema, list):
        return _union([b for b in schema if b != "null"], namespace, names, named)
    prim = _primitive(schema)
    if prim in ("int", "long"):
        def integer(value: Any, path: str) -> Any:
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Bad(path, f"expected an integer, got {value!r}")
            return JsonNumber(str(value))
        return integer
    if prim in ("float", "double"):
        text = float32_text if prim == "float" else double_text

        def floating(value: Any, path: str) -> Any:
            if value is None:
                return None
            try:
                return JsonNumber(text(float(value)))
            except (TypeError, ValueError):
                raise _Bad(path, f"expected a number, got {value!r}") from None
        return floating
    if prim == "boolean":
        return lambda value, path: None if value is None else bool(value)
    if prim in ("bytes", "fixed"):
        def binary(value: Any, path: str) -> Any:
            if value is None:
                return None
            if not isinstance(value, (bytes, bytearray, memoryview)):  # bytes(7) would be seven zero bytes
                raise _Bad(path, f"expected bytes, got {value!r}")
            return base64.b64encode(value).decode()
        return binary
    if prim in ("string", "enum"):
        return lambda value, path: None if value is None else str(value)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if kind == "record":
        fields = [(f["name"], _compile(f["type"], namespace, names, named), "." + f["name"])
                  for f in schema["fields"]]

        def record(value: Any, path: str) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise _Bad(path, f"expected a record, got {type(value).__name__}")
            return {name: convert(value.get(name), path + suffix) for name, convert, suffix in fields}
        return record
    if kind == "array":
        item = _compile(schema["items"], namespace, names, named)

        def array(value: Any, path: str) -> Any:
            if value is None:
                return None
            if not isinstance(value, (list, tuple)):
                raise _Bad(path, f"expected an array, got {type(value).__name__}")
            return [item(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return array
    if kind == "map":
        values = _compile(schema["values"], namespace, names, named)

        def mapping(value: Any, path: str) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise _Bad(path, f"expected a map, got {type(value).__name__}")
            return {k: values(v, f"{path}.{k}") for k, v in value.items()}
        return mapping
    if kind == "null":
        return _refusing("expected null")
    return _refusing(f"unsupported Avro type {schema!r}")


def _union(branches: list, namespace: str, names: _Names, named: dict) -> Converter:
    """The first branch that takes the value (``null`` branches aside: None is null); the last one's error."""
    tries = [(_compile(b, namespace, names, named), b is branches[-1]) for b in branches]

    def union(value: Any, path: str) -> Any:
        if value is None:
            return None
        for convert, last in tries:
            try:
                return convert(value, path)
            except _Bad:
                if last:
                    raise
        raise _Bad(path, "no union branch fits")
    return union


def from_json(schema: Any, value: Any, namespace: str = "", names: Optional[_Names] = None, path: str = "") -> Any:
    """The Avro datum for a JsonConverter-style value (inverse of ``to_json_converter``); _Bad when it does not fit."""
    names = names or _Names()
    schema, namespace = names.resolve(schema, namespace)
    if isinstance(schema, list):
        if value is None:
            if "null" not in schema:
                raise _Bad(path, "null where the schema has no null branch")
            return None
        branches = [s for s in schema if s != "null"]
        for branch in branches:
            try:
                return from_json(branch, value, namespace, names, path)
            except _Bad:
                if branch is branches[-1]:
                    raise
    if value is None:
        if schema == "null":
            return None
        raise _Bad(path, "missing or null where the schema requires a value")
    prim = _primitive(schema)
    try:
        if prim in ("int", "long"):
            if isinstance(value, bool) or not re.fullmatch(r"-?\d+", str(value)):
                raise _Bad(path, f"expected an integer, got {value!r}")
            n = int(value)
            bits = 32 if prim == "int" else 64
            if not -(2 ** (bits - 1)) <= n < 2 ** (bits - 1):
                raise _Bad(path, f"{n} does not fit an Avro {prim}")
            return n
        if prim in ("float", "double"):
            if not isinstance(value, JsonNumber):
                raise _Bad(path, f"expected a number, got {value!r}")
            return parse_float(value)
        if prim == "boolean":
            if not isinstance(value, bool):
                raise _Bad(path, f"expected true/false, got {value!r}")
            return value
        if prim in ("bytes", "fixed"):
            if not isinstance(value, str):
                raise _Bad(path, f"expected base64 bytes, got {value!r}")
            return base64.b64decode(value, validate=True)
        if prim in ("string", "enum"):
            if not isinstance(value, str) or isinstance(value, JsonNumber):
                raise _Bad(path, f"expected a string, got {value!r}")
            return value
    except (ValueError, TypeError) as exc:
        if isinstance(exc, _Bad):
            raise
        raise _Bad(path, str(exc)) from None
    kind = schema.get("type")
    if kind == "record":
        if not isinstance(value, dict):
            raise _Bad(path, "expected an object")
        extra = set(value) - {f["name"] for f in schema["fields"]}
        if extra:
            raise _Bad(f"{path}.{sorted(extra)[0]}", "not a field of the schema")
        return {f["name"]: from_json(f["type"], value.get(f["name"]), namespace, names, f"{path}.{f['name']}")
                for f in schema["fields"]}
    if kind == "array" and isinstance(value, list):
        return [from_json(schema["items"], v, namespace, names, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        return {k: from_json(schema["values"], v, namespace, names, f"{path}.{k}") for k, v in value.items()}
    raise _Bad(path, f"{value!r} does not fit {schema!r}")


def to_avro(connect: dict, defined: Optional[set[str]] = None, path: str = "") -> Any:
    """The Avro schema AvroConverter makes of a Connect schema (``connect.*`` properties, optional fields as
    ``["null", T]`` with default null, a record name defined once and referenced after)."""
    defined = defined if defined is not None else set()
    ctype = connect.get("type")
    props: dict[str, Any] = {}
    if connect.get("name"):
        props["connect.name"] = connect["name"]
    if connect.get("version") is not None:
        props["connect.version"] = connect["version"]
    if connect.get("parameters"):
        props["connect.parameters"] = connect["parameters"]
    if ctype == "struct":
        full = ".".join(_avro_name(p) for p in (connect.get("name") or "ConnectDefault").split("."))
        if full in defined:
            out: Any = full
        else:
            defined.add(full)
            namespace, _, name = full.rpartition(".")
            fields = []
            for f in connect.get("fields") or ():
                if not _AVRO_NAME.match(f["field"]):
                    raise _Bad(f"{path}.{f['field']}".lstrip("."), "not a valid Avro field name")
                fields.append({"name": f["field"], "type": to_avro(f, defined, f"{path}.{f['field']}"),
                               **({"default": None} if f.get("optional") else {})})
            out = {"type": "record", "name": name, **({"namespace": namespace} if namespace else {}),
                   "fields": fields, **props}
    elif ctype == "array":
        out = {"type": "array", "items": to_avro(connect["items"], defined, path), **props}
    elif ctype == "map":
        out = {"type": "map", "values": to_avro(connect["values"], defined, path), **props}
    elif ctype in CONNECT_PRIMITIVE:
        prim = CONNECT_PRIMITIVE[ctype]
        if ctype in ("int8", "int16"):
            props["connect.type"] = ctype
        out = {"type": prim, **props} if props else prim
    else:
        raise _Bad(path, f"Connect type {ctype!r} has no Avro form")
    return ["null", out] if connect.get("optional") else out


def _avro_name(part: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", part) or "_"
    return "_" + name if name[0].isdigit() else name


# -------------------------------------------------------------------------------------------------- codec

class DebeziumAvroConfluentCodec(DebeziumJsonCodec):
    name = FORMAT
    vendor = "Debezium (Red Hat) with Confluent's AvroConverter"
    description = "Debezium envelope as Confluent wire-format Avro; schemas from a Schema Registry or an archived folder"
    capabilities = Capabilities(
        binary=True,
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE}),
        notes="Messages are Confluent wire format (magic 0, schema id, Avro body); the writer schema comes from "
              "--schema-registry URL or the schemas folder archived beside the topic (each id fetched once per "
              "process). Every Debezium logical type decodes exactly (Decimal with its scale, "
              "VariableScaleDecimal, io.debezium.time.*, Bits, geometry). Other formats' rows are written with "
              "Debezium's type mapping as debezium-json writes its schema part, registered as "
              "<database>.<table>-value/-key. Before images as the source sent them (PostgreSQL: REPLICA IDENTITY "
              "FULL). Heartbeats and transaction markers decode when they come with their schema; they are not "
              "written for other formats' events.",
    )

    def __init__(self) -> None:
        super().__init__()
        self._schemas: dict[tuple[int, int], _Schema] = {}

    def _schema(self, schema_id: int) -> _Schema:
        store = schema_registry.store()
        key = (id(store), schema_id)
        found = self._schemas.get(key)
        if found is None:
            found = self._schemas[key] = _Schema(store.get(schema_id))
        return found

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        if raw is None or not bytes(raw):
            return []  # Kafka tombstone
        schema, payload, schema_id = self._read(bytes(raw), "value", position)
        if payload is None:
            return []
        if not isinstance(payload, dict):
            raise self.error("value", position, "expected a record")
        keyed = position
        if position.key and position.key[:1] == bytes([MAGIC]):
            key_schema, key_payload, _ = self._read(bytes(position.key), "key", position)
            # the Debezium reading takes the key as JsonConverter writes it
            keyed = replace(position, key=jsontext.dumps({"schema": key_schema.connect, "payload": key_payload}))
        event = self._event(payload, schema.connect_literal, keyed, {})
        vendor = {**event.vendor, "schema_id": schema_id}
        derived = self._payload(event.with_(vendor={**vendor, "schema": schema.connect_literal}), with_cells=False)
        fixes = derive_fix(payload, derived, payload_fix_paths(payload, derived))
        if fixes:
            vendor["fix"] = fixes
        return [event.with_(vendor=vendor, position=position)]

    def _read(self, raw: bytes, part: str, position: Position) -> tuple[_Schema, Any, int]:
        try:
            schema_id, body = unframe(raw)
        except ValueError as exc:
            raise self.error(f"{part}.magic", position, str(exc)) from None
        try:
            schema = self._schema(schema_id)
        except (schema_registry.SchemaNotFound, OSError, ValueError) as exc:
            raise self.error(f"{part}.schema_id", position, f"writer schema {schema_id}: {exc}") from None
        try:
            return schema, schema.read(body), schema_id
        except _Bad as exc:
            raise self.error(f"{part}{exc.field}", position, str(exc)) from None
        except (ValueError, EOFError, IndexError, UnicodeDecodeError, OverflowError, TypeError) as exc:
            raise self.error(part, position, f"not an Avro record of schema {schema_id}: "
                                             f"{type(exc).__name__}: {exc}") from None

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for e in events:
            if not self.capabilities.carries(e.op) and not (e.format == self.name and "schema_id" in e.vendor):
                continue
            if e.format == self.name and "schema_id" in e.vendor:
                out.append(self._own(e))
            else:
                out.append(self._foreign(e))
        return out

    def _own(self, e: Event) -> EncodedMessage:
        schema_id = int(e.vendor["schema_id"])
        try:
            schema = self._schema(schema_id)
        except (schema_registry.SchemaNotFound, OSError, ValueError) as exc:
            raise EncodeError(self.name, "schema_id", f"writer schema {schema_id}: {exc}") from None
        payload = self._payload(e.with_(vendor={**e.vendor, "schema": schema.connect_literal}))
        if e.vendor.get("fix"):
            apply_fix(payload, e.vendor["fix"])
        try:
            value = frame(schema_id, schema.write(payload))
        except _Bad as exc:
            raise EncodeError(self.name, f"payload{exc.field}", str(exc)) from None
        op = payload.get("op") if isinstance(payload.get("op"), str) else e.op.value
        return EncodedMessage(value, e.position.key, e.qualified_table, op)

    def _foreign(self, e: Event) -> EncodedMessage:
        message, = DebeziumJsonCodec.encode(self, [e])
        msg, _ = jsontext.loads(message.value)
        connect, payload = msg["schema"], msg["payload"]
        if e.op is Op.UPDATE:
            _unchanged_from_before(payload)
        if len(e.sequence) == 1 and isinstance(payload.get("source"), dict):
            # a one-number position (OMS, DTS, ...) keeps the events' order as a binlog position in file ""
            payload["source"].update(file="", pos=JsonNumber(str(e.sequence[0])))
        connect = _with_source_fields(_present_fields(_fitting_numbers(connect, payload), payload), payload)
        subject = e.qualified_table or "table"
        store = schema_registry.store()
        try:
            avro = to_avro(connect)
            schema_id = store.register(f"{subject}-value", avro)
            value = frame(schema_id, self._schema(schema_id).write(payload))
            key = self._foreign_key(e, connect, payload, subject, store)
        except _Bad as exc:
            raise EncodeError(self.name, f"payload.{exc.field}".rstrip("."), str(exc)) from None
        except (OSError, ValueError) as exc:
            raise EncodeError(self.name, "schema_id", f"registering {subject}-value in {store.describe()}: "
                                                      f"{exc}") from None
        return EncodedMessage(value, key, e.qualified_table, payload.get("op") or e.op.value)

    def _foreign_key(self, e: Event, connect: dict, payload: dict, subject: str, store) -> Optional[bytes]:
        image = payload.get("after") if payload.get("after") is not None else payload.get("before")
        if not e.primary_key or not isinstance(image, dict) or not all(k in image for k in e.primary_key):
            return message_key(e)
        row = next((f for f in connect["fields"] if f.get("field") in ("after", "before")), None)
        by_name = {f["field"]: f for f in (row or {}).get("fields") or ()}
        prefix = (row or {}).get("name", "table.Value").rpartition(".")[0]
        key_connect = {"type": "struct", "name": f"{prefix}.Key", "optional": False,
                       "fields": [{**by_name[k], "optional": False} for k in e.primary_key]}
        avro = to_avro(key_connect)
        key_id = store.register(f"{subject}-key", avro)
        return frame(key_id, self._schema(key_id).write({k: image[k] for k in e.primary_key}))


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_INTEGER = re.compile(r"-?\d+")
_FLOAT_TEXT: dict[str, Callable[[float], str]] = {"float32": lambda v: float32_text(to_float32(v)),
                                                   "float64": double_text}


def _fitting_numbers(connect: dict, payload: dict) -> dict:
    """JSON numbers have no size, Avro ints and floats do: a number column whose values its Avro type does not
    hold (an unsigned 64-bit value typed int64, 1.5 in an int32, 1e400 in a float64) is written as a string
    field, its exact text kept, as debezium_json writes a value its typed form cannot hold."""
    too_big: set[str] = set()
    for part in ("before", "after"):
        image = payload.get(part)
        row = next((f for f in connect["fields"] if f.get("field") == part), None)
        if not isinstance(image, dict) or row is None:
            continue
        for f in row.get("fields") or ():
            bits, v = _INT_BITS.get(f.get("type")), image.get(f["field"])
            if bits and isinstance(v, JsonNumber) and not _fits_bits(v, bits):
                too_big.add(f["field"])
            render = _FLOAT_TEXT.get(f.get("type"))
            if render and isinstance(v, JsonNumber) and not _float_holds(v, render):
                too_big.add(f["field"])
    if not too_big:
        return connect
    for part in ("before", "after"):
        image = payload.get(part)
        if isinstance(image, dict):
            for name in too_big & set(image):
                if image[name] is not None:
                    image[name] = str(image[name])

    def as_string(f: dict) -> dict:
        if f["field"] not in too_big:
            return f
        return {k: v for k, v in f.items() if k not in ("name", "version")} | {"type": "string", "optional": True}
    fields = [{**f, "fields": [as_string(c) for c in f["fields"]]} if f.get("field") in ("before", "after")
              and f.get("type") == "struct" else f for f in connect["fields"]]
    return {**connect, "fields": fields}


def _unchanged_from_before(payload: dict) -> None:
    """An UPDATE's after image without a column its before image has (SharePlex, OGG without full supplemental
    logging: "not changed") takes the before image's value, as OMS Avro's positional images do: an Avro record
    writes every field, and a NULL there would say the column was set to NULL."""
    before, after = payload.get("before"), payload.get("after")
    if isinstance(before, dict) and isinstance(after, dict) and after:
        for name, value in before.items():
            after.setdefault(name, value)


def _present_fields(connect: dict, payload: dict) -> dict:
    """An Avro record writes every field of its schema, a NULL where the image has no value: a column absent from
    every image of the event (a row of a Canal message without a column its other rows have) is left out of this
    event's schema, so it stays absent instead of becoming NULL. (One absent from one image only is written NULL:
    before and after share one Value schema.)"""
    images = [payload[p] for p in ("before", "after") if isinstance(payload.get(p), dict)]
    if not images:
        return connect
    present = set().union(*images)

    def trimmed(f: dict) -> dict:
        if f.get("field") not in ("before", "after") or f.get("type") != "struct":
            return f
        return {**f, "fields": [c for c in f.get("fields") or () if c.get("field") in present]}
    return {**connect, "fields": [trimmed(f) for f in connect["fields"]]}


def _float_holds(number: JsonNumber, render: Callable[[float], str]) -> bool:
    """Whether a float field holds a JSON number's value (``value_text.float_holds``): 1e400 or 25 digits are
    written as a string field, their text kept."""
    try:
        return float_holds(number, render(parse_float(number)))
    except ValueError:
        return False


def _fits_bits(number: JsonNumber, bits: int) -> bool:
    """Whether a JSON number is an integer literal a signed ``bits`` integer holds ('1.5', '1e400' are not: the
    column is written as a string field then, its text kept)."""
    return _INTEGER.fullmatch(number) is not None and -(2 ** (bits - 1)) <= int(number) < 2 ** (bits - 1)


def _with_source_fields(connect: dict, payload: dict) -> dict:
    """``debezium_json`` describes a foreign event's ``source`` struct without fields; Avro needs them: each key of
    the payload's source as an optional int64 (numbers) or string, and the transaction block when there is one."""
    source = payload.get("source") or {}
    fields = [{"type": "int64" if isinstance(v, JsonNumber) else "boolean" if isinstance(v, bool) else "string",
               "optional": True, "field": k} for k, v in source.items()]
    out = []
    for f in connect["fields"]:
        if f.get("field") == "source":
            f = {**f, "fields": fields}
        out.append(f)
    if "transaction" in payload:
        out.append({"type": "struct", "name": "event.block", "version": 1, "optional": True, "field": "transaction",
                    "fields": [{"type": "string", "optional": False, "field": "id"},
                               {"type": "int64", "optional": True, "field": "total_order"},
                               {"type": "int64", "optional": True, "field": "data_collection_order"}]})
    return {**connect, "fields": out}


CODEC = DebeziumAvroConfluentCodec()
