"""debezium-json: the CloudCanal Debezium examples, typed values under a Kafka Connect schema, every payload kind,
malformed input and the canonical scenario round trip."""

from __future__ import annotations

import base64
from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, EncodeError, Op, Position, get_codec, jsontext
from cdc_codecs.scenario import scenario_events
from golden import as_json, fixtures  # beside this file

FIXTURES = fixtures("debezium-json")
CODEC = get_codec("debezium-json")


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(name: str, offset: int = 3, key: bytes | None = None):
    return CODEC.decode(raw(name), Position(source=name, partition=0, offset=offset, key=key))


def test_cloudcanal_insert_op_i_with_schema():
    [e] = decode("cloudcanal-dml-insert.json")
    assert e.op is Op.INSERT and e.vendor["envelope"] == "schema"
    assert (e.database, e.table, e.schema) == ("db_test", "table_test", None)
    assert e.before is None  # CloudCanal's "before": {} on an insert is "no before image"
    assert e.after == {"col1": "11", "col2": "11", "col_pk": "11"}
    assert e.sequence == (Decimal(3), Decimal(154), Decimal(0), Decimal(1669796261933))  # mysql-bin.000003, pos 154, no row -> 0, ts_ms
    assert e.event_time_ms == 1669796261933
    assert [(c.name, c.type_name, c.jdbc_type) for c in e.columns] == [
        ("col1", "string", 12), ("col2", "string", 12), ("col_pk", "string", 12)]
    body = jsontext.loads(CODEC.encode([e])[0].value)[0]
    assert body["payload"]["op"] == "i" and body["payload"]["before"] == {}


def test_cloudcanal_schema_change_is_ddl():
    [e] = decode("cloudcanal-ddl-alter.json")
    assert e.op is Op.DDL and e.ddl == "alter table table_test add col2 varchar(22) null"
    assert (e.database, e.table) == ("db_test", "table_test")
    assert e.vendor["envelope"] == "payload"
    fixes = {tuple(p): v for p, v in e.vendor["fix"]}
    assert jsontext.loads(fixes[("tableChanges",)])[0]["table"]["primaryKeyColumnNames"] == ["col_pk"]


def test_typed_values_converted_exactly():
    [e] = decode("synthetic-mysql-update-typed.json", key=b'{"id":1001}')
    assert e.op is Op.UPDATE and e.primary_key == ("id",)
    assert e.sequence == (Decimal(3), Decimal(154), Decimal(2), Decimal(1606233662000))
    assert e.event_time_ms == 1606233662000
    b, a = e.before, e.after
    assert b["price"] == "12345.67" and a["price"] == "-0.99"  # base64 unscaled + scale 2
    assert b["delta"] == "-0.001" and b["vnum"] == "31.415"
    assert b["created"] == "2020-11-25 00:01:02.123"  # io.debezium.time.Timestamp, ms
    assert b["updated"] == "2020-11-25 00:01:02.123456" and a["updated"] is None  # MicroTimestamp
    assert b["birthday"] == "2020-11-25"  # days since epoch
    assert b["dur"] == "-838:59:59" and a["dur"] == "00:01:02.123456"  # MicroTime, MySQL TIME range
    assert b["seen_at"] == "2020-11-24 16:01:02.5 +00:00" and a["seen_at"] == "2020-11-24 16:01:02 +08:00"
    assert (b["active"], a["active"]) == ("true", "false")
    assert b["data"] == "AP8Q/w==" and b["flags"] == "5"
    assert b["big"] == "9223372036854775807" and b["dbl"] == "1.5E-300" and b["yr"] == "2020"
    assert b["name"] == "héllo"
    # io.debezium.data.geometry.Point: the WKB (x=1, y=2), which also gives back x and y on re-encode
    assert base64.b64decode(b["geo"]) == bytes.fromhex("0101000000000000000000f03f0000000000000040")
    cols = {c.name: c for c in e.columns}
    assert (cols["price"].type_name, cols["price"].jdbc_type, cols["price"].number) == ("decimal(10,2)", 3, False)
    assert (cols["created"].jdbc_type, cols["birthday"].jdbc_type, cols["seen_at"].jdbc_type) == (93, 91, 2014)
    assert cols["name"].type_name == "VARCHAR"  # the propagated source column type wins
    assert cols["big"].number and not cols["created"].number  # converted values are not number literals
    # re-encode keeps the Kafka key and converts back to the same base64 / epoch numbers
    [msg] = CODEC.encode([e])
    assert msg.key == b'{"id":1001}'
    after = jsontext.loads(msg.value)[0]["payload"]["after"]
    assert after["price"] == base64.b64encode((-99).to_bytes(1, "big", signed=True)).decode()
    assert after["dur"] == "62123456"


