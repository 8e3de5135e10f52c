"""OMS subscription Avro (AvroRecord): golden fixtures (Avro JSON encoding of each datum, bytes built here),
typed values, shards, malformed input and the canonical scenario round trip."""

from __future__ import annotations

import io
import json
import random
from dataclasses import replace
from decimal import Decimal

import pytest
from fastavro._read_py import reader as avro_json_reader  # the pure-Python reader takes the Avro JSON decoder
from fastavro.io.json_decoder import AvroJSONDecoder

from cdc_codecs import records
from cdc_codecs.event import DecodeError, EncodeError, Op, Position
from cdc_codecs.oms.oms_avro import CODEC, NS, SCHEMA, OmsAvroCodec, avro_dumps, avro_loads, comparable
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("oms-avro")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.datum.json") if not p.name.startswith("shard_"))
SHARDS = sorted(p.name for p in FIXTURES.glob("shard_*.datum.json"))


def datum_of(name: str) -> dict:
    text = json.dumps(json.loads((FIXTURES / name).read_text()))
    return next(iter(avro_json_reader(AvroJSONDecoder(io.StringIO(text)), SCHEMA, return_named_type=True,
                                      return_named_type_override=True)))


def message(name: str) -> bytes:
    return avro_dumps(SCHEMA, datum_of(name))


def decode_one(name: str):
    events = CODEC.decode(message(name), Position(source=name, offset=3))
    assert len(events) == 1
    return events[0]


def same_datum(a: bytes, b: bytes) -> bool:
    return comparable(avro_loads(SCHEMA, a)[0]) == comparable(avro_loads(SCHEMA, b)[0])


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_reencode_gives_equal_datum(name):
    raw = message(name)
    event = decode_one(name)
    out = CODEC.encode([event])
    assert len(out) == 1
    assert same_datum(out[0].value, raw)
    # the vendor dict survives the JSON trip through the archive's flat records
    again = records.from_record(json.loads(json.dumps(records.to_record(event), default=str)))
    assert same_datum(CODEC.encode([again])[0].value, raw)


def test_insert_all_mysql_types():
    e = decode_one("insert_mysql_all_types.datum.json")
    assert e.op is Op.INSERT and e.before is None
    assert (e.database, e.table, e.qualified_table) == ("demo", "all_types", "demo.all_types")
    assert e.primary_key == ("id",)
    assert e.sequence == (Decimal(1001),) and e.event_time_ms == 1_700_000_000_000
    assert e.transaction_id == "1700000000_123"
    a = e.after
    assert a["id"] == "1" and a["c_tinyint"] == "-128"
    assert a["c_ubigint"] == "18446744073709551615"
    assert a["c_decimal"] == "12345678901234567890123456789012345.123456789012345678901234567890"
    assert a["c_float"] == "1.2222"  # shortest text of the 32-bit float, not 1.2222000360488892
    assert a["c_double"] == "9.999999999999"
    assert a["c_varchar"] == 'héllo, "world"\n'
    assert a["c_blob"] == "AP8Q/w=="
    assert a["c_timestamp"] == "1606233662.012345"
    assert a["c_date"] == "2020-11-25"
    assert a["c_time"] == "-838:59:59"
    assert a["c_datetime"] == "2020-11-25 00:01:02.123456789"
    assert a["c_bool"] == "1" and a["c_bit"] == "5"
    assert a["c_geometry"] == "AQEAAAAAAAAAAADwPwAAAAAAAABA"  # WKB as base64
    assert a["c_enum"] == "b" and a["c_set"] == "x,z"
    assert a["c_json"] == '{"k": [1, 2.50, "v"]}'
    assert "c_null" in a and a["c_null"] is None
    types = {c.name: c.type_name for c in e.columns}
    assert types["c_decimal"] == "DECIMAL(65,30)" and types["c_bit"] == "BIT(8)"
    assert types["c_timestamp"] == "TIMESTAMP" and types["c_ubigint"] == "LONG" and types["c_float"] == "FLOAT"
    assert all(c.jdbc_type is None for c in e.columns)  # dataTypeNumber has no documented numbering
    assert e.vendor["fields"][:3] == [8, 1, 8]


