"""oms-dataworks: OMS's DataWorks 2.0 JSON. Golden fixtures from the OMS document (incl. its heartbeat), synthetic
DDL / transaction / typed records, malformed input and the scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("oms-dataworks")
CODEC = get_codec("oms-dataworks")


def decode(name: str):
    [event] = CODEC.decode((FIXTURES / name).read_bytes(), Position(source=name, offset=2))
    return event


def test_doc_insert():
    e = decode("insert.json")
    assert (e.op, e.database, e.schema, e.table) == (Op.INSERT, "db", None, "tab")
    assert e.before is None
    assert e.after["col16"] == "2020-11-25 00:01:02.012345 Asia/Shanghai"
    assert e.after["col17"] == "INTERVAL '3' DAY"
    assert e.after["col7"] == "10223372036854775806" and e.column("col7").number
    assert e.after["col6"].startswith("0.000000000000") and len(e.after["col6"]) > 200
    assert e.column("zonedDateTime") == Column("zonedDateTime", "ZONED_DATETIME", None, False)
    assert e.primary_key == ("pkName1", "pkName12")  # as given, though no such columns
    assert e.event_time_ms == 1647581000000
    assert e.sequence == ()  # scn is the string "null"
    assert any("pkName1" in w for w in e.vendor["warnings"])
    assert "col1" in e.vendor["undeclared"]


def test_doc_update_and_delete():
    u = decode("update.json")
    assert u.op is Op.UPDATE and u.before["col9"] == "hello world" and u.after["col9"] == "hello world 2020"
    assert len(u.before) == len(u.after) == 18  # full images on both sides
    d = decode("delete.json")
    assert d.op is Op.DELETE and d.after is None and d.before["col8"] == "1"


def test_doc_heartbeat():
    e = decode("heartbeat.json")
    assert e.op is Op.HEARTBEAT and e.table is None and e.event_time_ms == 1620457659000
    assert "fix" not in e.vendor  # fully derivable


def test_typed_insert_ddl_and_transaction_marker():
    e = decode("synthetic-insert-typed.json")
    assert e.after == {"id": "7", "amount": "2.50", "paid": "1", "at": "2020-11-25 00:01:02.012345 Asia/Shanghai",
                       "note": None}
    assert [(c.name, c.type_name, c.number) for c in e.columns][:3] == [
        ("id", "BIGINT", True), ("amount", "DECIMAL", True), ("paid", "BOOLEAN", True)]
    assert e.sequence == (Decimal(1647581000000042),) and e.primary_key == ("id",)
    d = decode("synthetic-ddl.json")
    assert d.op is Op.DDL and d.ddl == "ALTER TABLE `tab` ADD COLUMN `c_new` int NULL" and d.table == "tab"
    assert d.vendor["op"] == "ALTER"
    b = decode("synthetic-transaction-begin.json")
    assert b.op is Op.BEGIN and b.sequence == (Decimal(1647581099000001),)


@pytest.mark.parametrize("text, field", [
    (b'{"version":"2.0","payload":{"op":"UPSERT"}}', "payload.op"),
    (b'{"version":"2.0","payload":{"op":"INSERT","after":{"data":{"a":{"b":1}}}}}', "payload.after.data.a"),
    (b'{"version":"2.0","payload":{"op":"INSERT","after":{"a":1}}}', "payload.after.data"),
    (b'{"version":"2.0","payload":{"op":"DELETE","after":null,"before":null}}', "payload.before"),
    (b'{"version":"2.0","payload":{"op":"INSERT","after":{"data":{}},"scn":"x1"}}', "payload.scn"),
    (b'{"version":"2.0","payload":{"op":"ALTER","ddl":{"sql":"x"}}}', "payload.ddl.text"),
    (b'{"version":"2.0","schema":{"column":[{"type":"INT"}]},"payload":{"op":"HEARTBEAT"}}', "schema.column[0]"),
    (b'{"version":"2.0"}', "payload"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="topic", partition=4, offset=6))
    assert (info.value.vendor, info.value.field) == ("oms-dataworks", field)
    assert "topic partition 4 offset 6" in str(info.value)


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    carried = [e for e in source if e.op in CODEC.capabilities.ops or e.op is Op.SNAPSHOT]
    assert len(carried) == len(source)
    for want, message in zip(carried, CODEC.encode(carried)):
        [got] = CODEC.decode(message.value, Position(source="re"))
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert got.before == want.before and got.after == want.after
        assert got.event_time_ms == want.event_time_ms and got.sequence == want.sequence
        if want.op.is_data:
            assert got.primary_key == want.primary_key
            assert [(c.name, c.type_name) for c in got.columns] == [(c.name, c.type_name) for c in want.columns]


def test_foreign_truncate_and_snapshot_ops():
    snapshot = scenario_events()[0]
    # a TRUNCATE without statement (Debezium's "t") gets the one it stands for: this format's TRUNCATE carries one
    [message] = CODEC.encode([snapshot.with_(op=Op.TRUNCATE, ddl=None, before=None, after=None)])
    body = jsontext.loads(message.value)[0]
    assert body["payload"]["op"] == "TRUNCATE" and body["payload"]["ddl"] == {"text": "TRUNCATE TABLE demo.all_types"}
    assert CODEC.decode(message.value, Position("t", -1, 1))[0].op is Op.TRUNCATE
    [message] = CODEC.encode([snapshot])
    assert jsontext.loads(message.value)[0]["payload"]["op"] == "INSERT"  # no full-sync marker in this format


@pytest.mark.parametrize("declared", [
    [{"name": "id", "type": "BIGINT"}],  # exactly what the encoder derives: nothing to keep
    [{"name": "id", "type": "BIGINT", "comment": "key"}],  # a key of its own
    [{"name": "id"}],  # no type at all (derived: "type": null)
])
def test_declaration_survives_re_encode(declared):
    """schema.column is compared with the derived declaration (a fast == when they agree): whatever differs
    must still be kept, so the message re-encodes byte for byte."""
    text = jsontext.dumps({"version": "2.0",
                           "schema": {"source": {"dbType": None, "dbVersion": None, "dbName": "shop", "schema": None,
                                                 "table": "t"}, "column": declared, "pk": ["id"]},
                           "payload": {"op": "INSERT", "timestamp": {"eventTime": jsontext.JsonNumber("1000"),
                                                                     "checkpointTime": jsontext.JsonNumber("1")},
                                       "before": None, "after": {"data": {"id": jsontext.JsonNumber("7")}},
                                       "ddl": None, "scn": "5"}})
    [event] = CODEC.decode(text, Position(source="t", offset=1))
    assert ("fix" in event.vendor) == (declared != [{"name": "id", "type": "BIGINT"}])
    [message] = CODEC.encode([event])
    assert message.value == text
