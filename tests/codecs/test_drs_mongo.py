"""drs-mongo: the documented DDS oplog examples (insert, replace, $set, $unset+$set, remove), BSON values as typed
canonical text, the shell-JSON parser, malformed input, the value-text fix guard, events of other formats and
the canonical scenario written as documents."""

from __future__ import annotations

import base64
import json
import random
from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Event, Op, Position, get_codec
from cdc_codecs.drs.drs_mongo import ShellSyntaxError, _Parser, parse_shell, render_date
from cdc_codecs.scenario import PRIMARY_KEY, scenario_events
from cdc_codecs.types import family
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("drs-mongo")
CODEC = get_codec("drs-mongo")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.json"))
OID = "64650cf67dc36a464e76e583"


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, offset: int = 0):
    return CODEC.decode(data, Position(source="dds", offset=offset))


def message(**fields) -> bytes:
    msg = {"id": 1, "op": "INSERT", "dbType": "MongoDB", "db": "d", "coll": "c", "value": '{"_id": 1}',
           "where": None, "recordType": "insert", "extra": "insert", "es": 5, "ts": 5, "clusterTime": "1:1"}
    msg.update(fields)
    return json.dumps(msg).encode()


def types(e) -> dict:
    return {c.name: c.type_name for c in e.columns}


def test_all_documented_examples_are_fixtures():
    assert GOLDEN == ["insert.json", "remove.json", "replace.json", "update-set.json", "update-unset-set.json"]


def test_insert():
    [e] = decode(raw("insert.json"))
    assert (e.op, e.database, e.table, e.qualified_table) == (Op.INSERT, "ljx", "ljx", "ljx.ljx")
    assert e.before is None
    assert e.after == {"_id": OID, "c1": "baz", "tags": '["mongodb","database","NoSQL"]'}
    assert types(e) == {"_id": "objectId", "c1": "string", "tags": "array"}
    assert e.primary_key == ("_id",)
    assert e.sequence == (Decimal(256),) and e.event_time_ms == 1684315111439
    assert e.vendor["recordType"] == "insert"
    assert ["clusterTime", '"1684344064:1"'] in e.vendor["fix"]
    assert all(k not in ("value", "where") for k, _ in e.vendor["fix"])  # the Java driver's spelling exactly


def test_replace_after_is_the_whole_document():
    [e] = decode(raw("replace.json"))
    assert e.op is Op.UPDATE and e.vendor["recordType"] == "replace"
    assert e.before == {"_id": OID}
    assert e.after == {"_id": OID, "c1": "sss"}


def test_update_set():
    [e] = decode(raw("update-set.json"))
    assert e.op is Op.UPDATE and e.vendor["recordType"] == "update"
    assert e.before == {"_id": OID}  # the where filter: the key, not a before image
    assert e.after == {"_id": OID, "c1": "aaa"}
    assert types(e) == {"_id": "objectId", "c1": "string"}
    assert "unset" not in e.vendor and "operators" not in e.vendor


def test_update_unset_is_none_and_listed_in_vendor():
    [e] = decode(raw("update-unset-set.json"))
    assert e.after == {"_id": OID, "c1": None, "column1": "aaa"}
    assert "c1" in e.after  # present as None (removed), not absent (unchanged)
    assert e.vendor["unset"] == {"c1": "true"}
    assert e.vendor["operators"] == ["$unset", "$set"]
    assert e.column("c1").type_name is None  # the $unset argument is not the field's value


def test_remove_carries_the_key():
    [e] = decode(raw("remove.json"))
    assert e.op is Op.DELETE and e.vendor["recordType"] == "doc"
    assert e.before == {"_id": OID} and e.after is None
    assert e.primary_key == ("_id",)
    assert e.sequence == (Decimal(471),)


SHELL = ('{"_id": NumberLong("9223372036854775807"), "n": 1.50, "i": 7, "big": 99999999999, "z": null, '
         '"d": {"a": [1, {"b": true}]}, "bin": new BinData(0, "AP8="), "uuid": new BinData(4, "AAE="), '
         '"ts": Timestamp(1684344064, 1), "re": /ab\\/c/i, "at": ISODate("2023-05-17T09:18:31.439Z"), '
         '"pre": ISODate("1969-12-31T23:59:59.500Z"), "k": MinKey, "e": [], "o": {}, '
         '"dec": NumberDecimal("1.10"), "ni": NumberInt(7), "nl": NumberLong(5), "inf": -Infinity, '
         '"ok": false, "u": UUID("0123"), "s": "a\\"bé"}')