def test_update_oracle_zoned_raw_and_null_type():
    e = decode_one("update_oracle_zoned.datum.json")
    assert e.op is Op.UPDATE and (e.database, e.table) == ("HR", "EMP")
    assert e.before["HIRED"] == "2020-11-25 08:01:02.5 Asia/Shanghai"
    assert e.after["HIRED"] == "2020-11-25 08:01:02.5 +08:00"
    assert e.column("HIRED").type_name == "TIMESTAMP WITH TIME ZONE"
    assert e.before["PHOTO"] == "3q2+7w==" and e.column("PHOTO").type_name == "RAW"
    assert e.before["SALARY"] == "1E-10"  # decimal text verbatim
    assert e.after["SALARY"] == "99999999999999999999999999.9999999999"
    assert e.before["NOTE"] == "old note" and e.after["NOTE"] is None  # type_info NULL
    assert e.after["SPAN"] == "+01 02:03:04.500000"
    assert e.primary_key == ("EMP_ID",) and e.vendor["ukIndexes"] == [[2]]


def test_delete_and_control_records():
    d = decode_one("delete.datum.json")
    assert d.op is Op.DELETE and d.after is None and d.before == {"id": "2", "name": ""}
    ddl = decode_one("ddl.datum.json")
    assert ddl.op is Op.DDL and ddl.ddl == "ALTER TABLE `t1` ADD COLUMN `c2` int NULL" and ddl.table == "t1"
    begin, commit = decode_one("begin.datum.json"), decode_one("commit.datum.json")
    assert (begin.op, commit.op) == (Op.BEGIN, Op.COMMIT)
    assert begin.transaction_id == commit.transaction_id == "tx-10"
    assert begin.sequence < commit.sequence
    hb = decode_one("heartbeat.datum.json")
    assert hb.op is Op.HEARTBEAT and hb.table is None and hb.event_time_ms == 1_700_000_005_000


def shard_fragments(names):
    out = []
    for i, name in enumerate(names):
        events = CODEC.decode(message(name), Position(source=f"file-{i % 2}", offset=i))
        assert len(events) == 1
        out.append(events[0])
    return out


def test_shards_reassemble_in_any_order():
    names = list(SHARDS)
    random.Random(7).shuffle(names)
    fragments = shard_fragments(names)
    assert {f.fragment_key for f in fragments} == {"1006"}
    assert sorted(f.fragment_index for f in fragments) == [0, 1, 2, 3]
    assert all(f.fragment_total == 4 and f.op is Op.INSERT and f.table == "docs" for f in fragments)
    event = CODEC.assemble(fragments)
    assert event.fragment_key is None and event.fragment_total == 1
    assert event.after == {"id": "6", "body": "lorem ipsum dolor sit amet " * 12}
    assert event.primary_key == ("id",) and event.sequence == (Decimal(1006),)
    # re-encoding reproduces the same shards
    out = CODEC.encode([event])
    assert len(out) == 4 and [m.events for m in out] == [1, 0, 0, 0]
    for name, msg in zip(SHARDS, out):
        assert same_datum(msg.value, message(name))


def test_missing_shard_is_a_decode_error():
    fragments = shard_fragments([n for n in SHARDS if not n.startswith("shard_2_")])
    with pytest.raises(DecodeError) as info:
        CODEC.assemble(fragments)
    assert info.value.vendor == "oms-avro" and info.value.field == "index"
    assert "[2]" in info.value.reason and "1006" in info.value.reason


def test_encoder_splits_large_event_when_asked():
    event = decode_one("insert_mysql_all_types.datum.json")
    whole = CODEC.encode([event])[0].value
    small = OmsAvroCodec(max_message_size=300)
    out = small.encode([event])
    assert len(out) > 1 and all(len(m.value) <= 300 for m in out)
    fragments = [f for i, m in enumerate(reversed(out)) for f in CODEC.decode(m.value, Position("k", offset=i))]
    back = CODEC.assemble(fragments)
    assert back.after == event.after and back.columns == event.columns
    assert len(CODEC.encode([back])) == len(out)  # the decoded shard layout is kept for re-encoding
    unsplit = OmsAvroCodec(max_message_size=10 ** 6).encode([back])
    assert len(unsplit) == 1 and same_datum(unsplit[0].value, whole)
    with pytest.raises(EncodeError):
        OmsAvroCodec(max_message_size=50).encode([event])


def _malformed(**changes) -> bytes:
    datum = datum_of("delete.datum.json")
    datum.update(changes)
    return avro_dumps(SCHEMA, datum)


