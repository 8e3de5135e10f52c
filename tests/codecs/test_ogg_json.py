"""ogg-json: GoldenGate's documented messages and Flink's GoldenGate test data (golden fixtures), what they decode
to, table names, ordering by trail position, compressed updates, truncate, malformed input."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Event, Op, Position, get_codec
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("ogg-json")
CODEC = get_codec("ogg-json")


def decode(name: str, offset: int = 4) -> list[Event]:
    return CODEC.decode((FIXTURES / name).read_bytes(), Position(source=name, offset=offset))


def test_doc_insert_fields_and_exact_numbers():
    [e] = decode("doc-insert.json")
    assert (e.op, e.database, e.schema, e.table) == (Op.INSERT, "QASOURCE", None, "TCUSTORD")
    assert e.after["PRODUCT_PRICE"] == "17520.00" and e.after["ORDER_DATE"] == "1994-09-30:15:33:00"
    assert e.event_time_ms == 1446749136000 and e.sequence == (Decimal(2928),)
    assert e.primary_key == () and e.before is None
    assert [f for f, _ in e.vendor["fix"]] == [["current_ts"]]  # the formatter's own time is not derived


def test_flink_data_keeps_unknown_keys_and_reads_deletes():
    [i] = decode("flink-insert.json")
    assert i.after["weight"] == "3.140000104904175" and i.sequence == (Decimal(143),)
    assert i.primary_key == ()  # the key list is under the misspelt "priamry_keys": not read as the key
    assert {tuple(p) for p, _ in i.vendor["fix"]} >= {("priamry_keys",), ("pos",)}  # 23 digits, not 20
    [d] = decode("flink-delete.json")
    assert (d.op, d.after, d.before["id"]) == (Op.DELETE, None, "111")
    [u] = decode("flink-update.json")
    assert (u.before["description"], u.after["description"]) == ("16oz carpenter's hammer", "18oz carpenter hammer")
    assert u.event_time_ms == 1589390787936


def test_primary_keys_and_one_level_table_name():
    [e] = decode("flink-doc-update-primary-keys.json")
    assert (e.database, e.table, e.qualified_table, e.primary_key) == (None, "PRODUCTS", "PRODUCTS", ("id",))


def test_compressed_update_images_and_truncate():
    [u] = decode("doc-update.json")
    assert (u.before["PRODUCT_AMOUNT"], u.before["TRANSACTION_ID"]) == ("3", "100")
    assert "TRANSACTION_ID" not in u.after and u.after["PRODUCT_PRICE"] == "14000.00"  # not present, not NULL
    [k] = decode("synthetic-update-primary-keys-tokens.json")
    assert k.primary_key == ("CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID")
    assert [p for p, _ in k.vendor["fix"]] == [["current_ts"], ["tokens"]]
    [t] = decode("doc-truncate.json")
    assert (t.op, t.qualified_table, t.before, t.after) == (Op.TRUNCATE, "QASOURCE.TCUSTORD", None, None)
    [d] = decode("doc-delete.json")
    assert (d.op, d.after, d.before["PRODUCT_PRICE"], d.sequence) == (Op.DELETE, None, "135000.00", (Decimal(5272),))


def test_catalog_level_is_the_schema():
    raw = b'{"table":"CDB1.HR.EMP","op_type":"I","after":{"ID":1}}'
    [e] = CODEC.decode(raw, Position("x"))
    assert (e.database, e.schema, e.table, e.qualified_table) == ("CDB1", "HR", "EMP", "CDB1.HR.EMP")
    assert json.loads(CODEC.encode([e])[0].value) == json.loads(raw)


def test_foreign_events_pos_op_ts_and_numbers():
    update = next(e for e in scenario_events() if e.op is Op.UPDATE)
    for sequence, pos in [((Decimal(7),), "00000000000000000007"),
                          ((Decimal(12), Decimal(3456)), "00000000120000003456"),
                          ((Decimal(10 ** 10), Decimal(1)), None), ((Decimal("1.5"),), None)]:
        msg = json.loads(CODEC.encode([update.with_(sequence=sequence)])[0].value, parse_float=Decimal)
        assert msg.get("pos") == pos, sequence
    assert msg["op_type"] == "U" and msg["op_ts"] == msg["current_ts"] == "2023-11-14 22:13:24.000000"
    assert msg["after"]["c_ubigint"] == 18446744073709551615 and msg["after"]["c_date"] == "2020-11-25"
    snapshot = next(e for e in scenario_events() if e.op is Op.SNAPSHOT)
    assert json.loads(CODEC.encode([snapshot])[0].value)["op_type"] == "I"
    ddl = next(e for e in scenario_events() if e.op is Op.DDL)
    with pytest.raises(EncodeError, match="DDL"):
        CODEC.encode([ddl])
    with pytest.raises(EncodeError, match="op_ts"):  # an event time no op_ts can spell
        CODEC.encode([snapshot.with_(event_time_ms=-2 ** 62)])


@pytest.mark.parametrize("name,field", [("malformed-unknown-op-type.json", "op_type"),
                                        ("malformed-insert-without-after.json", "after")])
def test_malformed_fixture_names_the_field(name, field):
    with pytest.raises(DecodeError) as info:
        decode(name, offset=9)
    assert (info.value.vendor, info.value.field, info.value.position.offset) == ("ogg-json", field, 9)


@pytest.mark.parametrize("text,field", [
    ('{"op_type":"I","after":{"a":1}}', "table"),
    ('{"table":"","op_type":"I","after":{"a":1}}', "table"),
    ('{"table":"S.T","op_type":"I","op_ts":"2020-13-01 00:00:00","after":{"a":1}}', "op_ts"),
    ('{"table":"S.T","op_type":"I","op_ts":1589373515,"after":{"a":1}}', "op_ts"),
    ('{"table":"S.T","op_type":"I","pos":143,"after":{"a":1}}', "pos"),
    ('{"table":"S.T","op_type":"I","pos":"12a","after":{"a":1}}', "pos"),
    ('{"table":"S.T","op_type":"I","before":{"a":1},"after":{"a":1}}', "before"),
    ('{"table":"S.T","op_type":"D","after":{"a":1}}', "before"),
    ('{"table":"S.T","op_type":"D","before":{"a":1},"after":{"a":1}}', "after"),
    ('{"table":"S.T","op_type":"U","after":[1]}', "after"),
    ('{"table":"S.T","op_type":"I","primary_keys":"a","after":{"a":1}}', "primary_keys"),
])
def test_malformed_messages_name_the_field(text, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(text.encode(), Position("m", offset=2))
    assert info.value.field == field and "m line 2" in str(info.value)

