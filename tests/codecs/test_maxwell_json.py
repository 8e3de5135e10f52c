"""maxwell-json: Maxwell's documented messages and Flink's Maxwell test data (golden fixtures), what they decode
to, the partial ``old`` image, bootstrap rows, ordering by binlog position, malformed input."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Event, Op, Position, get_codec
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("maxwell-json")
CODEC = get_codec("maxwell-json")


def decode(name: str, offset: int = 4) -> list[Event]:
    return CODEC.decode((FIXTURES / name).read_bytes(), Position(source=name, offset=offset))


def test_doc_insert_every_optional_key():
    [e] = decode("doc-insert.json")
    assert (e.op, e.qualified_table, e.primary_key, e.transaction_id) == (Op.INSERT, "test.e", ("id", "c"), "23396")
    assert e.after == {"id": "1", "m": "4.2341", "c": "2016-10-21 05:33:37.523000",
                       "comment": "I am a creature of light."}
    assert [(c.name, c.number) for c in e.columns] == [("id", True), ("m", True), ("c", False), ("comment", False)]
    assert e.event_time_ms == 1477053217000
    assert e.sequence == (Decimal(6), Decimal(800911))  # master.000006:800911
    fixed = {tuple(path) for path, _ in e.vendor["fix"]}
    assert fixed == {("commit",), ("position",), ("server_id",), ("thread_id",), ("primary_key",)}


def test_update_before_is_data_merged_with_old():
    [e] = decode("doc-update.json")
    assert e.after["m"] == "5.444" and e.before["m"] == "4.2341"
    assert e.before["c"] == "2016-10-21 05:33:37.523000" and e.before["comment"] == e.after["comment"]
    assert e.vendor["old_keys"] == ["m", "c"] and e.sequence == (Decimal(1477053234),)  # no position: ts


def test_delete_row_is_the_before_image_and_numbers_keep_their_literal():
    [e] = decode("flink-delete-commit.json")
    assert (e.op, e.after, e.before["weight"], e.before["id"]) == (Op.DELETE, None, "0.8", "103")
    [u] = decode("flink-update-commit.json")
    assert u.after["weight"] == "1.0" and u.before["description"] == "16oz carpenter's hammer"
    assert [as_json(m.value) for m in CODEC.encode([u])] == [as_json((FIXTURES / "flink-update-commit.json")
                                                                     .read_bytes())]


def test_ddl_keeps_statement_and_definitions_ts_in_milliseconds():
    [e] = decode("doc-table-alter.json")
    assert (e.op, e.qualified_table, e.event_time_ms) == (Op.DDL, "test.e", 1477053308000)
    assert e.ddl == "alter table test.e add column torvalds bigint unsigned after m"
    assert {tuple(p) for p, _ in e.vendor["fix"]} == {("def",), ("old",), ("position",)}


def test_bootstrap_rows_are_snapshot_rows_and_markers_control_records():
    [start], [row], [done] = (decode(f"doc-bootstrap-{k}.json") for k in ("start", "insert", "complete"))
    assert (start.op, row.op, done.op) == (Op.HEARTBEAT, Op.SNAPSHOT, Op.HEARTBEAT)
    assert (start.vendor["type"], done.vendor["type"]) == ("bootstrap-start", "bootstrap-complete")
    assert row.after == {"txt": "hello"}
    [typed] = decode("synthetic-bootstrap-insert-typed.json")
    assert typed.after["big"] == "18446744073709551615" and typed.after["flag"] == "true"
    assert typed.after["dec"] == "12345678901234567890.123456789012345678" and typed.after["nul"] is None
    assert typed.after["js"] == '{"a":[1,2.50]}'


def test_set_array_and_zero_datetime_stay_as_written():
    [s] = decode("doc-set.json")
    assert (s.database, s.after) == (None, {"setcol": '["b_val","c_val"]'})
    [d] = decode("doc-datetime-zero.json")
    assert d.after == {"dtcol": "0000-00-00 00:00:00"} and d.event_time_ms is None


def test_foreign_events_write_numbers_bare_position_and_changed_columns():
    events = [e for e in scenario_events() if CODEC.capabilities.carries(e.op)]
    update = next(e for e in events if e.op is Op.UPDATE).with_(sequence=(Decimal(3), Decimal(1068)))
    [m] = CODEC.encode([update])
    msg = json.loads(m.value, parse_float=Decimal)
    assert msg["type"] == "update" and msg["position"] == "mysql-bin.000003:1068"
    assert msg["data"]["c_ubigint"] == 18446744073709551615 and isinstance(msg["data"]["c_decimal"], Decimal)
    assert msg["data"]["c_varchar"] is None and msg["data"]["c_blob"] == "AP8Q/w=="
    assert sorted(msg["old"]) == ["c_int", "c_text", "c_varchar"]  # the changed columns only
    assert msg["ts"] == update.event_time_ms // 1000 and "xid" not in msg  # tx-1 is no InnoDB transaction id
    [back] = CODEC.decode(m.value, Position("m"))
    assert (back.before, back.after, back.sequence) == (update.before, update.after, update.sequence)
    snapshot = next(e for e in events if e.op is Op.SNAPSHOT)
    assert json.loads(CODEC.encode([snapshot])[0].value)["type"] == "bootstrap-insert"
    heartbeat = next(e for e in scenario_events() if e.op is Op.HEARTBEAT)
    with pytest.raises(EncodeError, match="HEARTBEAT"):
        CODEC.encode([heartbeat])


@pytest.mark.parametrize("name,field", [("malformed-unknown-type.json", "type"),
                                        ("malformed-old-on-insert.json", "old")])
def test_malformed_fixture_names_the_field(name, field):
    with pytest.raises(DecodeError) as info:
        decode(name, offset=9)
    assert (info.value.vendor, info.value.field, info.value.position.offset) == ("maxwell-json", field, 9)


@pytest.mark.parametrize("text,field", [
    ('{"type":"insert","ts":"1477053217","data":{"id":1}}', "ts"),
    ('{"type":"insert","ts":1.5,"data":{"id":1}}', "ts"),
    ('{"type":"insert","xid":"x","data":{"id":1}}', "xid"),
    ('{"type":"insert","position":"master:abc","data":{"id":1}}', "position"),
    ('{"type":"insert","data":[1]}', "data"),
    ('{"type":"delete"}', "data"),
    ('{"type":"insert","data":{"id":1},"primary_key_columns":"id"}', "primary_key_columns"),
    ('{"type":"table-create","sql":5}', "sql"),
    ('{"type":7,"data":{}}', "type"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text.encode(), Position("m", offset=2))
    assert info.value.field == field and "m line 2" in str(info.value)

