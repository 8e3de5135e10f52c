"""The event record's value ranges (``cdc_codecs.contract``) and the JSON/Avro readers' refusals of input that
parses but is not usable: what used to crash a whole replay now names vendor, field and position."""

from __future__ import annotations

import copy
import json
from decimal import Decimal

import pytest

from cdc_codecs import DecodeError, Op, Position, get_codec, jsontext
from cdc_codecs.shared.avro_ints import int_checker, may_hold_wide_int
from cdc_codecs.contract import check_event, check_events
from cdc_codecs.event import Event
from golden import fixtures  # beside this file

POS = Position(source="archive.jsonl", partition=-1, offset=42)


def event(**kw) -> Event:
    return Event(format="canal-json", op=Op.INSERT, **{"database": "d", "table": "t", "position": POS, **kw})


@pytest.mark.parametrize("changes,field", [
    ({"event_time_ms": 2**63}, "event_time_ms"),
    ({"event_time_ms": -(2**63) - 1}, "event_time_ms"),
    ({"event_time_ms": "1700000000000"}, "event_time_ms"),
    ({"fragment_index": 2**31}, "fragment_index"),
    ({"fragment_total": 2**40}, "fragment_total"),
    ({"sequence": (Decimal(10) ** 38,)}, "sequence[0]"),
    ({"sequence": (Decimal(1), Decimal("1.5"))}, "sequence[1]"),
    ({"sequence": (Decimal("1E+400"),)}, "sequence[0]"),
    ({"sequence": (Decimal("NaN"),)}, "sequence[0]"),
    ({"position": Position("archive.jsonl", -1, 42, index=2**31)}, "position.index"),
    ({"table": "orders\x00"}, "table"),
    ({"database": "shop\nx"}, "database"),
    ({"schema": "s" * 300}, "schema"),
    ({"table": b"orders"}, "table"),
    # names merge cannot make a state directory of (a ':' failed the whole merge: Hadoop reads it as a scheme)
    ({"table": "{'value': 'customers'}"}, "table"),
    ({"database": "a/b"}, "database"),
    # a data event belongs to a table
    ({"table": None}, "table"),
    ({"table": ""}, "table"),
])
def test_values_that_do_not_fit_the_event_record_are_decode_errors(changes, field):
    with pytest.raises(DecodeError) as exc:
        check_event("canal-json", event(**changes))
    assert exc.value.vendor == "canal-json" and exc.value.field == field
    assert "archive.jsonl line 42" in str(exc.value)


def test_edge_values_that_fit_pass():
    check_events("canal-json", [event(event_time_ms=2**63 - 1, sequence=(Decimal("9" * 38), Decimal(-5))),
                                event(event_time_ms=None, fragment_index=2**31 - 1)])


def test_canal_event_time_beyond_int64_is_rejected_by_the_contract():
    """The crash of issue 14: a Canal `es` that parses as an integer but does not fit the int64 column."""
    msg, _ = jsontext.loads((fixtures("canal-json") / "oms-insert.json").read_bytes())
    msg["es"] = jsontext.JsonNumber(str(10**30))
    events = get_codec("canal-json").decode(jsontext.dumps(msg), POS)
    with pytest.raises(DecodeError) as exc:
        check_events("canal-json", events)
    assert exc.value.field == "event_time_ms" and "does not fit" in exc.value.reason


@pytest.mark.parametrize("text,ok", [
    ('{"a": "\\ud83d\\ude00"}', True),  # a surrogate pair is one character
    ('{"a": "x\\ud800"}', False),
    ('{"a": "\\udfff"}', False),
    ('{"\\uDC00": 1}', False),
    ("[" * 200 + "]" * 200, True),
    ("[" * 300 + "]" * 300, False),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, False),  # beyond Python's recursion limit
])
def test_json_that_is_not_usable_text_is_not_json(text, ok):
    if ok:
        jsontext.loads(text)
    else:
        with pytest.raises(json.JSONDecodeError):
            jsontext.loads(text)


