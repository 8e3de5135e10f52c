"""The classes of real-producer output that the documentation examples did not show (issue 12): Canal's
ISO-8859-1 binary text, connector-specific Debezium positions, PostgreSQL REPLICA IDENTITY, OMS Avro NULL
decimals, and fields newer producer versions add."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from cdc_codecs import Column, DecodeError, Event, Op, Position, get_codec, jsontext
from golden import FIXTURES_ROOT, as_json

CANAL = get_codec("canal-json")
DBZ = get_codec("debezium-json")
ALL_BYTES = bytes(range(256))


def canal_message(row: dict, types: dict, *, batch_id: bool = True) -> bytes:
    msg = {"data": [row], "database": "d", "es": 1700000000000, "isDdl": False, "mysqlType": types, "old": None,
           "pkNames": ["id"], "sql": "", "sqlType": {k: 12 for k in types}, "table": "t", "ts": 1700000000001,
           "type": "INSERT"}
    if batch_id:
        msg["id"] = 5
    return json.dumps(msg).encode()


def test_canal_binary_blob_bit_are_iso_8859_1_bytes():
    row = {"id": "1", "b": ALL_BYTES.decode("latin-1"), "vb": "\x00\xff", "bl": "", "bt": "\x01\x00", "t": "é😀"}
    types = {"id": "int(11)", "b": "binary(256)", "vb": "varbinary(8)", "bl": "longblob", "bt": "bit(9)",
             "t": "text"}
    raw = canal_message(row, types)
    [e] = CANAL.decode(raw, Position("c", offset=1))
    assert base64.b64decode(e.after["b"]) == ALL_BYTES
    assert e.after["vb"] == base64.b64encode(b"\x00\xff").decode() and e.after["bl"] == ""
    assert e.after["bt"] == "256"  # bit(9) 0x0100, big-endian
    assert e.after["t"] == "é😀"  # text columns are text
    # what Canal wrote is what the encoder writes back, byte for byte in every binary column
    assert json.loads(CANAL.encode([e])[0].value) == json.loads(raw)


def test_canal_binary_text_that_is_not_one_byte_per_char_is_refused():
    raw = canal_message({"id": "1", "b": "a😀"}, {"id": "int", "b": "blob"})
    with pytest.raises(DecodeError) as info:
        CANAL.decode(raw, Position("c", offset=9))
    assert info.value.field == "data[0].b" and "ISO-8859-1" in str(info.value) and "line 9" in str(info.value)


def test_canal_timestamp_wall_clock_is_read_as_utc_which_is_the_declared_loss():
    assert dict(CANAL.capabilities.losses)["timestamp"] == "wall-clock"
    raw = canal_message({"id": "1", "ts": "2024-03-05 08:00:00.250", "dt": "2024-03-05 08:00:00"},
                        {"id": "int", "ts": "timestamp(3)", "dt": "datetime"})
    [e] = CANAL.decode(raw, Position("c"))
    # a server in +08:00 wrote 08:00 for the instant 00:00 UTC: read as UTC it is 8 hours later, as declared
    assert e.after["ts"] == "1709625600.250" and e.after["dt"] == "2024-03-05 08:00:00"
    assert json.loads(CANAL.encode([e])[0].value) == json.loads(raw)


def test_canal_oms_dialect_binary_is_base64_and_stays_so():
    raw = canal_message({"id": 1, "b": "AP8="}, {"id": "int", "b": "blob"}, batch_id=False)
    [e] = CANAL.decode(raw, Position("c"))
    assert e.after["b"] == "AP8="
    assert json.loads(CANAL.encode([e])[0].value) == json.loads(raw)


def test_foreign_binary_is_written_as_canal_writes_it():
    e = Event(format="debezium-json", op=Op.INSERT, database="d", table="t", position=Position("x"),
              after={"id": "1", "b": base64.b64encode(b"\x00\x80\xff").decode()},
              columns=(Column("id", "int"), Column("b", "varbinary(3)")), primary_key=("id",))
    msg = json.loads(CANAL.encode([e])[0].value)
    assert msg["data"][0]["b"].encode("latin-1") == b"\x00\x80\xff"
    [back] = CANAL.decode(CANAL.encode([e])[0].value, Position("y"))
    assert back.after == e.after


# --------------------------------------------------------------------------------------------- Debezium


def dbz(payload: dict, key: bytes | None = None, offset: int = 1):
    return DBZ.decode(json.dumps(payload).encode(), Position("topic", 0, offset, key=key))


SOURCES = {
    # connector -> (earlier, later) source blocks; "later" must order after "earlier" whatever the archive says
    "mysql-snapshot-vs-binlog": ({"connector": "mysql", "file": "", "pos": 0, "snapshot": "true", "ts_ms": 9},
                                 {"connector": "mysql", "file": "mysql-bin.000001", "pos": 4, "row": 0, "ts_ms": 1}),
    "mysql-row": ({"connector": "mysql", "file": "mysql-bin.000010", "pos": 500, "row": 1, "ts_ms": 5},
                  {"connector": "mysql", "file": "mysql-bin.000010", "pos": 500, "row": 2, "ts_ms": 5}),
    "mysql-file": ({"connector": "mysql", "file": "mysql-bin.000009", "pos": 900, "ts_ms": 5},
                   {"connector": "mysql", "file": "mysql-bin.000010", "pos": 4, "ts_ms": 5}),
    "postgresql-sequence": ({"connector": "postgresql", "lsn": 40, "sequence": '["30","40"]', "txId": 7},
                            {"connector": "postgresql", "lsn": 20, "sequence": '["35","20"]', "txId": 6}),
    "postgresql-lsn": ({"connector": "postgresql", "lsn": 24023128}, {"connector": "postgresql", "lsn": 24023184}),
    "sqlserver": ({"connector": "sqlserver", "commit_lsn": "00000025:00000d98:0025",
                   "change_lsn": "00000025:00000d98:0002", "event_serial_no": 2},
                  {"connector": "sqlserver", "commit_lsn": "00000025:00000d98:0025",
                   "change_lsn": "00000025:00000d98:0002", "event_serial_no": 3}),
    "oracle": ({"connector": "oracle", "scn": "1513734", "commit_scn": "1513754"},
               {"connector": "oracle", "scn": "1513700", "commit_scn": "1513800"}),
    "mongodb": ({"connector": "mongodb", "ts_ms": 1558965508000, "ord": 31},
                {"connector": "mongodb", "ts_ms": 1558965508000, "ord": 32}),
    "db2": ({"connector": "db2", "change_lsn": "00000000:00000000:0000000000000a1f",
             "commit_lsn": "00000000:0000150f:0000000000048fca"},
            {"connector": "db2", "change_lsn": "00000000:00000000:0000000000000a20",
             "commit_lsn": "00000000:0000150f:0000000000048fcb"}),
    "ts_ms-breaks-ties": ({"connector": "postgresql", "lsn": 5, "ts_ms": 1}, {"connector": "postgresql", "lsn": 5, "ts_ms": 2}),
}


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_debezium_connector_positions_order_events(case):
    earlier, later = SOURCES[case]
    base = {"op": "u", "before": {"id": 1}, "after": {"id": 1, "v": 2}}
    # the later change sits earlier in the archive: the connector's position must win over archive order
    [b] = dbz({**base, "source": {"db": "d", "table": "t", **later}}, offset=1)
    [a] = dbz({**base, "source": {"db": "d", "table": "t", **earlier}}, offset=2)
    assert a.order_key() < b.order_key()
    assert DBZ.encode([a])[0].value and as_json(DBZ.encode([a])[0].value)["source"] == as_json(
        json.dumps({"db": "d", "table": "t", **earlier}).encode())


def test_debezium_empty_binlog_file_is_a_snapshot_not_an_error():
    [e] = dbz({"op": "r", "after": {"id": 1}, "source": {"connector": "mysql", "file": "", "pos": 0,
                                                         "snapshot": "true", "db": "d", "table": "t", "ts_ms": 0}})
    assert e.op is Op.SNAPSHOT and e.sequence[:3] == (Decimal(0), Decimal(0), Decimal(0))


def test_debezium_bad_sqlserver_lsn_names_the_field():
    with pytest.raises(DecodeError) as info:
        dbz({"op": "c", "after": {"id": 1}, "source": {"connector": "sqlserver", "change_lsn": "zz:1",
                                                       "commit_lsn": "00:01"}})
    assert info.value.field == "payload.source.change_lsn"


def test_postgres_default_replica_identity_update_without_before_is_keyed_by_after():
    [e] = dbz({"op": "u", "before": None, "after": {"id": 3, "v": "x"},
               "source": {"connector": "postgresql", "lsn": 10, "db": "d", "schema": "public", "table": "t"}},
              key=b'{"id":3}')
    assert e.before is None and e.after["id"] == "3" and e.primary_key == ("id",)


def test_postgres_delete_without_any_key_is_dead_lettered_with_the_fix():
    payload = {"op": "d", "before": None, "after": None,
               "source": {"connector": "postgresql", "lsn": 10, "db": "d", "schema": "public", "table": "t"}}
    with pytest.raises(DecodeError) as info:
        dbz(payload)
    assert info.value.field == "payload.before" and "REPLICA IDENTITY FULL" in str(info.value)


def test_postgres_delete_without_before_is_keyed_by_the_record_key_and_reencodes_unchanged():
    payload = {"op": "d", "before": None, "after": None,
               "source": {"connector": "postgresql", "lsn": 10, "db": "d", "schema": "public", "table": "t"}}
    key = b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}]},"payload":{"id":42}}'
    [e] = dbz(payload, key=key)
    assert e.before == {"id": "42"} and e.primary_key == ("id",)
    assert as_json(DBZ.encode([e])[0].value) == as_json(json.dumps(payload).encode())


def test_debezium_geometry_is_wkb_and_keeps_its_srid():
    wkb = base64.b64encode(bytes.fromhex("0101000000000000000000f03f0000000000000040")).decode()
    field = {"type": "struct", "name": "io.debezium.data.geometry.Geometry", "optional": True, "field": "g",
             "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                        {"type": "int32", "optional": True, "field": "srid"}]}
    schema = {"type": "struct", "fields": [{"type": "struct", "field": "after", "optional": True,
                                            "fields": [{"type": "int32", "optional": False, "field": "id"}, field]}]}
    for srid in (None, 4326):
        msg = {"schema": schema, "payload": {"op": "c", "after": {"id": 1, "g": {"wkb": wkb, "srid": srid}},
                                             "source": {"connector": "mysql", "file": "b.1", "pos": 4}}}
        raw = json.dumps(msg).encode()
        [e] = DBZ.decode(raw, Position("x"))
        assert e.after["g"] == wkb
        assert as_json(DBZ.encode([e])[0].value) == as_json(raw)


# --------------------------------------------------------------------------------------------- OMS Avro


def test_oms_avro_null_decimal_does_not_declare_a_weaker_type():
    oms = get_codec("oms-avro")
    cols = (Column("id", "bigint"), Column("amt", "decimal(10,2)"))
    e = Event(format="canal-json", op=Op.INSERT, database="d", table="t", position=Position("x"),
              after={"id": "1", "amt": None}, columns=cols, primary_key=("id",))
    [m] = oms.encode([e])
    [d] = oms.decode(m.value, Position("y"))
    amt = d.column("amt")
    assert d.after["amt"] is None and amt.type_name is None  # no (p,s) to declare: none, not "DECIMAL"
    [m2] = oms.encode([d])
    assert m2.value == m.value  # the ColumnValue's DECIMAL type_info comes back
    [m3] = oms.encode([e.with_(after={"id": "2", "amt": "1.50"})])
    [d3] = oms.decode(m3.value, Position("z"))
    assert d3.column("amt").type_name == "DECIMAL(10,2)"  # from the declared type, not the value's shape


# ------------------------------------------------------------------------------------- additive fields

# fixtures whose first message is a JSON object (an array-of-messages fixture has no top level to add a field to)
JSON_FIXTURES = sorted(p for p in FIXTURES_ROOT.glob("*/*.json")
                       if not p.name.startswith("malformed-") and not get_codec(p.parent.name).capabilities.binary
                       and isinstance(jsontext.loads(p.read_bytes())[0], dict))


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_unknown_additive_fields_are_tolerated_and_reencoded(path):
    codec = get_codec(path.parent.name)
    obj = jsontext.loads(path.read_bytes())[0]
    obj["x_added_by_newer_version"] = {"n": jsontext.JsonNumber("1.50"), "s": "x"}
    if isinstance(obj.get("payload"), dict):
        obj["payload"]["x_payload_field"] = [1, "two"]
        if isinstance(obj["payload"].get("source"), dict):
            obj["payload"]["source"]["ts_ns"] = jsontext.JsonNumber("1700000000000000001")
    raw = jsontext.dumps(obj)
    key = path.with_suffix(".key")
    events = codec.decode(raw, Position(path.name, offset=1, key=key.read_bytes() if key.exists() else None))
    assert events
    assert [as_json(m.value) for m in codec.encode(events)] == [as_json(raw)]


def test_canal_text_typed_as_binary_by_sql_type_is_text_by_mysql_type():
    """Canal types a NULL TEXT value by the binlog (LONGVARBINARY, -4) and FlatMessage keeps the last row's sqlType:
    the non-NULL TEXT of the other rows is text all the same, because mysqlType says TEXT; BLOB stays binary."""
    raw = (FIXTURES_ROOT / "canal-json" / "canal-binlog-text-null-last-row.json").read_bytes()
    first, second = CANAL.decode(raw, Position("c", offset=1))
    assert first.after["c_text"] == "héllo 中文 😀" and first.after["c_longtext"] == '{"a": [1, 2.50]}'
    assert first.after["c_tinytext"] == "" and first.after["c_blob"] == base64.b64encode(b"\x00\xff\x10").decode()
    assert second.after == {"id": "2", "c_text": None, "c_longtext": None, "c_tinytext": None, "c_blob": None}
    assert [as_json(m.value) for m in CANAL.encode([first, second])] == [as_json(raw)]
    # a single-row message with a text value under -4 (and under CLOB) is text too; a varbinary under -4 is bytes
    for jdbc in (-4, 2005):
        msg = json.loads(canal_message({"id": "1", "t": "中文", "b": "\u00ff"}, {"id": "int", "t": "MEDIUMTEXT",
                                                                                "b": "varbinary(4)"}))
        msg["sqlType"] = {"id": 4, "t": jdbc, "b": -4}
        [e] = CANAL.decode(json.dumps(msg).encode(), Position("c"))
        assert e.after["t"] == "中文" and e.after["b"] == "/w=="


def test_canal_init_rows_are_snapshot_rows_and_reencode_as_init():
    raw = (FIXTURES_ROOT / "canal-json" / "flink-init-full-sync.json").read_bytes()
    events = CANAL.decode(raw, Position("c", offset=1))
    assert [e.op for e in events] == [Op.SNAPSHOT] * 9 and [e.position.index for e in events] == list(range(9))
    assert events[0].after["other"] == "val1" and events[0].before is None
    [out] = CANAL.encode(events)
    assert json.loads(out.value)["type"] == "INIT" and as_json(out.value) == as_json(raw)
    # a snapshot row from another format is written as Canal's own full sync writes it: INSERT
    foreign = events[0].with_(format="canonical", vendor={})
    assert json.loads(CANAL.encode([foreign])[0].value)["type"] == "INSERT"