def test_unusual_spelling_kept_raw_for_lossless_reencode():
    body = jsontext.loads(raw("synthetic-mysql-update-typed.json"))[0]
    body["payload"]["after"]["seen_at"] = "2020-11-24T16:01:02+00:00"  # Debezium itself would write Z
    body["payload"]["after"]["price"] = jsontext.JsonNumber("1.50")  # decimal.format=NUMERIC
    text = jsontext.dumps(body)
    [e] = CODEC.decode(text, Position("x"))
    assert e.after["seen_at"] == "2020-11-24T16:01:02+00:00" and e.after["price"] == "1.50"
    assert as_json(CODEC.encode([e])[0].value) == as_json(text)


def test_postgres_delete_bare_payload():
    [e] = decode("synthetic-postgres-delete-bare.json")
    assert e.op is Op.DELETE and e.after is None and e.vendor["envelope"] == "bare"
    assert e.qualified_table == "appdb.public.users"
    assert e.before == {"id": "7", "name": "gone", "price": "12.50", "tags": '["a","b"]'}
    # PostgreSQL orders by sequence = [lastCommitLsn, lsn], then ts_ms
    assert e.sequence == (Decimal(24023128), Decimal(24023184), Decimal(1700000001000)) and e.transaction_id == "555"
    assert e.column("id").number and not e.column("price").number
    assert e.primary_key == ()  # no Kafka key given


def test_snapshot_truncate_message_transaction_heartbeat():
    [r] = decode("synthetic-postgres-snapshot-read.json")
    assert r.op is Op.SNAPSHOT and r.after["flag"] == "true" and r.vendor["render"] == {"after": {"flag": "bool"}}
    [t] = decode("synthetic-postgres-truncate.json")
    assert t.op is Op.TRUNCATE and t.table == "users" and t.before is None
    [m] = decode("synthetic-postgres-message.json")
    assert m.op is Op.HEARTBEAT and m.table is None and m.sequence == (Decimal(0), Decimal(24023400), Decimal(1700000003000))
    assert jsontext.loads(CODEC.encode([m])[0].value)[0]["op"] == "m"
    [begin] = decode("synthetic-transaction-begin.json")
    [end] = decode("synthetic-transaction-end.json")
    assert (begin.op, begin.transaction_id) == (Op.BEGIN, "571:53195829")
    assert (end.op, end.transaction_id, end.event_time_ms) == (Op.COMMIT, "571:53195829", 1700000004100)
    [hb] = decode("synthetic-heartbeat.json")
    assert hb.op is Op.HEARTBEAT and hb.event_time_ms == 1700000005000


def test_tombstones_carry_no_event():
    assert CODEC.decode(b"", Position("t")) == []
    assert CODEC.decode(b'{"schema":null,"payload":null}', Position("t")) == []


@pytest.mark.parametrize("name, field", [
    ("malformed-unknown-op.json", "payload.op"),
    ("malformed-schema-placeholder.json", "$"),  # the document's "schema":... is not JSON
])
def test_malformed_names_format_field_and_position(name, field):
    with pytest.raises(DecodeError) as info:
        decode(name, offset=99)
    err = info.value
    assert (err.vendor, err.field, err.position.offset, err.position.partition) == ("debezium-json", field, 99, 0)


def test_malformed_position_and_payload():
    bad_file = b'{"op":"c","after":{"a":1},"source":{"file":"binlog","pos":4}}'
    with pytest.raises(DecodeError) as info:
        CODEC.decode(bad_file, Position("x"))
    assert info.value.field == "payload.source.file"
    with pytest.raises(DecodeError) as info:
        CODEC.decode(b'{"payload":[1]}', Position("x"))
    assert info.value.field == "payload"


