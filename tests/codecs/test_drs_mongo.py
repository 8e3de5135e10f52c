"""drs-mongo: the documented DDS oplog examples (insert, replace, $set, $unset+$set, remove), the shell-JSON
parser, malformed input, the value-text fix guard and the canonical scenario written as documents."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdc_codecs import DecodeError, Op, Position, get_codec, jsontext
from cdc_codecs.drs_mongo import ShellSyntaxError, parse_shell
from cdc_codecs.scenario import scenario_events

FIXTURES = Path(__file__).parents[1] / "fixtures" / "drs-mongo"
CODEC = get_codec("drs-mongo")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.json"))
OID = 'ObjectId("64650cf67dc36a464e76e583")'


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, offset: int = 0):
    return CODEC.decode(data, Position(source="dds", offset=offset))


def as_json(value: bytes):
    return jsontext.normalise(jsontext.loads(value)[0])


def message(**fields) -> bytes:
    msg = {"id": 1, "op": "INSERT", "dbType": "MongoDB", "db": "d", "coll": "c", "value": '{"_id": 1}',
           "where": None, "recordType": "insert", "extra": "insert", "es": 5, "ts": 6, "clusterTime": "1:1"}
    msg.update(fields)
    return json.dumps(msg).encode()


def test_all_documented_examples_are_fixtures():
    assert GOLDEN == ["insert.json", "remove.json", "replace.json", "update-set.json", "update-unset-set.json"]


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_reencode_gives_equal_json(name):
    messages = CODEC.encode(decode(raw(name)))
    assert len(messages) == 1
    assert as_json(messages[0].value) == as_json(raw(name))


def test_insert():
    [e] = decode(raw("insert.json"))
    assert (e.op, e.database, e.table, e.qualified_table) == (Op.INSERT, "ljx", "ljx", "ljx.ljx")
    assert e.before is None
    assert e.after == {"_id": OID, "c1": '"baz"', "tags": '["mongodb","database","NoSQL"]'}
    assert e.primary_key == ("_id",)
    assert e.sequence == (Decimal(256),) and e.event_time_ms == 1684315111439
    assert [c.name for c in e.columns] == ["_id", "c1", "tags"]
    assert all(c.type_name is None and c.jdbc_type is None for c in e.columns)
    assert e.vendor["recordType"] == "insert"
    assert ["clusterTime", '"1684344064:1"'] in e.vendor["fix"]


def test_replace_after_is_the_whole_document():
    [e] = decode(raw("replace.json"))
    assert e.op is Op.UPDATE and e.vendor["recordType"] == "replace"
    assert e.before == {"_id": OID}
    assert e.after == {"_id": OID, "c1": '"sss"'}


def test_update_set():
    [e] = decode(raw("update-set.json"))
    assert e.op is Op.UPDATE and e.vendor["recordType"] == "update"
    assert e.before == {"_id": OID}
    assert e.after == {"_id": OID, "c1": '"aaa"'}
    assert "unset" not in e.vendor and "operators" not in e.vendor


def test_update_unset_is_none_and_listed_in_vendor():
    [e] = decode(raw("update-unset-set.json"))
    assert e.after == {"_id": OID, "c1": None, "column1": '"aaa"'}
    assert "c1" in e.after  # present as None (removed), not absent (unchanged)
    assert e.vendor["unset"] == {"c1": "true"}
    assert e.vendor["operators"] == ["$unset", "$set"]


def test_remove_carries_the_key():
    [e] = decode(raw("remove.json"))
    assert e.op is Op.DELETE and e.vendor["recordType"] == "doc"
    assert e.before == {"_id": OID} and e.after is None
    assert e.sequence == (Decimal(471),)


def test_shell_json_values_and_spacing():
    text = ('{"_id": NumberLong("9223372036854775807"), "n": 1.50, "z": null, "d": {"a": [1, {"b": true}]}, '
            '"bin": new BinData(0, "AP8="), "ts": Timestamp(1684344064, 1), "re": /ab\\/c/i, "at": '
            'ISODate("2023-05-17T09:18:31.439Z"), "k": MinKey, "e": [], "o": {}}')
    node = parse_shell(text)
    assert node.shell() == text
    data = message(value=text)
    [e] = decode(data)
    assert e.after == {
        "_id": 'NumberLong("9223372036854775807")', "n": "1.50", "z": None, "d": '{"a":[1,{"b":true}]}',
        "bin": 'new BinData(0,"AP8=")', "ts": "Timestamp(1684344064,1)", "re": "/ab\\/c/i",
        "at": 'ISODate("2023-05-17T09:18:31.439Z")', "k": "MinKey", "e": "[]", "o": "{}"}
    assert e.column("n").number is True and e.column("d").number is False
    assert "fix" not in e.vendor or all(k not in ("value", "where") for k, _ in e.vendor["fix"])
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_other_spacing_is_kept_while_it_still_describes_the_event():
    data = message(value="{ _id: 1,  'c': 'x' }")  # mongosh-style: unquoted key, single quotes
    [e] = decode(data)
    assert e.after == {"_id": "1", "c": "'x'"}
    assert ["value", json.dumps("{ _id: 1,  'c': 'x' }")] in e.vendor["fix"]
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)
    changed = e.with_(after={"_id": "1", "c": '"y"'})
    assert json.loads(CODEC.encode([changed])[0].value)["value"] == '{"_id": 1, "c": "y"}'


@pytest.mark.parametrize("data, field", [
    (b"nope", "$"),
    (message(op="UPSERT"), "op"),
    (message(recordType="update"), "recordType"),
    (message(op="DELETE", recordType=None), "recordType"),
    (message(id=None), "id"),
    (message(value='{"_id": ObjectId("x"'), "value"),
    (message(value="[1, 2]"), "value"),
    (message(value=None), "value"),
    (message(op="UPDATE", recordType="update", value='{"$set": {"a": 1}}', where=None), "where"),
    (message(op="UPDATE", recordType="update", value='{"$inc": {"a": 1}}', where='{"_id": 1}'), "value.$inc"),
    (message(op="UPDATE", recordType="update", value='{"$set": 5}', where='{"_id": 1}'), "value.$set"),
    (message(op="UPDATE", recordType="update", value="{}", where='{"_id": 1}'), "value"),
    (message(op="UPDATE", recordType="replace", value='{"_id": 1}', where="{_id: }"), "where"),
])
def test_malformed_messages_name_the_field(data, field):
    with pytest.raises(DecodeError) as err:
        CODEC.decode(data, Position(source="topic", partition=1, offset=77))
    assert (err.value.vendor, err.value.field) == ("drs-mongo", field)
    assert err.value.position.offset == 77 and err.value.position.partition == 1


def test_parser_rejects_trailing_text():
    with pytest.raises(ShellSyntaxError):
        parse_shell('{"a": 1} x')


def test_ddl_keeps_the_command_text():
    data = message(op="DDL", value='{"create": "c2"}', recordType="command", extra="command")
    [e] = decode(data)
    assert e.op is Op.DDL and e.ddl == '{"create": "c2"}' and e.before is None and e.after is None
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def _plain(text):
    """Mongo field text back to the canonical text of a relational column (what the scenario wrote)."""
    if text is None:
        return None
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("new BinData(0,"):
        return json.loads(text[len("new BinData(0,"):-1])
    return text


def test_scenario_written_as_documents():
    events = scenario_events()
    messages = CODEC.encode(events)
    carried = [e for e in events if e.op in CODEC.capabilities.ops]
    back = [e for i, m in enumerate(messages) for e in decode(m.value, offset=i)]
    assert len(back) == len(carried)
    for want, got in zip(carried, back, strict=True):
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)  # full sync is written as insert
        assert got.qualified_table == want.qualified_table and got.sequence == want.sequence
        if not want.op.is_data:
            assert got.ddl == want.ddl
            continue
        image = want.after if want.after is not None else want.before
        got_image = got.after if got.after is not None else got.before
        if want.op is Op.DELETE:
            assert {k: _plain(v) for k, v in got_image.items()} == image  # written whole, read back whole
        else:
            assert {k: _plain(v) for k, v in got.after.items()} == want.after
        if want.op is Op.UPDATE:
            assert {k: _plain(v) for k, v in got.before.items()} == {"id": want.before["id"]}  # the key only
    first = json.loads(messages[0].value)
    assert first["op"] == "INSERT" and first["recordType"] == "insert"
    assert '"c_ubigint": 18446744073709551615' in first["value"]  # numeric families as bare numbers
    assert '"c_blob": new BinData(0, "AP8Q/w==")' in first["value"]
    assert base64.b64decode("AP8Q/w==") == bytes([0, 255, 16, 255])


@pytest.mark.parametrize("name", GOLDEN)
def test_vendor_survives_the_stored_record_shape(name):
    from cdc_codecs.records import from_record, to_record

    events = [from_record(to_record(e)) for e in decode(raw(name))]
    assert as_json(CODEC.encode(events)[0].value) == as_json(raw(name))
