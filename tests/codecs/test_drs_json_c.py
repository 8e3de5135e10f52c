"""drs-json-c: DRS JSON-C (deleted row in data, MySQL timestamps as local text), built from the JSON example
since the document has no JSON-C example of its own (see fixtures/drs-json-c/NOTES.md)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Event, Op, Position, get_codec
from cdc_codecs.drs.drs_json import DrsJsonCodec
from cdc_codecs.drs.drs_json_c import DrsJsonCCodec
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("drs-json-c")
CODEC = get_codec("drs-json-c")
GOLDEN = sorted(p.name for p in FIXTURES.glob("*.json"))


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, codec=CODEC, offset: int = 0):
    return codec.decode(data, Position(source="jsonc", offset=offset))


def message(**fields) -> bytes:
    msg = {"mysqlType": {"id": "int", "ts": "timestamp(3)", "dt": "datetime"}, "id": 9, "es": 1, "ts": 2,
           "database": "d", "table": "t", "type": "INSERT", "isDdl": False, "sql": "",
           "sqlType": {"id": 4, "ts": 93, "dt": 93}, "data": [{"id": "1", "ts": "2021-06-25 17:51:53.201",
                                                             "dt": "2021-06-25 17:51:53"}],
           "old": None, "pkNames": ["id"]}
    msg.update(fields)
    return json.dumps(msg).encode()


def test_golden_fixtures_exist():
    assert GOLDEN == ["constructed-delete.json", "constructed-update.json"]


def test_shares_the_drs_json_codec():
    assert isinstance(CODEC, DrsJsonCodec) and CODEC.name == "drs-json-c"
    assert CODEC.dialect.delete_in == "data"


def test_update_timestamp_text_becomes_epoch_seconds():
    [e] = decode(raw("constructed-update.json"))
    assert e.op is Op.UPDATE and e.qualified_table == "test01.test"
    assert e.sequence == (Decimal(27678),) and e.event_time_ms == 1624614714000
    # 2021-06-25 17:51:53.201 at +08:00 is the same instant as DRS JSON's "1624614713.201"
    assert e.after["c5"] == "1624614713.201" and e.before["c5"] == "1624614713.201"
    assert e.after["c4"] == "2021-06-25 17:51:53"  # datetime stays local text
    assert "c4" in e.before and e.before["c4"] is None  # NULL, not missing
    assert (e.before["id"], e.after["id"]) == ("103", "104")
    assert e.column("c5") == Column("c5", "timestamp", 93)
    assert "cells" not in e.vendor  # the text is exactly the rendering of the canonical value


def test_delete_row_is_in_data():
    [e] = decode(raw("constructed-delete.json"))
    assert e.op is Op.DELETE and e.after is None
    assert e.before["id"] == "104" and e.before["c5"] == "1624614713"
    assert "delete_rows" not in e.vendor
    out = json.loads(CODEC.encode([e])[0].value)
    assert out["old"] is None and out["data"][0]["c5"] == "2021-06-25 17:51:53"


def test_delete_row_in_old_is_accepted_too():
    data = message(type="DELETE", old=json.loads(message())["data"], data=None)
    [e] = decode(data)
    assert e.before["ts"] == "1624614713.201" and e.vendor["delete_rows"] == "old"
    assert as_json(CODEC.encode([e])[0].value) == as_json(data)


def test_zone_is_a_parameter():
    [plus8] = decode(message())
    [utc] = decode(message(), codec=DrsJsonCCodec("UTC"))
    [ny] = decode(message(), codec=DrsJsonCCodec("America/New_York"))
    assert plus8.after["ts"] == "1624614713.201"
    assert utc.after["ts"] == "1624643513.201"
    assert ny.after["ts"] == "1624657913.201"  # EDT, UTC-4 in June
    assert json.loads(DrsJsonCCodec("America/New_York").encode([ny])[0].value)["data"][0]["ts"] == \
        "2021-06-25 17:51:53.201"


def test_zero_date_and_pre_epoch_instants():
    data = message(data=[{"id": "1", "ts": "0000-00-00 00:00:00", "dt": None},
                         {"id": "2", "ts": "1969-12-31 23:59:58.5", "dt": None}])
    zero, early = decode(data, codec=DrsJsonCCodec("UTC"))
    assert zero.after["ts"] == "0000-00-00 00:00:00"  # not an instant: kept verbatim
    assert early.after["ts"] == "-1.5"
    assert as_json(DrsJsonCCodec("UTC").encode([zero, early])[0].value) == as_json(data)


def test_foreign_timestamp_is_written_as_local_text():
    e = Event(format="debezium-json", op=Op.INSERT, database="d", table="t", position=Position("x"),
              after={"id": "1", "ts": "1606233662.012345"}, columns=(Column("id", "bigint"),
                                                                     Column("ts", "timestamp(6)")),
              primary_key=("id",), sequence=(Decimal(5),))
    out = json.loads(CODEC.encode([e])[0].value)
    assert out["data"] == [{"id": "1", "ts": "2020-11-25 00:01:02.012345"}]


@pytest.mark.parametrize("data, field", [
    (message(data=[{"id": "1", "ts": "2021-02-30 10:00:00", "dt": None}]), "data[0].ts"),
    (message(type="DELETE", data=None, old=None), "data"),
    (message(type="UPDATE", old=None), "old"),
])
def test_malformed_messages_name_the_field(data, field):
    with pytest.raises(DecodeError) as err:
        CODEC.decode(data, Position(source="f.jsonl", offset=4))
    assert (err.value.vendor, err.value.field) == ("drs-json-c", field)
    assert err.value.position.offset == 4


def test_scenario_round_trip():
    events = scenario_events()
    carried = [e for e in events if e.op in CODEC.capabilities.ops]
    messages = CODEC.encode(events)
    back = [e for i, m in enumerate(messages) for e in decode(m.value, offset=i)]
    assert len(back) == len(carried)
    timestamps = set()
    for want, got in zip(carried, back, strict=True):
        assert (got.op, got.qualified_table, got.sequence, got.ddl) == (want.op, want.qualified_table,
                                                                       want.sequence, want.ddl)
        assert got.before == want.before and got.after == want.after
    for m in messages:
        for row in json.loads(m.value)["data"] or ():
            timestamps.add(row.get("c_timestamp"))
    assert "2020-11-25 00:01:02.012345" in timestamps  # written as text, read back as the same instant
