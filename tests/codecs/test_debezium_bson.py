"""debezium-bson: what Debezium's MongoDB connector messages mean as events (the golden test checks the exact
re-encode of every fixture; here: images, types, keys, removed fields, positions, refusals)."""

from __future__ import annotations

import json

import pytest

from cdc_codecs import DecodeError, Event, Op, Position, get_codec
from cdc_codecs.event import Column
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

CODEC = get_codec("debezium-bson")


def decode(name: str) -> Event:
    path = fixtures("debezium-bson") / f"{name}.json"
    key = path.with_suffix(".key")
    events = CODEC.decode(path.read_bytes(), Position(name, 0, 5, key=key.read_bytes() if key.exists() else None))
    assert len(events) == 1
    return events[0]


def test_insert_types_every_field_by_its_bson_type():
    e = decode("paimon-insert")
    assert (e.op, e.qualified_table, e.primary_key) == (Op.INSERT, "bigdata_test.sync_test_table", ("_id",))
    assert e.after == {"_id": "67ab25755c0d5ac87eb8c632", "created_at": "1736207571013", "created_by": "peter",
                       "tags": '["pending"]', "updated_at": "1739455297.970"}
    types = {c.name: (c.type_name, c.number) for c in e.columns}
    assert types == {"_id": ("objectId", False), "created_at": ("int64", False), "created_by": ("string", False),
                     "tags": ("array", False), "updated_at": ("timestamp(3)", False)}
    # the oplog position: seconds (ts_ms) then the increment within them (ord)
    assert e.sequence[:2] == (1739321992000, 28) and e.event_time_ms == 1739321992000


def test_update_description_gives_key_plus_changed_fields_and_removed_fields_as_none():
    e = decode("connector-update-description")
    assert e.before == {"_id": "1004"} and e.after == {"_id": "1004", "first_name": "Anne Marie"}
    assert not e.replaces_row and e.removed_columns == ()
    e = decode("synthetic-update-removed-truncated")
    assert e.after == {"_id": "1004", "tags.1": "vip", "visits": "9007199254740993", "email": None,
                       "address.zip": None}
    assert e.removed_columns == ("email", "address.zip")
    assert e.vendor["truncatedArrays"] == '[{"field":"tags","size":2}]'


def test_full_document_update_replaces_the_row_and_delete_is_keyed_by_the_record_key():
    e = decode("paimon-update-full-document")
    assert e.replaces_row and e.before == {"_id": "67ab25755c0d5ac87eb8c632"} and e.after["tags"] == '["succeed"]'
    e = decode("paimon-delete")
    assert (e.op, e.before, e.after) == (Op.DELETE, {"_id": "67ab25755c0d5ac87eb8c632"}, None)
    assert decode("paimon-delete-pre-image").before["tags"] == '["pending"]'


def test_every_extended_json_wrapper_reads_exactly():
    e = decode("synthetic-snapshot-every-bson-type")
    got = {c.name: (c.type_name, e.after[c.name]) for c in e.columns}
    assert got["register_time"] == ("bsonTimestamp", "1736997330:2")
    assert got["double_nan"] == ("double", "NaN") and got["decimal_nan"] == ("decimal128", "NaN")
    assert got["deleted_time"] == ("timestamp(3)", "1735934393.769")
    assert got["uuid"] == ("binData(4)", "uE2/4v5MSVOiJZkOo3APKQ==") and got["binary"][0] == "binData"
    assert got["regex"] == ("regex", "/^pass$/i") and got["minKey"] == ("minKey", "MinKey")
    assert got["symbol"] == ("symbol", '{"$symbol":"symbol"}')
    assert e.after["null"] is None


def test_a_date_keeps_every_fraction_digit_it_is_written_with():
    """An ISO $date reads as exact epoch seconds whatever its fraction's length (a 23-digit one once raised
    decimal.InvalidOperation out of decode: the default context's 28 digits)."""
    doc = '{"_id":1,"t":{"$date":"2023-05-17T09:18:31.12345678901234567890123+01:00"}}'
    raw = ('{"before":null,"after":%s,"source":{"connector":"mongodb","db":"d","collection":"c","ts_ms":5,"ord":1},'
           '"op":"c","ts_ms":5}' % json.dumps(doc)).encode()
    e = CODEC.decode(raw, Position("t", 0, 1))[0]
    assert e.after["t"] == "1684311511.12345678901234567890123"


@pytest.mark.parametrize("name, field", [("malformed-after-not-extended-json", "payload.after"),
                                         ("malformed-update-without-description", "payload.updateDescription")])
def test_refusals_name_the_field(name, field):
    with pytest.raises(DecodeError) as info:
        decode(name)
    assert info.value.field == field and "debezium-bson" in str(info.value)


def test_delete_without_record_key_or_before_is_refused():
    raw = (fixtures("debezium-bson") / "paimon-delete.json").read_bytes()
    with pytest.raises(DecodeError, match="record key"):
        CODEC.decode(raw, Position("x", 0, 1))


def test_a_relational_row_keeps_its_composite_key_in_the_record_key():
    row = Event(format="canonical", op=Op.UPDATE, position=Position("s"), database="shop", table="items",
                columns=(Column("order_id", "int", 4), Column("line", "int", 4), Column("qty", "decimal(10,2)", 3)),
                primary_key=("order_id", "line"), before={"order_id": "7", "line": "2", "qty": "1.00"},
                after={"order_id": "7", "line": "2", "qty": "2.50"}, removed_columns=())
    m, = CODEC.encode([row])
    assert m.key == b'{"id":"{\\"order_id\\":7,\\"line\\":2}"}'
    e, = CODEC.decode(m.value, Position("t", 0, 1, key=m.key))
    assert e.primary_key == ("order_id", "line")
    assert e.after == {"order_id": "7", "line": "2", "qty": "2.50"}  # the key, then the updated field
    assert [(c.name, c.type_name) for c in e.columns if c.name == "qty"] == [("qty", "decimal128")]


def test_the_oplog_position_is_derived_not_kept_as_a_fix_and_messages_re_encode_byte_for_byte():
    # The source block the codec writes (connector, db, collection, ts_ms, ord) is all said by the event (its
    # table and its sequence (ts_ms, ord, ts_ms)): none of it needs to be kept as a fix in the vendor data.
    events = [e for e in scenario_events() if CODEC.capabilities.carries(e.op) and e.op.is_data]
    messages = CODEC.encode(events)
    assert len(messages) >= 4
    for n, m in enumerate(messages):
        decoded = CODEC.decode(m.value, Position("t", 0, n, key=m.key))
        assert [path for e in decoded for path, _ in e.vendor.get("fix", []) if path[0] == "source"] == []
        again, = CODEC.encode(decoded)
        assert (again.value, again.key) == (m.value, m.key)
