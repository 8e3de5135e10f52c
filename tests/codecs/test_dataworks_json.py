"""dataworks-json: the DataWorks document's examples, update halves and their assembly, typed values, malformed
input and the canonical scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from cdc_codecs.contract import check_events
from cdc_codecs.dataworks.dataworks_json import _paths
from cdc_codecs.shared.json_fix import derive_fix
from fuzz import corpus, seed_messages  # beside this file
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("dataworks-json")
CODEC = get_codec("dataworks-json")
ROW_ID = "#alibaba_rds_row_id#"


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(name: str, offset: int = 3):
    [event] = CODEC.decode(raw(name), Position(source="topic", partition=1, offset=offset))
    return event


def test_doc_insert_without_primary_key_uses_rds_row_id():
    e = decode("doc-insert.json")
    assert (e.op, e.database, e.table, e.schema) == (Op.INSERT, "pkset_test", "pkset_test_no_pk", None)
    assert e.primary_key == (ROW_ID,)
    assert e.after == {"name": "name11", "job": "job11", "sex": "man", ROW_ID: "15"}
    assert e.before is None
    assert e.sequence == (Decimal("1620457642589000000"),) and e.event_time_ms == 1620457896000
    assert [(c.name, c.type_name, c.number) for c in e.columns] == [
        ("name", "STRING", False), ("job", "STRING", False), ("sex", "STRING", False), (ROW_ID, "LONG", True)]
    body = jsontext.loads(CODEC.encode([e])[0].value)[0]
    assert body["schema"]["primaryKey"] is None  # the derived key is not written back


def test_update_halves_are_fragments_assembled_in_any_order():
    before_half = decode("doc-update-before.json", offset=10)
    after_half = decode("doc-update-after.json", offset=11)
    assert (before_half.fragment_index, after_half.fragment_index) == (0, 1)
    assert before_half.fragment_total == after_half.fragment_total == 2
    assert before_half.fragment_key == after_half.fragment_key
    assert "1620457642589000001" in before_half.fragment_key
    assert before_half.after is None and after_half.before is None
    for fragments in ([before_half, after_half], [after_half, before_half]):
        e = CODEC.assemble(fragments)
        assert e.op is Op.UPDATE and e.fragment_total == 1 and e.fragment_key is None
        assert e.before["sex"] == "man" and e.after["sex"] == "woman"
        assert e.position.offset == 10  # the first half's place in the archive
        assert e.sequence == (Decimal("1620457642589000001"),)
        messages = CODEC.encode([e])
        assert [m.events for m in messages] == [1, 0]
        assert [as_json(m.value) for m in messages] == [as_json(raw("doc-update-before.json")),
                                                        as_json(raw("doc-update-after.json"))]


def test_halves_arriving_after_first_reencode_in_archive_order():
    before_half = decode("doc-update-before.json", offset=11)
    after_half = decode("doc-update-after.json", offset=10)
    messages = CODEC.encode([CODEC.assemble([before_half, after_half])])
    assert [jsontext.loads(m.value)[0]["payload"]["op"] for m in messages] == ["UPDATE_AFTER", "UPDATE_BEFOR"]
    assert [m.events for m in messages] == [1, 0]


def test_lone_half_is_a_clear_decode_error():
    after_half = decode("doc-update-after.json", offset=11)
    with pytest.raises(DecodeError) as info:
        CODEC.assemble([after_half])
    err = info.value
    assert err.vendor == "dataworks-json" and err.position.offset == 11
    assert "UPDATE_BEFOR" in err.reason and "1620457642589000001" in err.reason
    with pytest.raises(DecodeError):
        CODEC.assemble([after_half, after_half])


def test_single_message_update_is_one_event_and_one_message():
    e = decode("doc-update-single-message.json")
    assert e.op is Op.UPDATE and e.fragment_total == 1
    assert e.before["sex"] == "man" and e.after["sex"] == "woman"
    [message] = CODEC.encode([e])
    assert message.events == 1


def test_delete_and_heartbeat():
    d = decode("doc-delete.json")
    assert d.op is Op.DELETE and d.after is None and d.before["sex"] == "woman"
    hb = decode("doc-heartbeat.json")
    assert hb.op is Op.HEARTBEAT and hb.table is None and hb.sequence == () and hb.columns == ()
    assert hb.event_time_ms == 1620457659000


def test_overall_example_cleaned_values():
    e = decode("doc-overall-cleaned.json")
    assert e.op is Op.UPDATE and e.fragment_total == 1  # both images in one message
    assert e.qualified_table == "myDatabase.mySchema.tableName" and e.primary_key == ("id",)
    assert e.before["ts"] == "1590315269" and e.after["ts"] == "1590315269.123"  # DATE ms -> epoch seconds
    assert e.before["binData"] == "AP8Q/w==" and e.after["id"] == "222"
    assert [["payload", "scn"], '"xxxx"'] in e.vendor["fix"]


def test_typed_insert_and_ddl():
    e = decode("synthetic-insert-typed.json")
    a = e.after
    assert a["flag"] == "true" and a["price"] == "1.5E-300" and a["u64"] == "18446744073709551615"
    assert a["created"] == "1590315269.123" and a["born"] == "-86400"
    assert a["note"] is None and a["pic"] == "AP8Q/w=="
    assert e.column("price").number and not e.column("created").number
    ddl = decode("synthetic-ddl-alter.json")
    assert ddl.op is Op.DDL and ddl.ddl == "ALTER TABLE orders ADD COLUMN price double"
    assert [["payload", "ddl", "ddlMeta"], '"rO0ABXNyAA=="'] in ddl.vendor["fix"]


def test_malformed_template_and_other_errors():
    with pytest.raises(DecodeError) as info:
        CODEC.decode(raw("malformed-overall-template.json"), Position("topic", partition=2, offset=77))
    err = info.value
    assert (err.vendor, err.field, err.position.partition, err.position.offset) == \
           ("dataworks-json", "payload.sequenceId", 2, 77)
    body = jsontext.loads(raw("doc-insert.json"))[0]
    cases = [
        (("payload", "op"), "INSERT/UPDATE_BEFOR", "payload.op"),
        (("payload", "sequenceId"), "XXX", "payload.sequenceId"),
        (("payload", "after"), None, "payload.after"),
    ]
    for (outer, key), value, field in cases:
        broken = jsontext.loads(raw("doc-insert.json"))[0]
        broken[outer][key] = value
        with pytest.raises(DecodeError) as info:
            CODEC.decode(jsontext.dumps(broken), Position("topic", offset=5))
        assert info.value.field == field
    body["payload"]["after"]["dataColumn"]["extra"] = "x"
    with pytest.raises(DecodeError) as info:
        CODEC.decode(jsontext.dumps(body), Position("topic"))
    assert info.value.field == "payload.after.dataColumn.extra"
    lone = jsontext.loads(raw("doc-update-after.json"))[0]
    lone["payload"]["sequenceId"] = None
    with pytest.raises(DecodeError) as info:
        CODEC.decode(jsontext.dumps(lone), Position("topic"))
    assert info.value.field == "payload.sequenceId"


def _decode_all(messages):
    """Decode re-encoded messages and assemble update halves, as the replay job does."""
    events, pending = [], {}
    for i, m in enumerate(messages):
        for e in CODEC.decode(m.value, Position("re", offset=i)):
            if e.fragment_total == 1:
                events.append(e)
            elif e.fragment_key in pending:
                events.append(CODEC.assemble([pending.pop(e.fragment_key), e]))
            else:
                pending[e.fragment_key] = e
    assert not pending
    return events


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    messages = CODEC.encode(source)
    updates = sum(e.op is Op.UPDATE for e in source)
    assert len(messages) == len(source) + updates  # each update is a BEFOR + AFTER pair
    assert sum(m.events for m in messages) == len(source)
    back = _decode_all(messages)
    assert len(back) == len(source)
    for want, got in zip(source, back):
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert (got.event_time_ms, got.sequence) == (want.event_time_ms, want.sequence)
        if want.op.is_data:
            assert got.before == want.before and got.after == want.after
            assert got.primary_key == want.primary_key
    insert = back[2]
    types = {c.name: c.type_name for c in insert.columns}
    assert (types["id"], types["c_double"], types["c_blob"], types["c_timestamp"], types["c_decimal"]) == \
           ("LONG", "DOUBLE", "BYTES", "timestamp(3)", "STRING")


def test_update_without_before_image_cannot_be_written():
    e = scenario_events()[4].with_(before=None)
    with pytest.raises(EncodeError):
        CODEC.encode([e])


def test_decode_fixes_equal_those_of_the_full_derivation():
    """decode derives the message without image cells and compares schema.dataColumn once per declaration: its
    fixes must be the definition's (every cell written, every path compared); on the fixtures, fuzzed messages and
    the same declarations reread in other messages (the cache)."""
    checked = 0
    fuzzed = corpus("dataworks-json", 800, ten_mb_line=False)
    for raw in [m for _, m in seed_messages("dataworks-json")] + [f.raw for f in fuzzed] * 2:
        try:
            [event] = CODEC.decode(raw, Position("t"))
        except DecodeError:
            continue
        msg, full = jsontext.loads(raw)[0], CODEC._message(event, cells=True)
        assert event.vendor.get("fix", []) == derive_fix(msg, full, _paths(msg, full, ())), raw
        checked += 1
    assert checked > 400


def test_declaration_cache_never_hides_a_malformed_or_deviating_declaration():
    good = (b'{"schema":{"dataColumn":[{"name":"id","type":"LONG"}],"primaryKey":["id"],"source":{"dbName":"d",'
            b'"tableName":"t"}},"payload":{"before":null,"after":{"dataColumn":{"id":1}},"sequenceId":"1",'
            b'"timestamp":{"eventTime":1,"checkpointTime":1},"op":"INSERT","ddl":null},"version":"0.0.1"}')
    [a] = CODEC.decode(good, Position("t"))
    [b] = CODEC.decode(good.replace(b'"type":"LONG"', b'"type":"LONG","x":1'), Position("t"))
    assert a.columns == b.columns and "fix" not in a.vendor
    assert b.vendor["fix"] == [[["schema", "dataColumn"], '[{"name":"id","type":"LONG","x":1}]']]
    with pytest.raises(DecodeError) as err:
        CODEC.decode(good.replace(b'"type":"LONG"', b'"type":true'), Position("t", offset=3))
    assert err.value.field == "schema.dataColumn[0].type" and "line 3" in str(err.value)
    [c] = CODEC.decode(good.replace(b'"id"', b'"7"'), Position("t"))
    assert c.columns[0].name == "7"
    with pytest.raises(DecodeError, match="column name must be text"):  # 7, not "7": a number as name
        check_events("dataworks-json", CODEC.decode(good.replace(b'"name":"id"', b'"name":7').replace(
            b'"id"', b'"7"'), Position("t")))
