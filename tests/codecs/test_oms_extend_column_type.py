"""oms-extend-column-type: Default JSON plus __light_type. Golden fixtures from the OMS document, a synthetic
record whose types name its own columns, malformed input and the scenario round trip."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Op, Position, get_codec
from cdc_codecs.oms.oms_default import OmsDefaultCodec
from cdc_codecs.scenario import scenario_events
from cdc_codecs.types import family
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("oms-extend-column-type")
CODEC = get_codec("oms-extend-column-type")


def decode(name: str):
    [event] = CODEC.decode((FIXTURES / name).read_bytes(), Position(source=name, offset=3))
    return event


def test_reuses_the_default_codec():
    assert isinstance(CODEC, OmsDefaultCodec) and CODEC.capabilities.typed_values


def test_doc_insert_types_name_other_columns():
    e = decode("insert.json")
    assert (e.op, e.database, e.table) == (Op.INSERT, "database", "table")
    assert "__light_type" not in e.after  # types are not a column
    assert e.after["col7"].startswith("9.99999999999999909326625337248461995470488734032045693707")
    assert e.column("int64") == Column("int64", "INT64", None, False)
    assert e.column("timestamp_in_long").type_name == "TIMESTAMP"
    assert e.column("col1") == Column("col1", None, None, True)
    assert any("int8" in w for w in e.vendor["warnings"])


def test_doc_delete_types_in_before_image():
    e = decode("delete.json")
    assert e.op is Op.DELETE and e.after is None and "__light_type" not in e.before
    assert e.column("localDateTime").type_name == "DATETIME"


def test_typed_update():
    e = decode("synthetic-update-typed.json")
    assert [(c.name, c.type_name, c.number) for c in e.columns] == [
        ("id", "BIGINT", True), ("amount", "DECIMAL", True), ("paid_at", "TIMESTAMP", False)]
    assert e.before == {"id": "7", "amount": "1.00", "paid_at": None}
    assert e.after == {"id": "7", "amount": "2.50", "paid_at": "1606233662.012345"}
    assert family(e.column("paid_at").type_name) == "timestamp"
    assert e.sequence == (Decimal(160934467100004),) and e.transaction_id == "u-9"
    assert "light_type" not in e.vendor  # both images carry exactly the declared types


def test_image_without_light_type_stays_without():
    text = (b'{"allMetaData":{"table_name":"t","db":"d","record_primary_key":"id","record_primary_value":"1"},'
            b'"prevStruct":{"id":1,"__light_type":{"id":{"schemaType":"INT"}}},"recordType":"UPDATE",'
            b'"postStruct":{"id":1}}')
    [e] = CODEC.decode(text, Position(source="s"))
    assert e.vendor["light_type"] == {"postStruct": None}
    assert as_json(CODEC.encode([e])[0].value) == as_json(text)


@pytest.mark.parametrize("text, field", [
    (b'{"allMetaData":{},"recordType":"INSERT","postStruct":{"a":1,"__light_type":["INT"]}}',
     "postStruct.__light_type"),
    (b'{"allMetaData":{},"recordType":"INSERT","postStruct":{"a":1,"__light_type":{"a":{"type":"INT"}}}}',
     "postStruct.__light_type.a"),
    (b'{"allMetaData":{},"recordType":"DELETE","prevStruct":{"a":{"v":1}}}', "prevStruct.a"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text, Position(source="topic", partition=0, offset=8))
    assert (info.value.vendor, info.value.field) == ("oms-extend-column-type", field)
    assert "topic partition 0 offset 8" in str(info.value)


def test_scenario_round_trip_keeps_types():
    carried = [e for e in scenario_events() if e.op in CODEC.capabilities.ops]
    for want, message in zip(carried, CODEC.encode(carried)):
        [got] = CODEC.decode(message.value, Position(source="re"))
        assert (got.op, got.database, got.table, got.ddl) == (want.op, want.database, want.table, want.ddl)
        assert got.before == want.before and got.after == want.after
        assert got.sequence == want.sequence and got.transaction_id == want.transaction_id
        if want.op.is_data:
            for c in want.columns:
                g = got.column(c.name)
                assert g.type_name == c.type_name.upper()
                assert family(g.type_name) == family(c.type_name), c.name  # jdbc numbers are not carried