def test_primary_key_change_is_two_events():
    """Debezium writes a key change as a delete of the old key and a create of the new one."""
    delete = b'{"before":{"id":1,"v":"a"},"after":null,"source":{"db":"d","table":"t","file":"b.000001","pos":9,"row":0},"op":"d"}'
    create = b'{"before":null,"after":{"id":2,"v":"a"},"source":{"db":"d","table":"t","file":"b.000001","pos":9,"row":1},"op":"c"}'
    [d] = CODEC.decode(delete, Position("k", offset=0, key=b'{"id":1}'))
    [c] = CODEC.decode(create, Position("k", offset=1, key=b'{"id":2}'))
    assert (d.op, d.before["id"], d.primary_key) == (Op.DELETE, "1", ("id",))
    assert (c.op, c.after["id"], c.primary_key) == (Op.INSERT, "2", ("id",))
    assert d.sequence < c.sequence


def test_scenario_round_trip_payload_only():
    source = scenario_events()
    messages = CODEC.encode(source)
    assert len(messages) == len(source)
    back = [e for i, m in enumerate(messages) for e in CODEC.decode(m.value, Position("re", offset=i, key=m.key))]
    assert len(back) == len(source)
    for want, got in zip(source, back):
        assert got.op is want.op
        assert got.event_time_ms == want.event_time_ms
        assert got.transaction_id == want.transaction_id
        assert got.sequence == ()  # a foreign sequence is not a Debezium position (declared)
        if want.op not in (Op.HEARTBEAT, Op.BEGIN, Op.COMMIT):
            assert (got.database, got.table) == (want.database, want.table)
        if want.op.is_data:
            assert got.before == want.before and got.after == want.after
            assert got.primary_key == want.primary_key  # through the JSON record key
    assert back[-1].ddl == source[-1].ddl
    # foreign rows are written as a connector writes them: with the schema part (Connect types per the
    # connector type mapping, the source type in __debezium.source.column.type), so a consumer reads types
    first = jsontext.loads(messages[0].value)[0]
    assert set(first) == {"schema", "payload"} and first["payload"]["op"] == "r"
    fields = {f["field"]: f for f in first["schema"]["fields"][1]["fields"]}
    assert fields["c_decimal"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields["c_ubigint"]["parameters"]["__debezium.source.column.type"].lower().startswith("bigint")
    cols = {c.name: c for c in back[0].columns}
    assert cols["c_decimal"].type_name == source[0].column("c_decimal").type_name  # declared type survives


def test_fragments_are_refused():
    e = decode("synthetic-postgres-delete-bare.json")[0].with_(fragment_key="k", fragment_total=2)
    with pytest.raises(EncodeError):
        CODEC.encode([e])


# --- connector-documented messages (see NOTES.md: each is a connector reference page's example) -------------


def test_connector_positions_from_each_connectors_source_block():
    seq = {name: decode(name).pop().sequence for name in (
        "connector-mysql-update.json", "connector-mysql-snapshot-empty-file.json",
        "connector-postgres-update-default-identity.json", "connector-sqlserver-create.json",
        "connector-oracle-update.json", "connector-db2-create.json")}
    D = Decimal
    assert seq["connector-mysql-update.json"] == (D(3), D(484), D(0), D(1465581029100))
    assert seq["connector-mysql-snapshot-empty-file.json"] == (D(0), D(0), D(0), D(0))  # Flink CDC: file "", pos 0
    assert seq["connector-postgres-update-default-identity.json"] == (D(24023119), D(24023128), D(1559033904863))
    assert seq["connector-sqlserver-create.json"] == (D(0x000000270000075800_05), D(0x000000270000075800_03), D(1),
                                                       D(1559729468470))
    assert seq["connector-oracle-update.json"] == (D(2122185), D(2122184), D(1520085811000))
    assert seq["connector-db2-create.json"][:2] == (D(0x000000000000150F0000000000048FCA), D(0xA1F))


def test_connector_postgres_default_replica_identity():
    [u] = decode("connector-postgres-update-default-identity.json", key=b'{"id":1}')
    assert u.op is Op.UPDATE and u.before is None and u.after["first_name"] == "Anne Marie"
    [d] = decode("connector-postgres-delete-key-only.json", key=b'{"id":1}')
    assert d.op is Op.DELETE and d.before["id"] == "1" and d.primary_key == ("id",)
    with pytest.raises(DecodeError) as info:
        decode("malformed-postgres-delete-replica-identity-nothing.json")
    assert info.value.field == "payload.before" and "REPLICA IDENTITY FULL" in info.value.reason


def test_connector_postgres_typed_schema_values_exact():
    [e] = decode("connector-postgres-typed-schema.json", key=b'{"id":7}')
    a = e.after
    assert a["n"] == "123456789012345678901234567890.123456789012345678901234567890123"  # VariableScaleDecimal
    assert a["d"] == "-12345678.90" and e.column("d").type_name == "decimal(10,2)"
    assert a["bt"] == str(0b100000000001) and base64.b64decode(a["by"]) == b"\x00\xff\x80"
    assert (a["tm"], a["dte"], a["ts"]) == ("23:59:59.999999", "2024-02-29", "2024-02-29 12:34:56.789012")
    assert a["tz"] == "2020-06-01 04:00:00.5 +00:00"
    assert a["jb"] == '{"a": 1, "b": [2.50]}' and a["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert base64.b64decode(a["pt"])[5:] == bytes.fromhex("000000000000f83f00000000000000c0")  # x=1.5, y=-2
    assert a["bo"] == "true"


MONGO_KEY = b'{"id":"{\\"$numberLong\\": \\"1004\\"}"}'


def test_connector_mongodb_document_strings_collection_and_key():
    [c] = decode("connector-mongodb-create.json", key=MONGO_KEY)
    assert c.qualified_table == "inventory.customers" and c.primary_key == ("_id",)
    assert c.after == {"_id": '{"$numberLong":"1004"}', "first_name": "Anne", "last_name": "Kretchmar",
                       "email": "annek@noanswer.org"}
    assert c.sequence[:2] == (Decimal(1558965508000), Decimal(31))  # oplog time, then ord
    [d] = decode("connector-mongodb-delete.json", key=MONGO_KEY)
    assert d.op is Op.DELETE and d.before == {"_id": '{"$numberLong":"1004"}'} and d.primary_key == ("_id",)
    # a changed document is written as a document string again
    changed = c.with_(after={**c.after, "first_name": "Anne Marie"})
    out = jsontext.loads(CODEC.encode([changed])[0].value)[0]
    assert isinstance(out["after"], str) and jsontext.loads(out["after"])[0]["first_name"] == "Anne Marie"


def test_each_message_is_read_by_its_own_schema_when_a_table_s_schema_changes():
    """The schema part is read once per distinct schema (a connector repeats it in every message of a table); a
    table whose column changes type mid-stream, and a message whose schema is broken, still decode by their own."""
    def message(balance_field: dict, value) -> bytes:
        fields = [{"type": "int64", "optional": False, "field": "id"}, {"optional": True, "field": "balance",
                                                                         **balance_field}]
        row = {"type": "struct", "optional": True, "name": "shop.t.Value", "fields": fields}
        schema = {"type": "struct", "name": "shop.t.Envelope", "optional": False,
                  "fields": [{**row, "field": "before"}, {**row, "field": "after"}]}
        payload = {"before": None, "after": {"id": 1, "balance": value},
                   "source": {"db": "shop", "table": "t", "ts_ms": 1700000000000}, "op": "c", "ts_ms": 1700000000000}
        return jsontext.dumps({"schema": schema, "payload": payload})

    decimal = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    as_decimal = message(decimal, base64.b64encode((12345).to_bytes(2, "big")).decode())
    as_text = message({"type": "string"}, "MDk=")
    broken = message({"type": "string", "parameters": {"scale": 2}}, "MDk=")
    for offset, raw in enumerate([as_decimal, as_text, as_decimal, broken, as_text] * 2):
        pos = Position(source="s", partition=0, offset=offset)
        if raw is broken:
            with pytest.raises(DecodeError, match="schema.fields.1.fields.1.parameters.scale|parameters.scale"):
                CODEC.decode(raw, pos)
            continue
        [e] = CODEC.decode(raw, pos)
        assert e.after["balance"] == ("123.45" if raw is as_decimal else "MDk=")
        assert CODEC.encode([e])[0].value == raw  # re-encoded with the schema it came with


def _outcome(convert, value, field, kind):
    try:
        return convert(value, field, kind)
    except Exception as exc:  # noqa: BLE001 - the same failure both ways is the same outcome
        return type(exc)


def test_quick_conversions_give_what_converting_there_and_back_gives():
    """``_cell`` takes the commonest kinds (decimals, dates, times, timestamps) the quick way when the value is in
    the one spelling its conversion back writes; any value must decode exactly as converting it there and back
    (``_converted_cell``) does: canonical and odd literals, values outside the calendar, non-minimal and
    non-canonical base64, text that is base64 by chance, scales of every kind."""
    import random

    from cdc_codecs.debezium.debezium_json import _cell, _converted_cell
    from cdc_codecs.jsontext import JsonNumber

    rng = random.Random(37)
    ints = [0, 1, -1, 59, 86_399_999, -86_400_000, 10 ** 12, -(10 ** 12), 253_402_300_799_999_999, 10 ** 20,
            -(10 ** 20)] + [rng.randrange(-(10 ** rng.randrange(1, 19)), 10 ** rng.randrange(1, 19)) for _ in range(300)]
    literals = [JsonNumber(str(n)) for n in ints] + [JsonNumber(t) for t in ("007", "-0", "1.0", "1e3", "-00", "+1")]
    literals += ["123", "2024-01-01", True, [1], {"a": 1}, JsonNumber("9" * 5000)]  # more digits than int() reads
    for kind in ("date", "time3", "time6", "time9", "ts3", "ts6", "ts9"):
        for value in literals:
            assert _outcome(_cell, value, {}, kind) == _outcome(_converted_cell, value, {}, kind), (kind, value)

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    decimals = []
    for n in ints:
        minimal = n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)
        decimals += [b64(minimal), b64((b"\xff" if n < 0 else b"\x00") + minimal)]  # minimal, and one byte longer
    decimals += ["", "AB==", "AA==", "AQ", "A Q==", "@@@@", JsonNumber("1234"), "1234", None, ["AQ=="]]
    huge = 7 ** 6000  # 5,071 digits: more than Python writes (fuzz sweep seeds 9, 13, 47, 50 crashed on it)
    decimals.append(b64(huge.to_bytes(huge.bit_length() // 8 + 1, "big", signed=True)))
    for scale in ("2", "0", "-3", "30", JsonNumber("4"), 2, None, "x", {"s": 1}):
        field = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                 "parameters": {} if scale is None else {"scale": scale}}
        for value in decimals:
            if value is None:
                continue
            assert _outcome(_cell, value, field, "decimal") == _outcome(_converted_cell, value, field, "decimal"), \
                (scale, value)


def _enveloped_messages() -> list[str]:
    """Every fixture and scenario message that carries a Connect schema, as JsonConverter spells it (compact,
    schema first)."""
    from cdc_codecs.debezium.debezium_json import DebeziumJsonCodec

    texts = []
    for path in sorted(FIXTURES.glob("*.json")):
        try:
            msg = jsontext.loads(path.read_bytes())[0]
        except ValueError:
            continue
        if isinstance(msg, dict) and isinstance(msg.get("schema"), dict) and "payload" in msg:
            texts.append(jsontext.dumps({"schema": msg["schema"], "payload": msg["payload"],
                                         **{k: v for k, v in msg.items() if k not in ("schema", "payload")}}))
    texts += [m.value for m in DebeziumJsonCodec().encode(scenario_events())]
    return [t.decode() for t in texts if t.startswith(b'{"schema":{')]


def _decoded(codec, text: str, offset: int):
    try:
        return codec.decode(text.encode(), Position(source="s", partition=0, offset=offset))
    except DecodeError as exc:
        return str(exc)


def test_messages_opening_with_a_known_schema_decode_as_when_parsed_whole():
    """A message whose schema text was seen before has only its payload parsed (``schema_prefix``): every such
    message, and every way one can differ after a known schema (keys after the payload, trailing commas, a broken
    or missing end, a lone surrogate, a duplicated schema key, deep nesting, a tombstone), decodes to exactly what
    a codec that never saw the schema gives."""
    from cdc_codecs.debezium.debezium_json import DebeziumJsonCodec

    messages = _enveloped_messages()
    assert len(messages) >= 10
    for n, text in enumerate(messages):
        opening, payload = text[:-1].split(',"payload":', 1)  # the schema part and the payload, as written
        variants = [
            text, text + " \n", text[:-1] + ',"extra":{"a":1}}', text[:-1] + ",}", text[:-1], text[:-1] + "1",
            opening + ',"payload":' + payload[:-1] + ",}}",  # a trailing comma inside the payload (repaired)
            opening + ',"payload":' + payload[:-2] + "}",  # the payload broken
            opening + ',"payload":null}',  # JsonConverter's tombstone
            opening + ',"payload":' + payload + ',"schema":{"type":"string"}}',
            opening + ',"payload":' + payload[:-1] + ',"x":"\\ud800"}}',
            opening + ',"payload":' + payload[:-1] + ',"x":' + "[" * 130 + "]" * 130 + "}}",
            opening + ',"payload":' + payload[:-1] + ',"x":' + "[" * 253 + "]" * 253 + "}}",
        ]
        expected = _decoded(DebeziumJsonCodec(), text, 0)
        primed = DebeziumJsonCodec()
        _decoded(primed, text, 0)
        assert primed.schema_prefixes.parse(text) is not None, "the schema was not remembered"
        for i, variant in enumerate(variants):
            whole = _decoded(DebeziumJsonCodec(), variant, i)
            assert _decoded(primed, variant, i) == whole, f"message {n}, variant {i}: {variant[-120:]}"
            if isinstance(whole, list) and whole:
                assert primed.encode(whole)[0].value == DebeziumJsonCodec().encode(whole)[0].value
            first_seen = DebeziumJsonCodec()  # the variant is the first message with this schema
            _decoded(first_seen, variant, i)
            assert _decoded(first_seen, text, 0) == expected, f"message {n} after variant {i}"


def test_a_null_schema_in_the_envelope_is_kept():
    """JsonConverter writes ``"schema":null`` for a record without a value schema; the message decodes without
    types and re-encodes as received (the encoder crashed on it: fuzz sweep seed 4, "null of schema")."""
    text = (b'{"schema":null,"payload":{"before":null,"after":{"id":1,"v":"x"},"source":{"db":"shop","table":"t",'
            b'"ts_ms":1700000000000},"op":"c","ts_ms":1700000000000}}')
    [e] = CODEC.decode(text, Position(source="s", partition=0, offset=1))
    assert e.after == {"id": "1", "v": "x"} and e.vendor["envelope"] == "schema"
    assert CODEC.encode([e])[0].value == text


def test_cells_kept_as_written_are_listed_in_cell_order_and_re_encode_exactly():
    """A value its field's kind does not fit (a bare number in a Decimal field) and a column without a field whose
    images write it both ways are kept as written, listed in ``render`` in each image's cell order; the columns
    that fit their fields are not listed. The re-encode gives back the message."""
    schema = {"type": "struct", "optional": False, "name": "db.t.Envelope", "fields": [
        {"type": "struct", "optional": True, "name": "db.t.Value", "field": part, "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "bytes", "optional": True, "field": "amount", "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2"}}]} for part in ("before", "after")]}
    message = ('{"schema":' + jsontext.dumps(schema).decode() + ',"payload":{'
               '"before":{"id":1,"extra":"7","amount":"AQ=="},"after":{"extra":7,"amount":12.5,"id":1},'
               '"source":{"db":"db","table":"t","ts_ms":1700000000000},"op":"u","ts_ms":1700000000001}}').encode()
    [e] = CODEC.decode(message, Position(source="m", partition=0, offset=0))
    assert e.before == {"id": "1", "extra": "7", "amount": "0.01"} and e.after == {"extra": "7", "amount": "12.5", "id": "1"}
    assert e.vendor["render"] == {"before": {"extra": "str"}, "after": {"amount": "num"}}
    assert [(c.name, c.number) for c in e.columns] == [("id", True), ("amount", True), ("extra", True)]
    assert CODEC.encode([e])[0].value == message


@pytest.mark.parametrize("key, primary_key", [
    (b'{"id":7}', ("id",)),
    (b'{"schema":{"type":"struct","fields":[]},"payload":{"a":1,"b":"x"}}', ("a", "b")),
    (b'{"a":1,"b":2,}', ("a", "b")),  # a trailing comma, repaired as in values
    (b'{"id":NaN}', ("id",)),
    (b'{"id":123456789012345678901234567890}', ("id",)),
    (b'{"id":[' + b"[" * 300 + b"]" * 300 + b"]}", ()),  # nested deeper than any value may be
    (b"order-7", ()),  # a custom partitioner's key
    (b"null", ()),
])
def test_the_primary_key_is_the_record_keys_names(key, primary_key):
    [e] = decode("connector-mysql-update.json", key=key)
    assert e.primary_key == primary_key
