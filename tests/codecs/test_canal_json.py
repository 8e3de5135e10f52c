"""canal-json: golden fixtures from the OMS, OMS-subscription and CloudCanal documents, malformed input, and the
canonical scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, EncodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("canal-json")
CODEC = get_codec("canal-json")
TINY_DOUBLE = "9.99999999999999909326625337248461995470488734032045693707225049331647881341"


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(name: str, offset: int = 7):
    return CODEC.decode(raw(name), Position(source=name, offset=offset))


def test_oms_insert_fields_and_bare_numbers():
    [e] = decode("oms-insert.json")
    assert (e.op, e.database, e.table, e.schema) == (Op.INSERT, "database", "table", None)
    assert e.before is None
    assert e.primary_key == ("col1", "col2")
    assert e.event_time_ms == 1609344671000 and e.sequence == (Decimal(1609344671000),)
    assert e.position.index == 0 and e.position.offset == 7
    a = e.after
    assert a["col1"] == "2020-11-25 00:01:02"
    assert a["col13"] == "10223372036854775806"  # beyond int64, kept exact
    assert a["col8"] == "9223372036854775806"
    assert a["col4"].startswith(TINY_DOUBLE) and a["col4"].endswith("2392578125E-308")
    assert a["col9"] == "aGVsbG8gd29ybGQ="
    assert a["col14"] == "1606233662.012345"
    col3, col2, col13 = e.column("col3"), e.column("col2"), e.column("col13")
    assert (col3.type_name, col3.jdbc_type, col3.number) == ("float", 6, True)
    assert (col2.type_name, col2.jdbc_type, col2.number) == ("varchar", 12, False)
    assert (col13.type_name, col13.jdbc_type, col13.number) == ("bigint", -5, True)
    # the batch id is absent in OMS's Canal, and ts is a build time: both only in vendor, not in the sequence
    assert [["id"], None] in e.vendor["fix"] and [["ts"], "1618323429026"] in e.vendor["fix"]


def test_oms_update_old_keyed_by_unknown_column_is_kept():
    [e] = decode("oms-update.json")
    assert e.op is Op.UPDATE
    assert e.after["col2"] == "hello world 2020"
    # `old` names column "string", which the row does not have: kept verbatim in the before image and flagged
    assert e.before["string"] == "hello world"
    assert "string" not in e.after
    assert e.before["col2"] == "hello world 2020"  # not in old, so unchanged by Canal semantics
    assert e.vendor["old_keys"] == ["string"]
    assert any("'string'" in w for w in e.vendor["warnings"])


def test_oms_delete_row_in_data_and_foreign_pk_names_kept():
    [e] = decode("oms-delete.json")
    assert e.op is Op.DELETE and e.after is None
    assert e.before["col2"] == "hello world"
    assert e.primary_key == ("int8", "int16")
    assert any("'int8'" in w for w in e.vendor["warnings"])


def test_subscription_update_changed_column_only():
    [e] = decode("oms-subscription-update.json")
    assert (e.database, e.table, e.primary_key) == ("inventory", "products", ("id",))
    assert e.after == {"id": "111", "name": "name", "description": "Big 2-wheel scooter", "weight": "5.18"}
    assert e.before == {"id": "111", "name": "name", "description": "Big 2-wheel scooter", "weight": "5.15"}
    assert e.column("weight") == Column("weight", "FLOAT", 7, False)
    assert e.sequence == (Decimal(1589373560000),)
    assert [["id"], "9"] in e.vendor["fix"]


def test_cloudcanal_dml_update_every_column_in_old():
    [e] = decode("cloudcanal-dml-update.json")
    assert e.after == {"col1": "11", "col2": "11", "col_pk": "11"}
    assert e.before == {"col1": "22", "col2": "22", "col_pk": "22"}
    assert e.primary_key == ("col_pk",)


def test_cloudcanal_ddl():
    [e] = decode("cloudcanal-ddl-alter.json")
    assert e.op is Op.DDL and e.before is None and e.after is None
    assert e.ddl == "alter table table_test add col2 varchar(22) null"
    assert e.vendor["type"] == "ALTER"
    assert [c.name for c in e.columns] == ["col1", "col2", "col_pk"]


def test_multirow_message_gives_one_event_per_row_and_packs_back():
    events = decode("synthetic-alibaba-multirow-update.json")
    assert [e.position.index for e in events] == [0, 1]
    first, second = events
    assert first.before == {"id": "1", "name": "a", "price": "10.50", "note": None}
    assert first.after["name"] == "a2"
    # NULL in old is a NULL old value, not an absent column
    assert second.before == {"id": "2", "name": "b", "price": "6.99", "note": None}
    assert second.after["note"] == "x"
    assert all(not c.number for c in first.columns)  # Alibaba dialect: every value quoted
    [message] = CODEC.encode(events)
    assert message.events == 2
    assert as_json(message.value)["old"] == [{"name": "a"}, {"price": "6.99", "note": None}]


def test_truncate():
    [e] = decode("synthetic-alibaba-truncate.json")
    assert e.op is Op.TRUNCATE and e.ddl == "TRUNCATE TABLE `items`" and e.table == "items"


def test_placeholder_type_from_cloudcanal_doc_is_rejected():
    with pytest.raises(DecodeError) as info:
        decode("malformed-cloudcanal-placeholder-type.json", offset=3)
    err = info.value
    assert (err.vendor, err.field, err.position.offset) == ("canal-json", "type", 3)


@pytest.mark.parametrize("text, field", [
    (b'{"type":"INSERT","data":[{"a":"1"},{"a":{"x":1}}],"database":"d","table":"t","isDdl":false}', "data[1].a"),
    (b'{"type":"UPDATE","data":[{"a":"1"}],"old":[],"database":"d","table":"t","isDdl":false}', "old"),
    (b'{"type":"INSERT","data":[{"a":"1"}],"database":"d","table":"t","es":"soon"}', "es"),
    (b'{"type":"INSERT","data":[{"a":"1"}],"database":"d","table":"t","sqlType":{"a":"int"}}', "sqlType.a"),
    (b'{"type":"INSERT",', "$"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="topic", partition=2, offset=99))
    assert info.value.field == field and info.value.vendor == "canal-json"
    assert "topic partition 2 offset 99" in str(info.value)


def test_row_error_position_has_row_index():
    text = b'{"type":"INSERT","data":[{"a":"1"},{"a":[1]}],"database":"d","table":"t","isDdl":false}'
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="f"))
    assert info.value.position.index == 1


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    carried = [e for e in source if e.op in CODEC.capabilities.ops or e.op is Op.SNAPSHOT]
    with pytest.raises(EncodeError):
        CODEC.encode([e for e in source if e.op is Op.HEARTBEAT])
    back = []
    for i, message in enumerate(CODEC.encode(carried)):
        body = jsontext.loads(message.value)[0]
        if body["type"] != "ALTER":  # foreign events are written in Alibaba's all-strings dialect
            assert all(type(v) is str or v is None for row in body["data"] for v in row.values())
        back.extend(CODEC.decode(message.value, Position(source="re", offset=i)))
    assert len(back) == len(carried)
    for want, got in zip(carried, back):
        expected_op = Op.INSERT if want.op is Op.SNAPSHOT else want.op
        assert got.op is expected_op
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert got.event_time_ms == want.event_time_ms
        if want.op.is_data:
            assert got.after == want.after
            assert got.before == want.before  # full before rebuilt from old + unchanged columns
            assert got.primary_key == want.primary_key
            assert [(c.name, c.type_name, c.jdbc_type) for c in got.columns] == \
                   [(c.name, c.type_name, c.jdbc_type) for c in want.columns]


def test_canal_binlog_rendering_bytes_bits_geometry_timestamp_exact():
    [e] = decode("canal-binlog-binary-timestamp.json")
    import base64 as b64

    a = e.after
    assert b64.b64decode(a["b"]) == bytes([0, 255, 128, 10, 34, 92])
    assert b64.b64decode(a["bl"]) == bytes(range(0, 256, 17))
    assert a["bt"] == str(0b100000000001)
    assert b64.b64decode(a["g"]) == bytes.fromhex("0101000000000000000000f03f0000000000000040")  # WKB, SRID 0
    assert a["ts"] == "1709210096.789012"  # 2024-02-29 12:34:56.789012 read as UTC
    assert a["dt"] == "1000-01-01 00:00:00.000000" and a["st"] == "x,y" and a["en"] == "b" and a["tx"] == "😀 é"
