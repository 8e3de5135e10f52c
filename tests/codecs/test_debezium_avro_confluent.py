"""debezium-avro-confluent: messages written by Confluent's own AvroSerializer (confluent-kafka, with its
in-process registry client: no Kafka and no HTTP needed to serialize), their schemas archived as a folder of
``<id>.avsc`` the way ``cdc-replay archive`` lays them out, decoded by the codec from that folder: exact values per
Debezium logical type, the key, byte-identical re-encode, one schema fetch per id, refusals."""

from __future__ import annotations

import io
import json

import pytest
from fastavro._read_py import reader as avro_json_reader
from fastavro.io.json_decoder import AvroJSONDecoder

from cdc_codecs import DecodeError, Op, Position, get_codec
from cdc_codecs.shared import schema_registry
from golden import fixtures  # beside this file
from services import require_module

FIXTURES = fixtures("debezium-avro-confluent")
NAMES = sorted(p.name[: -len(".datum.json")] for p in FIXTURES.glob("*.datum.json") if ".key." not in p.name)
CODEC = get_codec("debezium-avro-confluent")


def avro_json(path, schema: dict) -> dict:
    """A datum from its Avro JSON encoding (unions as {"branch": value}, bytes as ISO-8859-1 code points)."""
    reader = avro_json_reader(AvroJSONDecoder(io.StringIO(path.read_text())), schema)
    return next(iter(reader))


@pytest.fixture(scope="module")
def serialized(tmp_path_factory):
    """Each fixture's value and key as Confluent's serializer writes them, and the schemas folder."""
    require_module("confluent_kafka.schema_registry.avro", "confluent-kafka[avro,schemaregistry] (test extra)")
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": "mock://fixtures"})
    out = {}
    for name in NAMES:
        topic = f"dbserver.{name}"
        parts = []
        for part, field in (("value", MessageField.VALUE), ("key", MessageField.KEY)):
            schema_text = (FIXTURES / f"{name}.{part}.avsc").read_text()
            datum_file = FIXTURES / (f"{name}.datum.json" if part == "value" else f"{name}.key.datum.json")
            datum = avro_json(datum_file, json.loads(schema_text))
            serializer = AvroSerializer(client, schema_text)
            parts.append(serializer(datum, SerializationContext(topic, field)))
        out[name] = tuple(parts)
    folder = tmp_path_factory.mktemp("schemas")
    for subject in client.get_subjects():
        registered = client.get_latest_version(subject)
        schema_registry.write_schema(folder, registered.schema_id, json.loads(registered.schema.schema_str))
    return out, folder


@pytest.fixture
def from_folder(serialized):
    schema_registry.configure(folder=str(serialized[1]))
    yield serialized[0]
    schema_registry.configure()


def decode(messages, name):
    value, key = messages[name]
    events = CODEC.decode(value, Position(f"dbserver.{name}", 0, 7, key=key))
    assert len(events) == 1
    return events[0]


@pytest.mark.parametrize("name", NAMES)
def test_confluent_serialized_message_reencodes_byte_for_byte(from_folder, name):
    value, key = from_folder[name]
    assert value[0] == 0 and len(value) > 5  # the wire format: magic byte, schema id, Avro body
    e = decode(from_folder, name)
    m, = CODEC.encode([e])
    assert (m.value, m.key) == (value, key)


def test_mysql_update_reads_key_images_and_binlog_position(from_folder):
    e = decode(from_folder, "mysql-customers-update")
    assert (e.op, e.qualified_table, e.primary_key) == (Op.UPDATE, "inventory.customers", ("id",))
    assert e.before["first_name"] == "Anne" and e.after["first_name"] == "Anne Marie"
    assert e.sequence[:3] == (3, 484, 0) and e.event_time_ms == 1465581029100
    d = decode(from_folder, "mysql-customers-delete")
    assert (d.op, d.after, d.before["id"]) == (Op.DELETE, None, "1004")


def test_every_logical_type_decodes_exactly(from_folder):
    e = decode(from_folder, "postgres-typed-insert")
    assert e.qualified_table == "test.public.typed" and e.primary_key == ("id",)
    assert e.after == {
        "id": "1", "small": "-32768", "price": "-12345.67",
        "big_num": "12345678901234567890.123456789012345678901234567890",
        "born": "0001-01-01", "at_time": "23:59:59.999999", "created": "0001-01-01 00:00:00",
        "updated": "2020-11-25 00:01:02.123456 +08:00", "ratio": "1.2222", "score": "5e-324",
        "active": "true", "data": "AP+Afw==", "doc": '{"k": [1, 2.50]}'}
    types = {c.name: c.type_name for c in e.columns}
    assert types["price"] == "decimal(10,2)" and types["small"] == "int16" and types["ratio"] == "float32"


def test_each_schema_id_is_fetched_once_per_process(serialized):
    schema_registry.configure(folder=str(serialized[1]))
    try:
        store = schema_registry.store()
        for _ in range(50):
            for name in NAMES:
                decode(serialized[0], name)
        ids = {int.from_bytes(v[1:5], "big") for pair in serialized[0].values() for v in pair}
        assert store.fetches == len(ids)
    finally:
        schema_registry.configure()


def test_unknown_schema_id_and_foreign_bytes_are_refused_naming_the_field(tmp_path, serialized):
    value, _ = serialized[0]["mysql-customers-update"]
    schema_registry.configure(folder=str(tmp_path))  # an empty folder: the id is unknown
    try:
        with pytest.raises(DecodeError) as info:
            CODEC.decode(value, Position("t", 0, 3))
        assert info.value.field == "value.schema_id" and str(int.from_bytes(value[1:5], "big")) in str(info.value)
        with pytest.raises(DecodeError) as info:
            CODEC.decode(b'{"op": "c"}', Position("t", 0, 4))
        assert info.value.field == "value.magic"
    finally:
        schema_registry.configure()