def test_lone_surrogate_in_a_message_is_a_positioned_decode_error():
    raw = b'{"database":"shop\\ud800","table":"t","type":"INSERT","data":[{"id":"1"}],"es":1,"ts":1}'
    with pytest.raises(DecodeError) as exc:
        get_codec("canal-json").decode(raw, POS)
    assert exc.value.field == "$" and "surrogate" in str(exc.value) and "line 42" in str(exc.value)


def test_avro_int_beyond_32_bits_is_a_decode_error():
    from cdc_codecs.dts.dts_avro import RECORD15

    check = int_checker(RECORD15)
    datum = {"version": 1, "fields": [{"name": "a", "dataTypeNumber": 3}, {"name": "b", "dataTypeNumber": 2**40}]}
    assert check(datum) == f"fields[1].dataTypeNumber = {2**40}"
    ok = copy.deepcopy(datum)
    ok["fields"][1]["dataTypeNumber"] = 2**31 - 1
    assert check(ok) is None
    # an int field of a record inside an image's union is named with its place too
    item = ("com.alibaba.dts.formats.avro.Integer", {"precision": -(2**31) - 1, "value": "7"})
    assert check(dict(ok, afterImages=[None, item])) == f"afterImages[1].precision = {-(2**31) - 1}"
    assert check(dict(ok, afterImages=[None, (item[0], {"precision": -(2**31), "value": "7"})])) is None
    # through the codec: a long varint where the int `version` is (first field of the record)
    from fuzz import seed_messages

    name, raw = next((n, r) for n, r in seed_messages("dts-avro") if n == "begin.datum.json")
    bad = b"\x80\x80\x80\x80\x80\x01" + raw[1:]  # varint 2**35 instead of version 1 (one byte: 0x02)
    assert raw[0] == 0x02
    with pytest.raises(DecodeError) as exc:
        get_codec("dts-avro").decode(bad, POS)
    assert "version" in str(exc.value) and "32 bits" in str(exc.value) and exc.value.vendor == "dts-avro"


def test_bytes_without_a_wide_varint_cannot_hold_an_int_beyond_32_bits():
    """The look at a record's bytes that spares the walk of its datum: a varint reads beyond 32 bits exactly when
    it has the run it looks for, so no such int passes unchecked, and ints that fit (most) are spared the walk."""
    import random

    from fuzz import oms_with_version, seed_messages, varint

    rng = random.Random(7)
    edges = [0, 1, -1, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**32, 2**35, 2**63 - 1, -(2**63)]
    for v in edges + [rng.randrange(-(2**63), 2**63) >> rng.randrange(64) for _ in range(20_000)]:
        wide = not -(2**31) <= v <= 2**31 - 1
        assert may_hold_wide_int(varint(v)) is wide, v
        assert may_hold_wide_int(b"\x00" + varint(v) + b"\x02\x00") is wide, v  # inside a record's bytes
    # with the bytes it was read from, the codec still names such an int
    name, raw = next((n, r) for n, r in seed_messages("oms-avro") if may_hold_wide_int(r) is False)
    assert get_codec("oms-avro").decode(raw, POS)
    bad = oms_with_version(raw, 2**33)
    with pytest.raises(DecodeError, match="32 bits"):
        get_codec("oms-avro").decode(bad, POS)


def test_a_debezium_name_that_is_not_text_is_named():
    """Found by the structure-aware fuzzer: source.table nested in an object became the table name
    "{'value': 'customers'}" and failed the merge."""
    msg = {"op": "c", "after": {"id": 1}, "source": {"db": "d", "table": {"value": "customers"}}, "ts_ms": 1}
    with pytest.raises(DecodeError) as exc:
        get_codec("debezium-json").decode(json.dumps(msg).encode(), POS)
    assert exc.value.field == "payload.source.table"


def test_a_declared_type_that_is_not_text_is_named():
    """Found by the codec fuzz sweep (seed 2): a Debezium schema parameter __debezium.source.column.type nested in
    an array became a column's declared type, and the event could not be stored."""
    from cdc_codecs.event import Column

    with pytest.raises(DecodeError) as exc:
        check_event("debezium-json", event(columns=(Column("c_text", ["text"], 12),)))
    assert exc.value.field == "columns.c_text.type_name"
