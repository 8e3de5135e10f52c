"""drs-gaussdb: DRS JSON for GaussDB/PostgreSQL (columnType, schema, opType, DRS type codes), PostgreSQL value
renderings (bytea hex, bit strings, timestamptz), malformed input and the canonical scenario."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Event, Op, Position, get_codec
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("drs-gaussdb")
CODEC = get_codec("drs-gaussdb")


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, offset: int = 0):
    return CODEC.decode(data, Position(source="gauss", partition=0, offset=offset))


def message(row: dict, types: dict, codes: dict, **fields) -> bytes:
    msg = {"columnType": types, "dbType": "PostgreSQL", "schema": "public", "opType": "INSERT", "id": 12,
           "es": 1639626187000, "ts": 1639629261915, "database": "db", "table": "t", "type": "INSERT",
           "isDdl": False, "sql": "", "sqlType": codes, "data": [row], "old": None, "pkNames": ["id"]}
    msg.update(fields)
    return json.dumps(msg).encode()


def test_update_example_fields():
    [e] = decode(raw("update.json"))
    assert e.op is Op.UPDATE
    assert (e.database, e.schema, e.table) == ("database01", "schema01", "table01")
    assert e.qualified_table == "database01.schema01.table01"
    assert e.primary_key == ()  # pkNames is null in the example
    assert e.sequence == (Decimal(332),) and e.event_time_ms == 1639626187000
    b, a = e.before, e.after
    assert (b["timestamp_column"], a["timestamp_column"]) == ("2014-07-02 06:14:00.742",
                                                              "2021-12-16 12:31:49.344365")
    assert (b["boolean_column"], a["boolean_column"]) == ("true", "false")
    assert a["bytea_column"] == base64.b64encode(b"bytea_data").decode()  # hex 62797465615f64617461
    assert a["bit_column"] == "1" and a["smallint_column"] == "12" and a["char_column"] == "g"
    assert a["tstzrange_column"] == '("2010-01-01 14:30:00+08","2010-01-01 15:30:00+08")'
    assert a["jsonb_column"] == '{"key1": "value1", "key2": "value2"}'
    # sqlType holds DRS codes (smallint 2, boolean 8): jdbc_type comes from the type name instead
    assert e.column("smallint_column") == Column("smallint_column", "smallint", 5)
    assert e.column("boolean_column") == Column("boolean_column", "boolean", 16)
    assert e.column("timestamp_column") == Column("timestamp_column", "timestamp without time zone", 93)
    assert e.column("tstzrange_column").jdbc_type == 1111
    # the DRS codes are re-derived exactly, so only the Kafka write time needs keeping
    assert e.vendor["fix"] == [["ts", "1639629261915"]]


def test_unknown_type_codes_are_kept_and_zoned_values_converted():
    types = {"id": "integer", "at": "timestamp with time zone", "flags": "bit(4)", "b": "bytea"}
    codes = {"id": 3, "at": 17, "flags": 20, "b": 15}
    row = {"id": "1", "at": "2021-12-16 12:31:49.5+05:30", "flags": "0101", "b": "\\x00ff"}
    data = message(row, types, codes)
    [e] = decode(data)
    assert e.after == {"id": "1", "at": "2021-12-16 12:31:49.5 +05:30", "flags": "5", "b": "AP8="}
    assert e.column("at").jdbc_type == 2014 and e.column("flags").jdbc_type == -7
    fix = dict(e.vendor["fix"])
    assert json.loads(fix["sqlType"]) == codes  # integer/timestamptz codes are not in the documented table
    assert e.vendor["cells"] == {"data": {"b": '"\\\\x00ff"'}}  # the \x prefix is not the default rendering
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_oracle_source_has_an_empty_database():
    data = message({"ID": "1"}, {"ID": "NUMBER(10)"}, {"ID": 2}, database="", schema="HR", dbType="Oracle",
                   pkNames=["ID"])
    [e] = decode(data)
    assert e.database is None and e.schema == "HR" and e.qualified_table == "HR.t"
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_foreign_event_gets_schema_op_type_and_pg_renderings():
    cols = (Column("id", "bigint", -5), Column("b", "blob", 2004), Column("bits", "bit(8)", -7),
            Column("z", "timestamp with time zone", 2014))
    e = Event(format="canal-json", op=Op.DELETE, database="db", schema="s", table="t", position=Position("x"),
              before={"id": "1", "b": "AP8=", "bits": "5", "z": "2020-11-25 08:01:02.5 Asia/Shanghai"},
              columns=cols, primary_key=("id",), sequence=(Decimal(4),))
    out = json.loads(CODEC.encode([e])[0].value)
    assert (out["schema"], out["opType"], out["type"], out["dbType"]) == ("s", "DELETE", "DELETE",
                                                                         "GaussDB Primary/Standby")
    assert out["data"] is None
    assert out["old"] == [{"id": "1", "b": "00ff", "bits": "00000101", "z": "2020-11-25 08:01:02.5 Asia/Shanghai"}]
    assert out["sqlType"] == {"id": -5, "b": 2004, "bits": 20, "z": 2014}  # DRS code where documented
    # an offset is written the PostgreSQL way; a zone id has no PostgreSQL rendering and is kept verbatim
    offset = e.with_(before={**e.before, "z": "2020-11-25 08:01:02.5 -03:30"})
    assert json.loads(CODEC.encode([offset])[0].value)["old"][0]["z"] == "2020-11-25 08:01:02.5-03:30"
    [back] = decode(CODEC.encode([e])[0].value)
    assert back.before == e.before


@pytest.mark.parametrize("row, field", [
    ({"id": "1", "b": "zz"}, "data[0].b"),
    ({"id": "1", "b": "abc"}, "data[0].b"),
    ({"id": "1", "flags": "12"}, "data[0].flags"),
])
def test_malformed_values_name_the_cell(row, field):
    data = message(row, {"id": "integer", "b": "bytea", "flags": "bit"}, {"id": 3, "b": 15, "flags": 20})
    with pytest.raises(DecodeError) as err:
        decode(data, offset=8)
    assert (err.value.vendor, err.value.field) == ("drs-gaussdb", field)
    assert err.value.position.offset == 8 and err.value.position.partition == 0


def test_malformed_schema_is_rejected():
    with pytest.raises(DecodeError) as err:
        decode(message({"id": "1"}, {"id": "integer"}, {"id": 3}, schema=5))
    assert err.value.field == "schema"


def test_scenario_round_trip():
    events = scenario_events()
    carried = [e for e in events if e.op in CODEC.capabilities.ops]
    messages = CODEC.encode(events)
    back = [e for i, m in enumerate(messages) for e in decode(m.value, offset=i)]
    assert len(back) == len(carried)

    for want, got in zip(carried, back, strict=True):
        assert (got.op, got.qualified_table, got.sequence, got.ddl) == (want.op, want.qualified_table,
                                                                       want.sequence, want.ddl)
        assert got.before == want.before and got.after == want.after
        assert got.primary_key == want.primary_key
