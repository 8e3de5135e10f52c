"""Aliyun DTS Avro Record: golden fixtures (Avro JSON encoding of each datum, bytes built here), 14- and
15-field records, EmptyObject vs NULL, typed values, malformed input and the canonical scenario round trip."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from decimal import Decimal

import pytest
from fastavro._read_py import reader as avro_json_reader  # the pure-Python reader takes the Avro JSON decoder
from fastavro.io.json_decoder import AvroJSONDecoder

from cdc_codecs import records
from cdc_codecs.dts.dts_avro import CODEC, NS, RECORD14, RECORD15, writable
from cdc_codecs.event import DecodeError, Op, Position
from cdc_codecs.oms.oms_avro import avro_dumps, avro_loads, comparable
from cdc_codecs.scenario import scenario_events
from golden import fixtures  # beside this file

FIXTURES = fixtures("dts-avro")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.datum.json"))


def schema_for(body: dict):
    return RECORD15 if "bornTimestamp" in body else RECORD14


def datum_of(name: str) -> tuple[dict, object]:
    body = json.loads((FIXTURES / name).read_text())
    schema = schema_for(body)
    reader = avro_json_reader(AvroJSONDecoder(io.StringIO(json.dumps(body))), schema, return_named_type=True,
                              return_named_type_override=True)
    datum = next(iter(reader))
    for side in ("beforeImages", "afterImages"):
        if isinstance(datum[side], list):
            datum[side] = [writable(v) for v in datum[side]]
    return datum, schema


def message(name: str) -> bytes:
    datum, schema = datum_of(name)
    return avro_dumps(schema, datum)


def decode_one(name: str):
    events = CODEC.decode(message(name), Position(source=name, partition=0, offset=9))
    assert len(events) == 1
    return events[0]


def read_any(raw: bytes) -> dict:
    datum, used = avro_loads(RECORD14, raw)
    if used != len(raw):
        datum, used = avro_loads(RECORD15, raw)
    assert used == len(raw)
    return comparable(datum)


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_reencode_gives_equal_datum(name):
    raw = message(name)
    event = decode_one(name)
    out = CODEC.encode([event])
    assert len(out) == 1
    assert read_any(out[0].value) == read_any(raw)
    assert len(out[0].value) == len(raw)  # 14-field records stay 14-field
    again = records.from_record(json.loads(json.dumps(records.to_record(event), default=str)))
    assert read_any(CODEC.encode([again])[0].value) == read_any(raw)


def test_insert_14_fields_typed_values():
    e = decode_one("insert_mysql_14_fields.datum.json")
    assert e.op is Op.INSERT and e.before is None
    assert (e.database, e.schema, e.table) == ("demo", None, "all_types")
    assert e.primary_key == ("id",) and e.sequence == (Decimal(5001),)
    assert e.event_time_ms == 1_606_233_662_000 and e.transaction_id is None
    assert e.vendor["born"] is None  # no bornTimestamp in the message
    a = e.after
    assert a["id"] == "18446744073709551615" and a["c_int"] == "-2147483648"
    assert a["c_decimal"] == "12345678901234567890123456789012345.123456789012345678901234567890"
    assert a["c_double"] == "9.999999999999"
    assert a["c_varchar"] == 'héllo, "world"\n' and a["c_gbk"] == "中文"
    assert a["c_blob"] == "AP8Q/w==" and a["c_bit"] == "5"
    assert a["c_date"] == "2020-11-25" and a["c_time"] == "-838:59:59"
    assert a["c_datetime"] == "2020-11-25 00:01:02.123456"  # DateTime.millis holds microseconds
    assert a["c_timestamp"] == "1606233662.012345"  # Timestamp.millis holds microseconds
    assert a["c_year"] == "2021" and a["c_json"] == '{"k": [1, 2.50, "v"]}' and a["c_enum"] == "b"
    assert a["c_geo"] == "AQEAAAAAAAAAAADwPwAAAAAAAABA"
    assert "c_null" in a and a["c_null"] is None
    types = {c.name: c.type_name for c in e.columns}
    assert types["c_decimal"] == "DECIMAL(65,30)" and types["c_timestamp"] == "TIMESTAMP"
    assert types["c_date"] == "DATE" and types["c_time"] == "TIME" and types["c_year"] == "YEAR"
    assert types["c_bit"] == "BIT" and types["c_json"] == "JSON" and types["c_null"] is None
    assert e.vendor["fields"][:3] == [8, 3, 246]


def test_update_empty_object_none_is_absent_and_null_is_null():
    e = decode_one("update_none_and_null.datum.json")
    assert e.op is Op.UPDATE
    assert (e.database, e.schema, e.table) == ("shop", None, "order.items")  # \u002E is a literal dot
    assert e.qualified_table == "shop.order.items"
    assert e.primary_key == ("order_id", "line") and e.transaction_id == "88"
    assert "sku" not in e.before and "sku" not in e.after  # EmptyObject.NONE: not present
    assert e.before["note"] is None and e.after["note"] is None  # Avro null and EmptyObject.NULL
    assert (e.before["qty"], e.after["qty"]) == ("3", "4")
    assert e.vendor["born"] == 1_606_233_662_000


def test_delete_three_part_name_zoned_and_geometry():
    e = decode_one("delete_postgres_schema.datum.json")
    assert e.op is Op.DELETE and e.after is None
    assert (e.database, e.schema, e.table) == ("appdb", "public", "events")
    b = e.before
    assert b["id"] == "-9223372036854775808"
    assert b["at"] == "2020-11-25 08:01:02.5 Asia/Shanghai"
    assert e.column("at").type_name == "TIMESTAMP WITH TIME ZONE"
    assert b["payload"] == '{"a": 1}' and b["area"] == "POLYGON((0 0,1 0,1 1,0 0))" and b["raw"] == "AA=="


def test_ddl_and_control_records():
    ddl = decode_one("ddl.datum.json")
    assert ddl.op is Op.DDL and ddl.ddl == "CREATE TABLE `t2` (`id` int PRIMARY KEY)"
    assert (ddl.database, ddl.table) == ("demo", None)
    begin, commit = decode_one("begin.datum.json"), decode_one("commit.datum.json")
    assert (begin.op, commit.op, begin.transaction_id, commit.transaction_id) == (Op.BEGIN, Op.COMMIT, "99", "99")
    assert decode_one("heartbeat.datum.json").op is Op.HEARTBEAT
    init = decode_one("init_snapshot.datum.json")
    assert init.op is Op.SNAPSHOT and init.after == {"id": "1", "v": "1.2222000360488892"}
    rollback = decode_one("rollback.datum.json")
    assert rollback.op is Op.HEARTBEAT and rollback.vendor["operation"] == "ROLLBACK"


def _with(name: str, **changes) -> bytes:
    datum, schema = datum_of(name)
    datum.update(changes)
    return avro_dumps(schema, datum)


@pytest.mark.parametrize("raw, field", [
    (message("update_none_and_null.datum.json")[:-4], "Record"),
    (message("update_none_and_null.datum.json") + b"\x02", "bornTimestamp"),
    (_with("init_snapshot.datum.json", tags={"pk_uk_info": "{PRIMARY"}), 'tags["pk_uk_info"]'),
    (_with("init_snapshot.datum.json", afterImages=[(f"{NS}.Integer", {"precision": 1, "value": "1.5"}), None]),
     "afterImages[0]"),
    (_with("init_snapshot.datum.json", afterImages=[(f"{NS}.Character", {"charset": "klingon", "value": b"x"}),
                                                    None]), "afterImages[0]"),
    (_with("init_snapshot.datum.json", afterImages=[None]), "afterImages"),
    (_with("init_snapshot.datum.json", objectName="a.b.c.d"), "objectName"),
])
def test_malformed_messages_name_format_field_and_position(raw, field):
    with pytest.raises(DecodeError) as info:
        CODEC.decode(raw, Position(source="dts-topic", partition=0, offset=77))
    err = info.value
    assert (err.vendor, err.field) == ("dts-avro", field)
    assert err.position.offset == 77 and "dts-topic" in str(err)


def test_scenario_round_trip_up_to_capabilities():
    source = scenario_events()
    back = []
    for i, msg in enumerate(CODEC.encode(source)):
        back.extend(CODEC.decode(msg.value, Position(source="re", offset=i)))
    assert len(back) == len(source)
    for want, got in zip(source, back):
        assert got.op is want.op
        assert (got.database, got.table, got.ddl) == (want.database, want.table, want.ddl)
        assert (got.transaction_id, got.event_time_ms, got.sequence) == \
               (want.transaction_id, want.event_time_ms, want.sequence)
        assert got.before == want.before and got.after == want.after
        assert got.primary_key == want.primary_key
    types = {c.name: c.type_name for c in back[0].columns}
    assert types["c_decimal"] == "DECIMAL(65,30)" and types["c_zoned"] == "TIMESTAMP WITH TIME ZONE"
    assert types["c_timestamp"] == "TIMESTAMP" and types["c_datetime"] == "DATETIME"
    # DateTime.millis holds microseconds: a 9-digit fraction travels as text, exactly, typed CHARACTER
    assert back[0].after["c_datetime9"] == "2020-11-25 00:01:02.123456789"
    assert types["c_datetime9"] == "CHARACTER"


def test_absent_column_encodes_as_empty_object_none():
    e = decode_one("update_none_and_null.datum.json")
    foreign = replace(e, format="other", vendor={}, before={"order_id": "10", "line": "1"})
    datum = avro_loads(RECORD15, CODEC.encode([foreign])[0].value)[0]
    assert datum["beforeImages"][2:] == [(f"{NS}.EmptyObject", "NONE")] * 3
    assert json.loads(datum["tags"]["pk_uk_info"]) == {"PRIMARY": ["order_id", "line"]}
