"""oms-shareplex: golden fixtures from the OMS document, partial update images, malformed input and the
scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("oms-shareplex")
CODEC = get_codec("oms-shareplex")


def decode(name: str):
    [event] = CODEC.decode((FIXTURES / name).read_bytes(), Position(source=name, offset=11))
    return event


def test_insert_doc_example():
    e = decode("insert.json")
    assert (e.op, e.database, e.table) == (Op.INSERT, "mock_database", "mock_table")
    assert e.before is None and len(e.after) == 18
    assert e.after["col17"] == "10223372036854775806" and e.column("col17").number
    assert e.after["col9"] == "2020-11-25 00:01:02.012345 Asia/Shanghai"
    assert e.after["col3"] == "INTERVAL '3' DAY"
    assert e.after["col5"].startswith("9.999999999999999093266253372484619954704887340320456937072250493316")
    assert e.transaction_id == "shareplex_transaction_id"
    assert e.sequence == (Decimal(123456789), Decimal(1))  # (scn, seq)
    assert e.event_time_ms == 1606262462000  # 2020-11-25T00:01:02, read as UTC
    assert e.primary_key == ()  # rowid has key values, not key names


def test_update_partial_after_image():
    e = decode("update.json")
    assert e.op is Op.UPDATE
    assert e.after == {"string": "hello world 2020"}  # only the changed column; the rest absent, not NULL
    assert "col2" not in e.after
    assert e.before["col2"] == "hello world" and len(e.before) == 18
    assert any("string" in w for w in e.vendor["warnings"])  # data names a column key does not have


def test_delete_doc_example():
    e = decode("delete.json")
    assert e.op is Op.DELETE and e.after is None and e.before["col14"] == "3"
    assert [["meta", "rowid"], '"mock_database.mock_table-3\\u0001129"'] in e.vendor["fix"]


def test_foreign_update_writes_changed_columns_and_old_values():
    text = (b'{"type":"UPDATE","data":[{"id":"1","a":"new","b":"same"}],"old":[{"a":"old"}],'
            b'"database":"d","table":"t","pkNames":["id"],"es":1000,"isDdl":false,'
            b'"mysqlType":{"id":"int","a":"varchar(5)","b":"varchar(5)"}}')
    [canal] = get_codec("canal-json").decode(text, Position(source="c"))
    [message] = CODEC.encode([canal])
    body = jsontext.loads(message.value)[0]
    assert body["data"] == {"a": "new"}
    assert body["key"] == {"id": jsontext.JsonNumber("1"), "a": "old", "b": "same"}  # int family -> bare
    assert body["meta"]["table"] == "d.t" and body["meta"]["rowid"] == "d.t-1"
    assert body["meta"]["scn"] == "1000" and body["meta"]["time"] == "1970-01-01T00:00:01"


@pytest.mark.parametrize("text, field", [
    (b'{"data":{"a":1},"meta":{"op":"merge","table":"d.t"}}', "meta.op"),
    (b'{"data":{"a":1},"meta":{"op":"upd","table":"d.t"}}', "key"),
    (b'{"data":{"a":[1]},"meta":{"op":"ins","table":"d.t"}}', "data.a"),
    (b'{"data":{"a":1},"meta":{"op":"ins","table":7}}', "meta.table"),
    (b'{"data":{"a":1},"meta":{"op":"ins","table":"d.t","time":"25/11/2020"}}', "meta.time"),
    (b'{"data":{"a":1},"meta":{"op":"ins","table":"d.t","scn":"abc"}}', "meta.scn"),
    (b'{"data":{"a":1}}', "meta"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="topic", partition=3, offset=1))
    assert (info.value.vendor, info.value.field) == ("oms-shareplex", field)
    assert "topic partition 3 offset 1" in str(info.value)


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    with pytest.raises(EncodeError):
        CODEC.encode([e for e in source if e.op is Op.DDL])
    carried = [e for e in source if e.op in CODEC.capabilities.ops or e.op is Op.SNAPSHOT]
    for want, message in zip(carried, CODEC.encode(carried)):
        [got] = CODEC.decode(message.value, Position(source="re"))
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert (got.database, got.table) == (want.database, want.table)
        assert got.before == want.before
        if want.op is Op.UPDATE:
            assert got.after == {c: v for c, v in want.after.items() if want.before[c] != v}
        else:
            assert got.after == want.after
        assert got.event_time_ms == want.event_time_ms
        assert got.sequence == want.sequence and got.transaction_id == want.transaction_id
