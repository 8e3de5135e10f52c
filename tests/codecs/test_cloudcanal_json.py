"""cloudcanal-json: golden fixtures from the CloudCanal document, synthetic variants, malformed input and the
canonical scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from cdc_codecs.shared.json_fix import derive_fix, fix_paths
from fuzz import corpus, seed_messages  # beside this file
from golden import fixtures  # beside this file

FIXTURES = fixtures("cloudcanal-json")
CODEC = get_codec("cloudcanal-json")


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(name: str, offset: int = 5):
    return CODEC.decode(raw(name), Position(source=name, offset=offset))


def test_doc_update_fields():
    [e] = decode("cloudcanal-dml-update.json")
    assert (e.op, e.database, e.schema, e.table) == (Op.UPDATE, "db_test", None, "table_test")
    assert e.qualified_table == "db_test.table_test"  # MySQL's schema == db is not a third name level
    assert e.before == {"col1": "22", "col2": "22", "col_pk": "22"}
    assert e.after == {"col1": "11", "col2": "11", "col_pk": "11"}
    assert e.primary_key == ()  # the example's pks is empty: kept as given
    assert e.event_time_ms == 1669789152000 and e.sequence == (Decimal(1669789152000),)
    assert [(c.name, c.type_name, c.jdbc_type, c.number) for c in e.columns] == [
        ("col1", "varchar(22)", 12, False), ("col2", "varchar(22)", 12, False), ("col_pk", "varchar(22)", 12, False)]
    assert e.position.offset == 5 and e.position.index == 0
    assert e.vendor["fix"] == [[["sendTs"], "1669789153377"]]  # bid 0 is derived, sendTs is not


def test_doc_ddl_keeps_sql_and_table_changes():
    [e] = decode("cloudcanal-ddl-alter.json")
    assert e.op is Op.DDL and e.ddl == "alter table table_test add col2 varchar(22) null"
    assert e.before is None and e.after is None
    fixes = dict((tuple(path), value) for path, value in e.vendor["fix"])
    changes = jsontext.loads(fixes[("tableChanges",)])[0]
    assert changes["table"]["primaryKeyColumnNames"] == ["col_pk"] and changes["type"] == "ALTER"
    assert [c.name for c in e.columns] == ["col1", "col2", "col_pk"]


def test_multirow_insert_typed_values():
    events = decode("synthetic-multirow-insert-typed.json")
    assert [e.position.index for e in events] == [0, 1]
    first, second = events
    assert first.op is Op.INSERT and first.before is None and first.primary_key == ("id",)
    a = first.after
    assert a["id"] == "1" and a["u64"] == "18446744073709551615" and a["ratio"] == "1.5E-300"
    assert a["amount"] == "12345678901234567890.000000001"
    assert a["flag"] == "true" and second.after["flag"] == "false"
    assert a["doc"] == '{"k":[1,2.50,"v"]}'  # nested JSON kept as its exact text (2.50 not 2.5)
    assert a["note"] is None and second.after["note"] == ""  # NULL vs empty string
    assert second.after["doc"] is None and second.after["ts"] is None
    assert first.column("id").number and first.column("ratio").number and not first.column("amount").number
    assert first.vendor["render"] == {"after": {"flag": "bool", "doc": "json"}}
    assert [["gtid"], '"3e11fa47-71ca-11e1-9e33-c80aa9429562:23"'] in first.vendor["fix"]  # unknown key kept


def test_delete_rows_in_before_and_postgres_schema():
    events = decode("synthetic-delete-rows-in-before.json")
    assert [e.op for e in events] == [Op.DELETE, Op.DELETE]
    assert events[0].before == {"id": "7", "name": "gone"} and events[0].after is None
    assert events[1].before == {"id": "8", "name": None}
    assert events[0].qualified_table == "postgres.public.users"
    assert "delete_in" not in events[0].vendor


def test_delete_rows_in_data_is_accepted_and_reproduced():
    [e] = decode("synthetic-delete-rows-in-data.json")
    assert e.op is Op.DELETE and e.before == {"id": "9", "name": "x"} and e.after is None
    assert e.vendor["delete_in"] == "data"
    body = jsontext.loads(CODEC.encode([e])[0].value)[0]
    assert body["data"] == [{"id": "9", "name": "x"}] and body["before"] is None


def test_transaction_end_is_commit():
    [e] = decode("synthetic-transaction-end.json")
    assert e.op is Op.COMMIT and e.table is None and e.event_time_ms == 1669789302000


@pytest.mark.parametrize("name, field", [
    ("malformed-placeholder-action.json", "action"),
    ("malformed-update-before-count.json", "before"),
])
def test_malformed_names_format_field_and_position(name, field):
    with pytest.raises(DecodeError) as info:
        decode(name, offset=42)
    err = info.value
    assert (err.vendor, err.field, err.position.offset) == ("cloudcanal-json", field, 42)
    assert "cloudcanal-json" in str(err) and name in str(err)


def test_not_json_and_bad_cell():
    with pytest.raises(DecodeError) as info:
        CODEC.decode(b'{"action":', Position("x", offset=1))
    assert info.value.field == "$"
    bad = (b'{"action":"INSERT","data":[{"a":"1"},{"a":true,"b":[1]},{"a":1.5,"c":{"x":1}}],"isDdl":false,'
           b'"db":"d","table":"t","execTs":1}')  # a row message names its table (required)
    events = CODEC.decode(bad, Position("x"))
    assert [e.after["a"] for e in events] == ["1", "true", "1.5"]


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    messages = CODEC.encode(source)
    assert len(messages) == len(source)
    back = []
    for i, message in enumerate(messages):
        back.extend(CODEC.decode(message.value, Position(source="re", offset=i)))
    assert len(back) == len(source)
    for want, got in zip(source, back):
        assert got.op is (Op.INSERT if want.op is Op.SNAPSHOT else want.op)
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert got.event_time_ms == want.event_time_ms
        assert got.sequence == ((Decimal(want.event_time_ms),) if want.event_time_ms is not None else ())
        if want.op.is_data:
            assert got.after == want.after
            assert got.before == want.before
            assert got.primary_key == want.primary_key
            assert [(c.name, c.type_name, c.jdbc_type) for c in got.columns] == \
                   [(c.name, c.type_name, c.jdbc_type) for c in want.columns]
    # integer and floating columns are written as JSON numbers, decimals and the rest as strings
    insert = jsontext.loads(messages[2].value)[0]["data"][0]
    assert type(insert["c_ubigint"]) is jsontext.JsonNumber and insert["c_ubigint"] == "18446744073709551615"
    assert type(insert["c_decimal"]) is str and type(insert["c_double"]) is jsontext.JsonNumber


def test_decode_fixes_equal_those_of_the_full_derivation():
    """decode derives the message with placeholder rows and compares dbValType/jdbcType once per declaration: its
    fixes must be the definition's (every row rendered, every other key compared); on the fixtures, fuzzed messages
    and the same declarations reread in other messages (the cache)."""
    checked = 0
    fuzzed = corpus("cloudcanal-json", 800, ten_mb_line=False)
    for raw_msg in [m for _, m in seed_messages("cloudcanal-json")] + [f.raw for f in fuzzed] * 2:
        try:
            events = CODEC.decode(raw_msg, Position("t"))
        except DecodeError:
            continue
        msg, full = jsontext.loads(raw_msg)[0], CODEC.build(events)
        paths = fix_paths(msg, full, {k for k in ("data", "before") if full.get(k)})
        assert events[0].vendor.get("fix", []) == derive_fix(msg, full, paths), raw_msg
        checked += 1
    assert checked > 400


def test_declaration_cache_never_hides_a_malformed_or_deviating_declaration():
    good = (b'{"db":"d","table":"t","execTs":1,"action":"INSERT","isDdl":false,"entryType":"ROWDATA","bid":0,'
            b'"schema":"d","pks":[],"sendTs":1,"sql":"","before":[],"dbValType":{"id":"int"},"jdbcType":{"id":4},'
            b'"data":[{"id":1}]}')
    [a] = CODEC.decode(good, Position("t"))
    [b] = CODEC.decode(good.replace(b'{"id":4}', b'{"id":"4"}'), Position("t"))
    assert a.columns == b.columns and "fix" not in a.vendor
    assert b.vendor["fix"] == [[["jdbcType"], '{"id":"4"}']]  # the same declaration, but a string: kept
    [c] = CODEC.decode(good.replace(b',"jdbcType":{"id":4}', b''), Position("t"))
    assert c.vendor["fix"] == [[["jdbcType"], None]]  # absent is not {}
    with pytest.raises(DecodeError) as err:
        CODEC.decode(good.replace(b'{"id":"int"}', b'{"id":true}'), Position("t", offset=3))
    assert err.value.field == "dbValType.id" and "line 3" in str(err.value)
