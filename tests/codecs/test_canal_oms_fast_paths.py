"""The decode fast paths of canal-json and oms-default compute the lossless-re-encode fixes without building and
diffing the derived message; they must give exactly what the definition (``generic_fixes``) gives, also for
messages that deviate from what the encoder writes (nulls, strings for numbers, extra or missing keys)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_codecs import DecodeError, Position, get_codec, jsontext
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
    raw = (b'{"data":[{"id":"1"}],"database":null,"es":"1700000000000","id":-0,"isDdl":false,"mysqlType":'
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
