"""drs-json: the documented Huawei DRS JSON examples (UPDATE, INIT, INIT_DDL), deletes in old/data, binary
byte-array text, Gson escaping, malformed input, events of other formats and the canonical scenario."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Event, Op, Position, get_codec
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("drs-json")
CODEC = get_codec("drs-json")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.json"))
C12 = [106, 103, 111, 106, 103, 111, 105, 100, 115, 106, 103, 111, 106, 111, 115, 111, 103, 57, 51, 52, 48, 57,
       52, 51, 48, 57, 116, 106, 104, 114, 103, 106, 101, 119, 57, 116, 117, 48, 57, 51, 52, 48, 116, 101, 114, 111,
       101, 106, 103, 57, 56, 51, 48, 52, 105, 101, 117, 114, 103, 57, 101, 119, 117, 114, 103, 48, 119, 101, 117,
       116, 57, 114, 48, 52, 117, 48, 57, 53, 116, 117, 51, 48, 57, 50, 117, 116, 48, 57, 51, 117, 116, 48, 119,
       57, 101]


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, source: str = "drs.json", offset: int = 3):
    return CODEC.decode(data, Position(source=source, offset=offset))


def message(**fields) -> bytes:
    """A small DRS JSON message; fields override the defaults."""
    msg = {"mysqlType": {"id": "int", "name": "varchar(20)", "pic": "varbinary(8)"}, "id": 500,
           "es": 1700000000000, "ts": 1700000000123, "database": "shop", "table": "items", "type": "INSERT",
           "isDdl": False, "sql": "", "sqlType": {"id": 4, "name": 12, "pic": -3},
           "data": [{"id": "1", "name": "a", "pic": "[1, 2]"}], "old": None, "pkNames": ["id"]}
    msg.update(fields)
    return json.dumps(msg).encode()


def test_update_example_fields():
    [e] = decode(raw("update.json"))
    assert (e.op, e.database, e.schema, e.table) == (Op.UPDATE, "test01", None, "test")
    assert e.qualified_table == "test01.test"
    assert e.primary_key == ("id",)
    assert e.sequence == (Decimal(27677),) and e.event_time_ms == 1624614713000
    assert e.position.index == 0 and e.position.offset == 3
    b, a = e.before, e.after
    assert (b["id"], a["id"]) == ("103", "104")  # the key changed
    assert b["c13"] == "asfiajhfiaf939-0239" and a["c13"].endswith("90weurtg103")
    assert a["c12"] == base64.b64encode(bytes(C12)).decode()
    assert a["c11"] == "" and a["c2"] == ""  # "[]" is an empty byte array, not NULL
    assert a["c5"] == "1624614713.201"  # MySQL timestamp: already epoch seconds
    assert a["c4"] == "2021-06-25 17:51:53"
    assert (a["c7"], a["c8"], a["c9"]) == ("10357.0", "1.2510357E7", "9874510357")
    assert a["c10"] == "华为云huaweicloud"
    assert e.column("c4") == Column("c4", "datetime", 94)  # DRS's sqlType for datetime, kept as given
    assert e.column("c14") == Column("c14", "blob", 2004)
    assert e.column("id") == Column("id", "int", 4)
    # the example's table is "test " (trailing blank): canonical "test", the original kept for re-encode
    assert ["table", '"test "'] in e.vendor["fix"]
    assert ["ts", "1625058726990"] in e.vendor["fix"]


def test_init_is_a_snapshot_row_and_keeps_job_metadata():
    [e] = decode(raw("init.json"))
    assert e.op is Op.SNAPSHOT and e.before is None
    assert e.after["id"] == "104" and e.after["c3"] == "103"
    assert e.sequence == (Decimal(27677),)
    fix = dict(e.vendor["fix"])
    assert fix["jobId"] == '"e28c0c1e-e3ab-4f6c-bbc2-69c28670deec"'
    assert fix["eventId"] == '"mysql-bin.000065:800;2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:1-251167"'


def test_init_ddl_is_a_ddl_event():
    [e] = decode(raw("init-ddl.json"))
    assert e.op is Op.DDL
    assert e.ddl.startswith("CREATE TABLE `test` ( `id` int(11) NOT NULL AUTO_INCREMENT")
    assert (e.database, e.table, e.before, e.after, e.columns, e.primary_key) == ("test01", "test", None, None,
                                                                                   (), ())
    assert e.sequence == (Decimal(0),) and e.event_time_ms == 1733998006282
    assert ["type", '"INIT_DDL"'] in e.vendor["fix"]


def test_delete_row_in_old_as_documented():
    row = {"id": "7", "name": None, "pic": "[]"}
    data = message(type="DELETE", data=None, old=[row])
    [e] = decode(data)
    assert e.op is Op.DELETE and e.after is None
    assert e.before == {"id": "7", "name": None, "pic": ""}  # name is NULL, present
    [m] = CODEC.encode([e])
    out = json.loads(m.value)
    assert out["old"] == [row] and out["data"] is None
    assert as_json(m.value) == as_json(data)


def test_delete_row_in_data_is_accepted_and_reproduced():
    row = {"id": "7", "name": "x", "pic": "[9]"}
    data = message(type="DELETE", data=[row], old=None)
    [e] = decode(data)
    assert e.op is Op.DELETE and e.before == {"id": "7", "name": "x", "pic": "CQ=="}
    assert e.vendor["delete_rows"] == "data"
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)
    both = message(type="DELETE", data=[row], old=[row])
    [e2] = decode(both)
    assert e2.vendor["delete_rows"] == "both" and e2.before == e.before
    assert as_json(CODEC.encode([e2])[0].value) == as_json(both)


def test_delete_with_different_rows_in_data_and_old_is_rejected():
    data = message(type="DELETE", data=[{"id": "7"}], old=[{"id": "8"}])
    with pytest.raises(DecodeError) as err:
        decode(data, offset=11)
    assert err.value.vendor == "drs-json" and err.value.field == "data"
    assert err.value.position.offset == 11


def test_multi_row_message_gives_one_event_per_row_and_packs_back():
    rows = [{"id": "1", "name": "a", "pic": "[1]"}, {"id": "2", "name": "b", "pic": "[-128, 127]"}]
    data = message(data=rows)
    events = decode(data)
    assert [e.position.index for e in events] == [0, 1]
    assert events[1].after == {"id": "2", "name": "b", "pic": base64.b64encode(bytes([128, 127])).decode()}
    [m] = CODEC.encode(events)
    assert m.events == 2 and m.table == "shop.items" and m.op == "INSERT"
    assert m.key == "shop.items\x011".encode()
    assert as_json(m.value) == as_json(data)


def test_unsigned_bytes_and_bare_numbers_are_reproduced_exactly():
    data = message(data=[{"id": 1, "name": "a", "pic": "[0, 255, 16]"}])
    [e] = decode(data)
    assert e.after["pic"] == base64.b64encode(bytes([0, 255, 16])).decode()
    assert e.after["id"] == "1" and e.column("id").number is True
    assert e.vendor["cells"] == {"data": {"pic": '"[0, 255, 16]"'}}
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)
    # a cell fix is not reused once the value changed: the new value is rendered the standard way
    changed = e.with_(after={**e.after, "pic": base64.b64encode(bytes([200])).decode()})
    assert json.loads(CODEC.encode([changed])[0].value)["data"][0]["pic"] == "[-56]"


def test_gson_html_escaping_is_read_and_written():
    data = b'{"mysqlType":{"id":"int","s":"varchar"},"id":1,"es":1,"ts":1,"database":"d","table":"t",' \
           b'"type":"INSERT","isDdl":false,"sql":"","sqlType":{"id":4,"s":12},' \
           b'"data":[{"id":"1","s":"a\\u003db \\u003cc\\u003e \\u0026 \\u0027q\\u0027"}],"old":null,"pkNames":null}'
    [e] = decode(data)
    assert e.after["s"] == "a=b <c> & 'q'"
    out = CODEC.encode([e])[0].value
    assert b"a\\u003db \\u003cc\\u003e \\u0026 \\u0027q\\u0027" in out
    assert as_json(out) == as_json(data)


@pytest.mark.parametrize("data, field", [
    (b"{not json", "$"),
    (b"[1, 2]", "$"),
    (message(type="UPSERT"), "type"),
    (message(id="x1"), "id"),
    (message(id=None), "id"),
    (message(es=1.5), "es"),
    (message(mysqlType=["int"]), "mysqlType"),
    (message(sqlType={"id": "INTEGER"}), "sqlType.id"),
    (message(data=[{"id": "1", "name": "a", "pic": "0x0102"}]), "data[0].pic"),
    (message(data=[{"id": "1", "name": ["a"], "pic": "[]"}]), "data[0].name"),
    (message(data=[]), "data"),
    (message(type="UPDATE", old=[]), "old"),
    (message(type="INSERT", old=[{"id": "1"}]), "old"),
    (message(pkNames="id"), "pkNames"),
])
def test_malformed_messages_name_the_field(data, field):
    with pytest.raises(DecodeError) as err:
        CODEC.decode(data, Position(source="topic-a", partition=2, offset=42))
    assert err.value.vendor == "drs-json"
    assert err.value.field == field
    assert err.value.position.partition == 2 and err.value.position.offset == 42
    assert "topic-a partition 2 offset 42" in str(err.value)


def test_a_remembered_declaration_does_not_hide_a_malformed_one():
    # decode caches what a declaration means; a sqlType code written as the string "4" reads like the number 4
    [e] = decode(message())
    assert e.column("id") == Column("id", "int", 4)
    with pytest.raises(DecodeError) as err:
        decode(message(sqlType={"id": "4", "name": 12, "pic": -3}))
    assert err.value.field == "sqlType.id"


def test_each_message_keeps_its_own_spelling_of_the_declaration():
    # the same columns declared in full, in part, without sqlType and with a null sqlType: different messages,
    # each seen twice
    full, part = message(), message(sqlType={"id": 4})
    without = json.dumps({k: v for k, v in json.loads(full).items() if k != "sqlType"}).encode()
    null = message(sqlType=None)
    cases = ((full, None), (part, ["sqlType", '{"id":4}']), (without, ["sqlType", None]), (null, ["sqlType", "null"]))
    for data, fix in cases + cases:
        [e] = decode(data)
        assert [f for f in e.vendor.get("fix", []) if f[0] in ("mysqlType", "sqlType")] == ([fix] if fix else [])
        assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_row_error_position_carries_the_row_index():
    data = message(data=[{"id": "1", "name": "a", "pic": "[]"}, {"id": "2", "name": "b", "pic": "[300]"}])
    with pytest.raises(DecodeError) as err:
        decode(data)
    assert err.value.field == "data[1].pic" and err.value.position.index == 1


def test_events_of_another_format_are_derived_from_canonical_fields():
    cols = (Column("k", "bigint", -5, number=True), Column("b", "blob", 2004), Column("t", None, 93),
            Column("u", None, None))
    e = Event(format="canal-json", op=Op.UPDATE, database="db", table="tb", position=Position("x", offset=9),
              before={"k": "5", "b": "AP8=", "t": "2020-01-01 00:00:00", "u": "x"},
              after={"k": "6", "b": None, "t": "2020-01-01 00:00:01", "u": "y"},
              columns=cols, primary_key=("k",), event_time_ms=1234, sequence=(Decimal(77),),
              vendor={"fix": [["table", '"other"']]})  # another codec's vendor data is ignored
    [m] = CODEC.encode([e])
    out = json.loads(m.value)
    assert out["type"] == "UPDATE" and out["id"] == 77 and out["es"] == 1234 and out["ts"] == 1234
    assert out["table"] == "tb" and out["database"] == "db" and out["pkNames"] == ["k"]
    assert out["mysqlType"] == {"k": "bigint", "b": "blob", "t": "datetime", "u": "varchar"}
    assert out["sqlType"] == {"k": -5, "b": 2004, "t": 93, "u": 12}
    assert out["data"] == [{"k": "6", "b": None, "t": "2020-01-01 00:00:01", "u": "y"}]  # DRS writes strings
    assert out["old"] == [{"k": "5", "b": "[0, -1]", "t": "2020-01-01 00:00:00", "u": "x"}]
    [back] = decode(m.value)
    assert (back.before, back.after) == (e.before, e.after)


def test_control_events_are_not_carried_and_ddl_is():
    ddl = Event(format="x", op=Op.DDL, database="d", table="t", position=Position("x"), ddl="DROP TABLE t",
                sequence=(Decimal(3),))
    hb = Event(format="x", op=Op.HEARTBEAT, database=None, table=None, position=Position("x", offset=1))
    [m] = CODEC.encode([hb, ddl])
    out = json.loads(m.value)
    assert (out["type"], out["isDdl"], out["sql"], out["data"], out["mysqlType"]) == ("DDL", True, "DROP TABLE t",
                                                                                      None, None)


def test_scenario_round_trip():
    events = scenario_events()
    carried = [e for e in events if e.op in CODEC.capabilities.ops]
    assert {e.op for e in events} - {e.op for e in carried} == {Op.BEGIN, Op.COMMIT, Op.HEARTBEAT}
    messages = CODEC.encode(events)
    assert len(messages) == len(carried)
    back = [e for i, m in enumerate(messages) for e in decode(m.value, offset=i)]
    for want, got in zip(carried, back, strict=True):
        assert got.op is want.op
        assert (got.database, got.table) == (want.database, want.table)
        assert got.before == want.before and got.after == want.after
        assert got.primary_key == want.primary_key
        assert got.sequence == want.sequence and got.event_time_ms == want.event_time_ms
        assert got.ddl == want.ddl
        if want.op.is_data:
            assert [(c.name, c.type_name, c.jdbc_type) for c in got.columns] == \
                   [(c.name, c.type_name, c.jdbc_type) for c in want.columns]


@pytest.mark.parametrize("name", GOLDEN)
def test_vendor_survives_the_stored_record_shape(name):
    # replay stores events as flat records (vendor as a JSON string); re-encode must still be exact
    from cdc_codecs.records import from_record, to_record

    events = [from_record(to_record(e)) for e in decode(raw(name))]
    assert as_json(CODEC.encode(events)[0].value) == as_json(raw(name))