def test_bson_values_become_typed_canonical_text():
    data = message(value=SHELL)
    [e] = decode(data)
    assert parse_shell(SHELL).shell() == SHELL
    expected = {
        "_id": ("int64", "9223372036854775807"), "n": ("double", "1.50"), "i": ("int32", "7"),
        "big": ("int64", "99999999999"), "z": ("null", None), "d": ("object", '{"a":[1,{"b":true}]}'),
        "bin": ("binData", "AP8="), "uuid": ("binData(4)", "AAE="), "ts": ("bsonTimestamp", "1684344064:1"),
        "re": ("regex", "/ab\\/c/i"), "at": ("timestamp(3)", "1684315111.439"), "pre": ("timestamp(3)", "-0.500"),
        "k": ("minKey", "MinKey"), "e": ("array", "[]"), "o": ("object", "{}"), "dec": ("decimal128", "1.10"),
        "ni": ("int32", "7"), "nl": ("int64", "5"), "inf": ("double", "-Infinity"), "ok": ("bool", "false"),
        "u": ("UUID", 'UUID("0123")'), "s": ("string", 'a"bé'),
    }
    assert {k: (types(e)[k], v) for k, v in e.after.items()} == expected
    assert [c.name for c in e.columns if c.number] == ["n", "i", "big", "inf"]  # written as bare literals
    # The names read as the right family for the merge and for other formats.
    fams = {c.name: family(c.type_name, c.jdbc_type) for c in e.columns}
    assert (fams["_id"], fams["n"], fams["dec"], fams["bin"], fams["uuid"], fams["at"], fams["ok"], fams["s"]) == \
        ("int", "float", "decimal", "binary", "binary", "timestamp", "bool", "string")
    assert all(k not in ("value", "where") for k, _ in e.vendor["fix"])  # derived = the Java driver's text
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_dates_in_other_spellings_keep_their_text():
    value = '{"_id": 1, "a": ISODate("2023-05-17T17:18:31+08:00"), "b": new Date(1684315111439)}'
    data = message(value=value)
    [e] = decode(data)
    assert e.after["a"] == "1684315111.000" and e.after["b"] == "1684315111.439"
    assert ["value", json.dumps(value)] in e.vendor["fix"]  # derived text would say ISODate("...Z")
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)
    assert render_date("1684315111.439") == 'ISODate("2023-05-17T09:18:31.439Z")'
    assert render_date("-62198755200.001") == "new Date(-62198755200001)"  # before year 1: the Java form
    with pytest.raises(ValueError):
        render_date("1.0001")  # BSON dates are whole milliseconds


def test_other_spacing_is_kept_while_it_still_describes_the_event():
    data = message(value="{ _id: 1,  'c': 'x' }")  # mongosh-style: unquoted key, single quotes
    [e] = decode(data)
    assert e.after == {"_id": "1", "c": "x"}
    assert ["value", json.dumps("{ _id: 1,  'c': 'x' }")] in e.vendor["fix"]
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)
    changed = e.with_(after={"_id": "1", "c": "y"})
    assert json.loads(CODEC.encode([changed])[0].value)["value"] == '{"_id": 1, "c": "y"}'
    # A changed type is a changed event too: the recorded text would say string.
    retyped = e.with_(columns=(e.column("_id"), Column("c", "int32", 4, True)), after={"_id": "1", "c": "7"})
    assert json.loads(CODEC.encode([retyped])[0].value)["value"] == '{"_id": 1, "c": 7}'


