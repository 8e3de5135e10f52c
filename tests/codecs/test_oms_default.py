"""oms-default: golden fixtures from the OMS document (plus synthetic ROW / HEARTBEAT / DDL records), malformed
input and the canonical scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("oms-default")
CODEC = get_codec("oms-default")


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(name: str):
    [event] = CODEC.decode(raw(name), Position(source=name, partition=0, offset=5))
    return event


def as_json(value: bytes):
    return jsontext.normalise(jsontext.loads(value)[0])  # repairs the doc examples' trailing commas too


def test_insert_doc_example():
    e = decode("insert.json")
    assert (e.op, e.database, e.table) == (Op.INSERT, "database", "table_name")
    assert e.vendor["tenant"] == "tenant"  # "tenant.database" split; tenant kept for re-encode
    assert e.qualified_table == "database.table_name"
    assert e.before is None
    assert e.primary_key == ("int8", "int16")  # as given, though the image has col1..col14
    assert e.event_time_ms == 1609344671000
    assert e.sequence == ()  # no storeDataSequence in the example
    a = e.after
    assert a["col5"] == "10223372036854775806"
    assert a["col7"] == "9.999999" and a["col10"] == "9.99999999999"
    assert a["col9"] == "aGVsbG8gd29ybGQ="
    assert a["col14"] == "1606233662.012345"
    assert e.column("col5").number and e.column("col7").number
    assert not e.column("col8").number and not e.column("col14").number
    assert e.column("col1").type_name is None  # Default JSON declares no types


def test_update_and_delete_doc_examples():
    u = decode("update.json")
    assert u.op is Op.UPDATE
    assert u.before["col8"] == "hello world" and u.after["col8"] == "hello world 2020"
    assert u.before["col7"] == "9.999999999999"
    d = decode("delete.json")
    assert d.op is Op.DELETE and d.after is None
    assert "col16" in d.before and "col6" not in d.before  # the example's own column name, kept as is
    assert d.before["col7"] == "9.99999999"


def test_sequenced_update_metadata():
    e = decode("synthetic-update-sequenced.json")
    assert e.sequence == (Decimal(160934467100003),)
    assert e.transaction_id == "1609344671_000123"
    assert e.primary_key == ("id", "region")
    assert e.database == "shop" and e.vendor["tenant"] == "t1"
    assert e.before["note"] == "old" and e.after["note"] is None and "note" in e.after  # NULL, not absent
    assert e.after["amount"] == "2.00"  # trailing zero kept
    # record_primary_value is derivable from the image, so it is not stored again
    assert all(path[-1] != "record_primary_value" for path, _ in e.vendor.get("fix", []))


def test_row_is_snapshot():
    e = decode("synthetic-row-full-sync.json")
    assert e.op is Op.SNAPSHOT
    assert e.after == {"id": "10", "amount": "12.50", "note": None, "created": "2020-11-25 00:01:02.5"}
    assert e.event_time_ms is None and e.sequence == ()


def test_heartbeat_and_ddl():
    h = decode("synthetic-heartbeat.json")
    assert h.op is Op.HEARTBEAT and h.table is None and h.before is None and h.after is None
    assert h.event_time_ms == 1609344680000
    d = decode("synthetic-ddl.json")
    assert d.op is Op.DDL and d.ddl == "ALTER TABLE `orders` ADD COLUMN `c_new` int NULL"
    assert d.after is None and d.columns == ()


def test_truncate_ddl_record_is_truncate():
    text = (b'{"allMetaData":{"table_name":"t","db":"d","timestamp":"1"},"prevStruct":null,'
            b'"recordType":"DDL","postStruct":{"ddl":"truncate table t"}}')
    [e] = CODEC.decode(text, Position(source="s"))
    assert e.op is Op.TRUNCATE and e.ddl == "truncate table t"
    assert as_json(CODEC.encode([e])[0].value) == as_json(text)


@pytest.mark.parametrize("text, field", [
    (b'{"allMetaData":{},"recordType":"UPSERT","postStruct":{}}', "recordType"),
    (b'{"allMetaData":{},"recordType":"INSERT","postStruct":{"a":[1]}}', "postStruct.a"),
    (b'{"allMetaData":{},"recordType":"INSERT","postStruct":null}', "postStruct"),
    (b'{"allMetaData":{},"recordType":"UPDATE","postStruct":{"a":1}}', "prevStruct"),
    (b'{"allMetaData":{"timestamp":"yesterday"},"recordType":"INSERT","postStruct":{"a":1}}',
     "allMetaData.timestamp"),
    (b'{"allMetaData":{"storeDataSequence":"x"},"recordType":"INSERT","postStruct":{"a":1}}',
     "allMetaData.storeDataSequence"),
    (b'{"allMetaData":{},"recordType":"DDL","postStruct":{"sql":"x"}}', "postStruct.ddl"),
    (b'[1]', "$"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="topic", partition=1, offset=42))
    assert (info.value.vendor, info.value.field) == ("oms-default", field)
    assert "topic partition 1 offset 42" in str(info.value)


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    with pytest.raises(EncodeError):
        CODEC.encode([e for e in source if e.op is Op.BEGIN])
    carried = [e for e in source if e.op in CODEC.capabilities.ops]
    messages = CODEC.encode(carried)
    first = jsontext.loads(messages[0].value)[0]
    # foreign events: numbers bare by type family, text quoted
    assert first["postStruct"]["c_ubigint"] == jsontext.JsonNumber("18446744073709551615")
    assert type(first["postStruct"]["c_varchar"]) is str
    assert first["recordType"] == "ROW"
    for want, message in zip(carried, messages):
        [got] = CODEC.decode(message.value, Position(source="re"))
        assert got.op is want.op
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert got.before == want.before and got.after == want.after
        assert got.event_time_ms == want.event_time_ms  # scenario times are whole seconds
        assert got.sequence == want.sequence
        assert got.transaction_id == want.transaction_id
        if want.op.is_data:
            assert got.primary_key == want.primary_key
            image = want.after or want.before
            numeric = {c for c in ("c_tinyint", "c_int", "c_decimal", "c_float", "c_double") if image[c] is not None}
            assert numeric <= {c.name for c in got.columns if c.number}
            assert not any(c.number for c in got.columns if c.name in ("c_varchar", "c_timestamp", "c_blob"))