def test_truncated_body_is_refused(from_folder):
    value, key = from_folder["postgres-typed-insert"]
    with pytest.raises(DecodeError) as info:
        CODEC.decode(value[:-3], Position("t", 0, 5, key=key))
    assert info.value.vendor == "debezium-avro-confluent" and info.value.field.startswith("value")


def test_a_truncated_record_gets_the_same_dead_letter_text_every_run(from_folder):
    """fastavro's EOFError named its BytesIO by memory address, so the same cut message's dead letter read
    otherwise on every replay; every cut of every fixture's Avro body, decoded twice."""
    def reasons() -> list[str]:
        out = []
        for name in NAMES:
            value, key = from_folder[name]
            for cut in range(6, len(value)):
                try:
                    CODEC.decode(value[:cut], Position("t", 0, cut, key=key))
                except DecodeError as exc:
                    out.append(str(exc))
        return out

    first = reasons()
    assert any("cannot read" in text for text in first)
    assert [text for text in first if " at 0x" in text] == []
    assert reasons() == first


def _outcome(convert, datum):
    try:
        return ("ok", convert(datum))
    except Exception as exc:  # the error a decode would name: its type, text and field path
        return ("error", type(exc).__name__, str(exc), getattr(exc, "field", None))


def test_a_datum_converts_to_connect_json_and_what_does_not_fit_is_refused_with_its_field_path():
    """A record becomes the JSON JsonConverter writes (numbers exact text, bytes base64, named and recursive types
    by their namespace); a value that does not fit its schema is refused with the field path the dead letter
    names."""
    from cdc_codecs.debezium.debezium_avro_confluent import _Names, to_json_converter

    node = {"type": "record", "name": "Node", "namespace": "x.y", "fields": [
        {"name": "id", "type": "long"},
        {"name": "f", "type": ["null", "float", "string"]},
        {"name": "d", "type": {"type": "double", "connect.type": "float64"}},
        {"name": "b", "type": ["null", "bytes"]},
        {"name": "e", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "tags", "type": {"type": "array", "items": ["int", "string"]}},
        {"name": "attrs", "type": {"type": "map", "values": "Kind"}},
        {"name": "next", "type": ["null", "Node"]},  # recursive, by name in its namespace
        {"name": "flag", "type": "boolean"}]}
    inner = {"id": -1, "f": None, "d": 1e300, "b": None, "e": "B", "tags": [], "attrs": {}, "next": None,
             "flag": False}
    fine = {"id": 2**63 - 1, "f": 1.5, "d": 0.1, "b": b"\x00\xff", "e": "A", "tags": [1, "x"], "attrs": {"k": "B"},
            "next": inner, "flag": True}
    inner_json = {"id": "-1", "f": None, "d": "1e+300", "b": None, "e": "B", "tags": [], "attrs": {}, "next": None,
                  "flag": False}
    fine_json = {"id": "9223372036854775807", "f": "1.5", "d": "0.1", "b": "AP8=", "e": "A", "tags": ["1", "x"],
                 "attrs": {"k": "B"}, "next": inner_json, "flag": True}
    convert = to_json_converter(node, _Names(node))
    expected = [
        (fine, ("ok", fine_json)),
        (None, ("ok", None)),
        ({**fine, "tags": [1, 2.5]}, ("ok", {**fine_json, "tags": ["1", "2.5"]})),  # int fails, string takes it
        ({**fine, "attrs": None}, ("ok", {**fine_json, "attrs": None})),
        ({"id": 5}, ("ok", {k: "5" if k == "id" else None for k in fine_json})),  # missing fields are null
        ({**fine, "id": "7"}, ("error", "_Bad", "expected an integer, got '7'", ".id")),
        ({**fine, "id": True}, ("error", "_Bad", "expected an integer, got True", ".id")),
        ({**fine, "next": {**fine, "next": {**fine, "id": 1.0}}},
         ("error", "_Bad", "expected an integer, got 1.0", ".next.next.id")),
        ({**fine, "d": "nan?"}, ("error", "_Bad", "expected a number, got 'nan?'", ".d")),
        ({**fine, "d": [1]}, ("error", "_Bad", "expected a number, got [1]", ".d")),
        ({**fine, "next": {**fine, "e": None, "b": 7}}, ("error", "_Bad", "expected bytes, got 7", ".next.b")),
        ({**fine, "next": "not a record"}, ("error", "_Bad", "expected a record, got str", ".next")),
        ({**fine, "tags": "1"}, ("error", "_Bad", "expected an array, got str", ".tags")),
        ({**fine, "attrs": ["k"]}, ("error", "_Bad", "expected a map, got list", ".attrs")),
    ]
    for datum, outcome in expected:
        assert _outcome(lambda d: convert(d, ""), datum) == outcome, datum

    odd = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": ["null", "Missing"]}, {"name": "n", "type": "null"},
        {"name": "w", "type": {"type": "weird"}}]}
    convert = to_json_converter(odd, _Names(odd))
    assert _outcome(lambda d: convert(d, ""), {}) == ("ok", {"u": None, "n": None, "w": None})
    for datum, outcome in [({"u": 1}, ("error", "_Bad", "unknown Avro type name 'Missing'", ".u")),
                           ({"n": 3}, ("error", "_Bad", "expected null", ".n")),
                           ({"w": 3}, ("error", "_Bad", "unsupported Avro type {'type': 'weird'}", ".w"))]:
        assert _outcome(lambda d: convert(d, ""), datum) == outcome, datum