@pytest.mark.parametrize("data, field", [
    (b"nope", "$"),
    (message(op="UPSERT"), "op"),
    (message(recordType="update"), "recordType"),
    (message(op="DELETE", recordType=None), "recordType"),
    (message(id=None), "id"),
    (message(value='{"_id": ObjectId("x"'), "value"),
    (message(value="[1, 2]"), "value"),
    (message(value=None), "value"),
    (message(value='{"_id": 1, "a": foo}'), "value.a"),
    (message(value='{"_id": 1, "a": "bad \\q escape"}'), "value.a"),
    (message(op="UPDATE", recordType="update", value='{"$set": {"a": 1}}', where=None), "where"),
    (message(op="UPDATE", recordType="update", value='{"$inc": {"a": 1}}', where='{"_id": 1}'), "value.$inc"),
    (message(op="UPDATE", recordType="update", value='{"$set": 5}', where='{"_id": 1}'), "value.$set"),
    (message(op="UPDATE", recordType="update", value='{"$set": {"b": bar}}', where='{"_id": 1}'), "value.$set.b"),
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


# Texts where the one-regex reader and the character reader could part: spacing, "new", quotes, numbers, words,
# regexes, unicode whitespace and digits, text after the value, unterminated strings.
PARSER_EDGES = [
    '{ "_id" : ObjectId("64650cf67dc36a464e76e583"), "n" : NumberLong(5) }', SHELL, "{}", " [ ] ", "{a: 1}",
    "{'a': 'b\\'c'}", '{"a": new\nBinData (0, "AA==")}', '{"a": new BinData}', '{"a": new(1)}', '{"a": new}',
    '{"a": newX(1)}', '{new a: 1}', '{"a": -Infinity}', '{"a": -Infinityx}', '{"a": -}', '{"a": .5}', '{"a": 1.}',
    '{"a": 1e}', '{"a": 1.5.3}', '{"a": \u0663}', '{"a": 1\u0663}', '{"a":\xa01}', '{"a": 1}\xa0', '{"a": 1} ',
    '{"a": 1} x', '{"a": /x/g}', '{"a": /x}', '{"a": /}', '{"a": "x}', "{'a: 1}", '{"a": 1,}', '[1,]', '[,]',
    '{"a" 1}', '{"a": (1)}', '{"a": f()}', '{"a": f(1,)}', '{"\\q": 1}', '{"a\x01": 1}', '{1: 2}', "",
    '{"a": [1, {"b": [true, null, MinKey]}]}', "[" * 150 + "]" * 150, "[" * 600 + "]" * 600,
]


def _read(read, text: str):
    try:
        return "ok", read(text)
    except (ShellSyntaxError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


def test_parser_fast_path_reads_and_refuses_as_the_character_reader():
    rng = random.Random(37)
    pieces = ["{", "}", "[", "]", "(", ")", ":", ",", " ", "\n", "\xa0", '"a"', "'b'", '"c\\"d"', '"', "1", "-1",
              "-", ".", "1e5", "-Infinity", "true", "new", "new ", "Date", "/a/i", "/", "x", "\u0663"]
    texts = PARSER_EDGES + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for text in texts:
        assert _read(parse_shell, text) == _read(lambda t: _Parser(t).parse(), text), text


def test_ddl_keeps_the_command_text():
    data = message(op="DDL", value='{"create": "c2"}', recordType="command", extra="command")
    [e] = decode(data)
    assert e.op is Op.DDL and e.ddl == '{"create": "c2"}' and e.before is None and e.after is None
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


# Events of other formats ------------------------------------------------------------------------------------

FOREIGN_COLUMNS = (Column("id", "int", 4), Column("price", "decimal(65,30)", 3), Column("ratio", "double", 8),
                   Column("ok", "boolean", 16), Column("raw", "varbinary(4)", -3), Column("name", "varchar(9)", 12),
                   Column("gone", "varchar(9)", 12))
ROW = {"id": "7", "price": "12345678901234567890123456789012345.5", "ratio": "1E+300", "ok": "true",
       "raw": "AP8=", "name": "x\ny", "gone": None}


def foreign(op: Op, before=None, after=None, pk=("id",)) -> Event:
    return Event(format="canal-json", op=op, database="d", table="t", position=Position("src", offset=3),
                 before=before, after=after, columns=FOREIGN_COLUMNS, primary_key=pk, sequence=(Decimal(9),))


def test_foreign_values_are_written_by_family_and_read_back_identically():
    [m] = CODEC.encode([foreign(Op.INSERT, after=ROW)])
    value = json.loads(m.value)["value"]
    assert value == ('{"id": 7, "price": NumberDecimal("12345678901234567890123456789012345.5"), "ratio": 1E+300, '
                     '"ok": true, "raw": new BinData(0, "AP8="), "name": "x\\ny", "gone": null}')
    [e] = decode(m.value)
    assert e.after == ROW
    assert types(e) == {"id": "int32", "price": "decimal128", "ratio": "double", "ok": "bool", "raw": "binData",
                        "name": "string", "gone": "null"}
    # A decimal must not come back as a double: the Avro formats would round it to 64 bits.
    assert family(e.column("price").type_name, e.column("price").jdbc_type) == "decimal"
    assert e.primary_key == ()  # a document without _id does not say which field is its key


def test_foreign_update_and_delete_name_the_row_by_its_key():
    new = ROW | {"id": "8", "name": "z"}
    [u, d] = CODEC.encode([foreign(Op.UPDATE, before=ROW, after=new), foreign(Op.DELETE, before=new)])
    um, dm = json.loads(u.value), json.loads(d.value)
    assert um["where"] == '{"id": 7}' and um["value"].startswith('{"$set": {"id": 8, "price": ')
    assert dm["value"] == '{"id": 8}' and dm["recordType"] == "doc"
    [eu], [ed] = decode(u.value), decode(d.value)
    assert eu.before == {"id": "7"} and eu.after == new and eu.primary_key == ("id",)
    assert ed.before == {"id": "8"} and ed.after is None and ed.primary_key == ("id",)


def test_mongo_types_survive_a_trip_through_another_format():
    """A foreign event that kept drs-mongo's type names (a relational format stores them as declared types)
    is written as Mongo values again, but only when that reads back to the same text."""
    cols = (Column("_id", "objectId"), Column("n", "decimal128", 3), Column("bad", "objectId"))
    e = Event(format="canal-json", op=Op.INSERT, database="d", table="t", position=Position("s"), columns=cols,
              after={"_id": OID, "n": "1.10", "bad": "not-hex"}, primary_key=("_id",))
    value = json.loads(CODEC.encode([e])[0].value)["value"]
    assert value == f'{{"_id": ObjectId("{OID}"), "n": NumberDecimal("1.10"), "bad": "not-hex"}}'


def test_scenario_written_as_documents():
    """Up to the capabilities: full sync written as INSERT, an update's before is its key, a delete carries
    the key; every value comes back as the same canonical text."""
    events = scenario_events()
    messages = CODEC.encode(events)
    carried = [e for e in events if CODEC.capabilities.carries(e.op)]
    back = [e for i, m in enumerate(messages) for e in decode(m.value, offset=i)]
    assert len(back) == len(carried) == len(events) - 3  # no BEGIN/COMMIT/heartbeat
    for want, got in zip(carried, back, strict=True):
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert got.qualified_table == want.qualified_table and got.sequence == want.sequence
        if not want.op.is_data:
            assert got.ddl == want.ddl
            continue
        key = {k: want.before[k] for k in PRIMARY_KEY} if want.before else None
        if want.op is Op.DELETE:
            assert got.before == key and got.after is None
        elif want.op is Op.UPDATE:
            assert got.before == key and got.after == want.after
        else:
            assert got.before is None and got.after == want.after
        if want.op is not Op.INSERT and want.op is not Op.SNAPSHOT:
            assert got.primary_key == PRIMARY_KEY
    first = json.loads(messages[0].value)
    assert first["op"] == "INSERT" and first["recordType"] == "insert"
    assert '"c_ubigint": 18446744073709551615' in first["value"]  # integers and floats as bare numbers
    assert '"c_decimal": NumberDecimal("-0.000000000000000000000000000001")' in first["value"]
    assert '"c_blob": new BinData(0, "AP8Q/w==")' in first["value"]
    assert '"c_timestamp": "1606233662.012345"' in first["value"]  # other families as strings
    assert base64.b64decode("AP8Q/w==") == bytes([0, 255, 16, 255])


@pytest.mark.parametrize("name", GOLDEN)
def test_vendor_survives_the_stored_record_shape(name):
    from cdc_codecs.records import from_record, to_record

    events = [from_record(to_record(e)) for e in decode(raw(name))]
    assert as_json(CODEC.encode(events)[0].value) == as_json(raw(name))


def test_own_string_cells_render_as_the_read_back_check_would_render_them():
    """Own string cells skip the read-back check (a JSON string literal reads back as its text): for texts that
    look like numbers, shell constructors, JSON, escapes, control and non-BMP characters, the rendering is the
    one the checked path gives, and it reads back to the same string."""
    from cdc_codecs.drs.drs_mongo import _typed_rendering, render_foreign, render_value, typed
    from cdc_codecs.shared.bson_values import STRING

    rng = random.Random(11)
    alphabet = ['"', "\\", "'", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "\u2028", "\u00e9", "\u4e2d", "\U0001f600",
                "a", "1", ".", "-", "e", "$", "{", "}", "(", ")", ":", " "]
    texts = ["", "null", "true", "1", "-0", "1e5", "NaN", "NumberLong(1)", 'ObjectId("64650cf67dc36a464e76e583")',
             '{"a": 1}', "[1]", "ISODate(\"2024-01-01T00:00:00Z\")", "Timestamp(1, 2)", "/re/i"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))) for _ in range(2000)]
    column = Column("s", STRING)
    for text in texts:
        checked = _typed_rendering(text, STRING, False) or render_foreign(text, column)
        out = render_value(text, column, own=True)
        assert out == checked, text
        back = typed(parse_shell(out))
        assert (back.type_name, back.text) == (STRING, text), text