@pytest.mark.parametrize("raw, field", [
    (message("delete.datum.json")[:-3], "AvroRecord"),
    (message("delete.datum.json") + b"\x00", "AvroRecord"),
    (_malformed(operation=None), "operation"),
    (_malformed(pkIndexes=[5]), "pkIndexes[0]"),
    (_malformed(beforeImages=[{"type_info": "BIT", "value": (f"{NS}.BitObject", {"bit_length": 2, "value": "12"})},
                              {"type_info": "STRING", "value": "x"}]), "beforeImages[0].value"),
    (_malformed(beforeImages=[{"type_info": "INTEGER", "value": 1}]), "beforeImages"),
    (_malformed(total=3, index=1, beforeImageBytes=b"\x01", beforeImages=[]), "beforeImageBytes"),
])
def test_malformed_messages_name_format_field_and_position(raw, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(raw, Position(source="archive.avro", partition=2, offset=41))
    err = info.value
    assert (err.vendor, err.field) == ("oms-avro", field)
    assert err.position.offset == 41 and "archive.avro" in str(err)


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    back = []
    for i, msg in enumerate(CODEC.encode(source)):
        back.extend(CODEC.decode(msg.value, Position(source="re", offset=i)))
    assert len(back) == len(source)
    for want, got in zip(source, back):
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert (got.transaction_id, got.event_time_ms, got.sequence) == \
               (want.transaction_id, want.event_time_ms, want.sequence)
        assert got.before == want.before and got.after == want.after
        assert got.primary_key == want.primary_key
        if want.op.is_data:
            assert [c.name for c in got.columns] == [c.name for c in want.columns]
    types = {c.name: c.type_name for c in back[2].columns}
    assert types["c_decimal"] == "DECIMAL(65,30)" and types["c_zoned"] == "TIMESTAMP WITH TIME ZONE"
    assert types["c_bit"] == "BIT(8)" and types["c_float"] == "FLOAT" and types["c_double"] == "DOUBLE"


def test_partial_images():
    event = decode_one("delete.datum.json")
    with pytest.raises(EncodeError) as info:  # positional images cannot mark a column absent
        CODEC.encode([replace(event, format="other", vendor={}, before={"id": "2"})])
    assert info.value.field == "beforeImages"
    # an UPDATE after image without unchanged columns (SharePlex, Mongo $set) takes them from the before image
    update = replace(event, format="other", vendor={}, op=Op.UPDATE, after={"name": "new"})
    back, = CODEC.decode(CODEC.encode([update])[0].value, Position("u"))
    assert back.after == {"id": "2", "name": "new"} and back.before == {"id": "2", "name": ""}


def test_text_the_typed_form_cannot_hold_travels_as_string():
    event = decode_one("delete.datum.json")
    odd = replace(event, format="other", vendor={}, columns=(replace(event.columns[0], type_name="blob"),
                                                            event.columns[1]), before={"id": "POINT(1 2)", "name": ""})
    datum = avro_loads(SCHEMA, CODEC.encode([odd])[0].value)[0]
    assert datum["beforeImages"][0] == {"type_info": "BINARY", "value": "POINT(1 2)"}
    assert CODEC.decode(avro_dumps(SCHEMA, datum), Position("x"))[0].before["id"] == "POINT(1 2)"


@pytest.mark.parametrize("after_name, before_id", [
    ((f"{NS}.StringObject", {"charsetName": "gbk", "value": "new"}), 2),  # the column's charset (after image)
    ("new", 2 ** 40),  # a LONG-sized number in an INTEGER value
    ("new", 7),
])
def test_values_the_encoder_would_write_otherwise_are_kept(after_name, before_id):
    """A value is kept verbatim unless the encoder derives it back from its text: a plain string of a column
    that has a charset (taken from the after image) would come back as a StringObject, so it must be kept."""
    datum = datum_of("delete.datum.json")
    datum.update(operation="UPDATE",
                 beforeImages=[{"type_info": "INTEGER", "value": before_id}, {"type_info": "STRING", "value": "old"}],
                 afterImages=[{"type_info": "INTEGER", "value": 2}, {"type_info": "STRING", "value": after_name}])
    raw = avro_dumps(SCHEMA, datum)
    [event] = CODEC.decode(raw, Position("x"))
    assert event.before == {"id": str(before_id), "name": "old"}
    kept = event.vendor.get("raw", {}).get("before", {})
    assert ("name" in kept) == isinstance(after_name, tuple) and "id" not in kept
    assert same_datum(CODEC.encode([event])[0].value, raw)
