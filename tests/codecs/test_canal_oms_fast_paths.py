"""The decode fast paths of canal-json and oms-default compute the lossless-re-encode fixes without building and
diffing the derived message; they must give exactly what the definition (``generic_fixes``) gives, also for
messages that deviate from what the encoder writes (nulls, strings for numbers, extra or missing keys).

canal-json's plain path (``plain_rows``: orjson, no Event per row) must give exactly the DECODED rows ``decode``
gives, or decline (None) so that ``decode`` runs: on every mutation of every fixture and of the scenario, and on
the fuzz corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from cdc_codecs import DecodeError, Position, get_codec, jsontext
from cdc_codecs.contract import check_events
from cdc_codecs.event_schema import DECODED_ARROW
from cdc_codecs.records import to_record
from cdc_codecs.shared.plain_rows import DECODED_ROW
from cdc_codecs.scenario import scenario_events

FIXTURES = Path(__file__).parents[1] / "fixtures"
CANAL = get_codec("canal-json")
OMS = get_codec("oms-default")
# Values a producer might put in any metadata key; raw literals are spliced in as written (e.g. -0, 1.0, u64+1).
VALUES = [None, "", [], {}, "x", 0, True, False, ["id"], {"id": None}, {"id": "int"}, {"id": 4}, {"id": ""},
          1704063600000, "1704063600000", "0", "INSERT"]
LITERALS = [b"-0", b"1.0", b"1e5", b"18446744073709551616", b"4", b"-5"]


def messages(fmt: str) -> list[bytes]:
    codec = get_codec(fmt)
    raws = [p.read_bytes() for p in sorted((FIXTURES / fmt).glob("*.json")) if not p.name.startswith("malformed")]
    raws += [m.value for m in codec.encode([e for e in scenario_events() if codec.capabilities.carries(e.op)])]
    return raws


def mutations(raw: bytes) -> list[bytes]:
    msg = json.loads(jsontext.dumps(jsontext.loads(raw)[0]))  # repaired (trailing commas) plain JSON
    out = [raw]
    for key, value in msg.items():
        out.append(json.dumps({k: v for k, v in msg.items() if k != key}).encode())
        targets = [(key, None)] + [(key, k) for k in list(value)[:3]] if isinstance(value, dict) else [(key, None)]
        for top, sub in targets:
            for v in [*VALUES, "@@"]:
                m = json.loads(json.dumps(msg))
                if sub is None:
                    m[top] = v
                else:
                    m[top][sub] = v
                text = json.dumps(m).encode()
                out += [text.replace(b'"@@"', lit) for lit in LITERALS] if v == "@@" else [text]
    out.append(json.dumps({**msg, "extra": {"a": 1}}).encode())
    out.append(json.dumps(dict(reversed(list(msg.items())))).encode())
    return out


def decoded(codec, raw: bytes):
    try:
        return codec.decode(raw, Position("t", offset=1))
    except DecodeError:
        return None


@pytest.mark.parametrize("raw", messages("canal-json"), ids=lambda r: r[:40].decode(errors="replace"))
def test_canal_row_fixes_equal_the_generic_derivation(raw):
    checked = 0
    for m in mutations(raw):
        events = decoded(CANAL, m)
        if events is None or not events[0].op.is_data:
            continue
        msg = jsontext.loads(m)[0]
        assert events[0].vendor.get("fix", []) == CANAL.generic_fixes(msg, events), m
        assert all(e.vendor.get("fix") is events[0].vendor.get("fix") for e in events)
        checked += 1
    assert checked > 0 or decoded(CANAL, raw) is None or not decoded(CANAL, raw)[0].op.is_data


def test_canal_reencode_of_deviating_metadata_is_exact():
    raw = (b'{"data":[{"id":"1"}],"database":"d","es":"1700000000000","id":-0,"isDdl":false,"mysqlType":'
           b'{"id":""},"old":null,"pkNames":[],"sql":"","sqlType":{"id":"4"},"table":"t","ts":1.0,"type":"INSERT",'
           b'"x":18446744073709551616}')
    [msg] = CANAL.encode(CANAL.decode(raw, Position("t")))
    assert jsontext.normalise(jsontext.loads(msg.value)[0]) == jsontext.normalise(jsontext.loads(raw)[0])


def test_canal_declaration_cache_never_hides_a_malformed_declaration():
    good = (b'{"database":"d","table":"t","pkNames":null,"es":1,"ts":1,"id":0,"mysqlType":{"id":"5"},'
            b'"sqlType":{"id":4},"type":"INSERT","isDdl":false,"sql":"","data":[{"id":"1"}],"old":null}')
    [a] = CANAL.decode(good, Position("t"))
    [b] = CANAL.decode(good.replace(b'{"id":4}', b'{"id":"4"}'), Position("t"))
    assert a.columns == b.columns and "fix" not in a.vendor
    assert b.vendor["fix"] == [[["sqlType"], '{"id":"4"}']]  # same declaration, but a string: kept
    with pytest.raises(DecodeError) as err:
        CANAL.decode(good.replace(b'{"id":"5"}', b'{"id":5}'), Position("t", offset=3))
    assert err.value.field == "mysqlType.id" and "line 3" in str(err.value)


@pytest.mark.parametrize("fmt", ["oms-default", "oms-extend-column-type"])
def test_oms_fixes_without_rendering_images_equal_the_full_derivation(fmt):
    codec = get_codec(fmt)
    checked = 0
    for raw in messages(fmt):
        for m in mutations(raw):
            events = decoded(codec, m)
            if events is None or not events[0].op.is_data:
                continue
            msg = jsontext.loads(m)[0]
            fast = codec.generic_fixes(msg, events[0], images=False)
            assert fast == codec.generic_fixes(msg, events[0], images=True), m
            assert events[0].vendor.get("fix", []) == fast
            checked += 1
    assert checked > 20


# Where the plain-path rows say the record sat (a Kafka record with key, timestamp and a header).
AT = ("topic", 2, 41, 1_700_000_000_123, b"k", [{"key": "h", "value": b"v"}])
AT_POSITION = Position("topic", 2, 41, timestamp_ms=AT[3], key=AT[4], headers=(("h", b"v"),))


def decode_rows_exactly(raw: bytes) -> list[dict] | None:
    """The DECODED rows the exact path gives (``decode``, the record contract, ``to_record``), or None for a
    message it rejects."""
    try:
        events = CANAL.decode(raw, AT_POSITION)
        check_events(CANAL.name, events)
    except DecodeError:
        return None
    return [to_record(e) | {"dl_reason": None, "dl_field": None, "dl_raw": None, "first_of_record": i == 0}
            for i, e in enumerate(events)]


def plain_path_agrees(raw: bytes) -> bool:
    """Whether the plain path took ``raw``; fails the test when it took it and differs from ``decode``."""
    rows = CANAL.plain_rows(raw, AT)
    if rows is None:
        return False
    expected = decode_rows_exactly(raw)
    assert expected is not None, f"the plain path accepted a message decode rejects: {raw[:300]!r}"
    got = pa.Table.from_pylist([dict(zip(DECODED_ROW, r)) for r in rows], schema=DECODED_ARROW)
    assert got.equals(pa.Table.from_pylist(expected, schema=DECODED_ARROW)), raw[:300]
    return True


# MySQL's internal geometry value as Alibaba Canal writes it (ISO-8859-1 text): SRID 4326, then a WKB point.
GEOMETRY_4326 = ((4326).to_bytes(4, "little") + b"\x01\x01\x00\x00\x00" + bytes(range(16))).decode("latin-1")


def alibaba_variants(raw: bytes) -> list[bytes]:
    """Mutations, and the same with every cell a string (the Alibaba dialect the plain path reads) and with
    binary/timestamp declarations, batch ids, multi-row data and old rows naming unknown columns."""
    out = []
    for n, m in enumerate(mutations(raw)):
        out.append(m)
        try:
            msg = json.loads(m)
        except ValueError:
            continue
        if not isinstance(msg, dict) or not isinstance(msg.get("data"), list):
            continue
        text = {k: [{c: None if v is None else str(v) for c, v in r.items()} if isinstance(r, dict) else r
                    for r in msg[k]] if isinstance(msg.get(k), list) else msg.get(k) for k in ("data", "old")}
        plain = {**msg, **{k: v for k, v in text.items() if k in msg}}
        out.append(json.dumps(plain).encode())
        out.append(json.dumps({**plain, "id": 7, "ts": 1}).encode())
        rows = plain["data"]
        if n > 0 or not (rows and isinstance(rows[0], dict) and rows[0]
                         and isinstance(plain.get("mysqlType") or {}, dict)):
            continue  # the variants below of the unmutated message only (test time)
        col = next(iter(rows[0]))
        for type_name in ("varbinary(8)", "bit(3)", "timestamp(3)", "geometry"):
            decl = {**plain, "id": 1, "mysqlType": {**(plain.get("mysqlType") or {}), col: type_name}}
            for value in ("\u00ff\u0001", "5", "2024-02-29 23:59:59.125", "\u0100", None, GEOMETRY_4326):
                d = json.loads(json.dumps(decl))
                d["data"][0][col] = value
                out.append(json.dumps(d).encode())
        out.append(json.dumps({**plain, "data": rows * 3, "old": ([{"zz": "1"}] * 3
                                                                  if plain.get("type") == "UPDATE" else None)}
                              ).encode())
    return out


@pytest.mark.parametrize("raw", messages("canal-json"), ids=lambda r: r[:40].decode(errors="replace"))
def test_canal_plain_rows_equal_decode(raw):
    taken = sum(plain_path_agrees(m) for m in alibaba_variants(raw))
    # Every seed has variants in the plain shape (at least the all-strings copy of a row message).
    assert taken > 0 or not (decode_rows_exactly(raw) or [{}])[0].get("op") in ("INSERT", "UPDATE", "DELETE")


def test_canal_plain_rows_decline_what_orjson_cannot_read_exactly():
    plain = (b'{"database":"d","table":"t","pkNames":["id"],"es":5,"ts":5,"id":0,"mysqlType":{"id":"int"},'
             b'"sqlType":{"id":4},"type":"INSERT","isDdl":false,"sql":"","data":[{"id":"1"}],"old":null}')
    assert plain_path_agrees(plain)
    for literal in (b"-0", b"5.0", b"5e0", b"18446744073709551616", b"NaN"):
        for key in (b'"es":5', b'"ts":5', b'"id":0', b'"id":4'):
            variant = plain.replace(key, key[:-1] + literal, 1)
            assert CANAL.plain_rows(variant, AT) is None, variant  # decode keeps (or names) the literal
    assert CANAL.plain_rows(plain.replace(b'"old":null', b'"old":null,'), AT) is None  # trailing comma
    assert CANAL.plain_rows(plain.replace(b'"1"}]', b'1}]'), AT) is None  # OMS dialect: bare number cells
    assert CANAL.plain_rows(plain.replace(b'"table":"t"', b'"table":"t\u0001"'), AT) is None  # no identifier


def test_canal_plain_rows_on_the_fuzz_corpus():
    from tests.codecs.fuzz import corpus

    taken = sum(plain_path_agrees(f.raw) for f in corpus("canal-json", 400, ten_mb_line=False))
    assert taken > 0
