"""Required fields (``Codec.required``, ``codecs/shared/required.py``): a message missing a field its kind always
carries, or carrying it with another JSON type, is a dead letter naming vendor, field and position; every data
event names its table; and nothing the codecs write themselves trips the declaration."""

from __future__ import annotations

import copy

import pytest

from cdc_codecs import DecodeError, Position, available_formats, get_codec, jsontext
from cdc_codecs.contract import check_events
from cdc_codecs.scenario import scenario_events
from cdc_codecs.shared.required import json_type
from cdc_jobs.transforms.decode import decode_rows
from fuzz import seed_messages  # beside this file

FORMATS = available_formats()
JSON_FORMATS = [f for f in FORMATS if not get_codec(f).capabilities.binary]
# The damaged line: a canal-json INSERT without database, table, es and pkNames.
NO_TABLE = b'{"type": "INSERT", "data": [{"id": 1e400}]}'


def raw_columns(*values: bytes | None, key: bytes | None = None) -> dict:
    n = len(values)
    return {"pos_source": ["archive.jsonl"] * n, "pos_partition": [-1] * n, "pos_offset": list(range(1, n + 1)),
            "pos_timestamp_ms": [None] * n, "pos_key": [key] * n, "pos_headers": [None] * n, "value": list(values)}


def test_a_row_message_without_its_table_is_a_dead_letter_naming_the_field():
    with pytest.raises(DecodeError) as info:
        get_codec("canal-json").decode(NO_TABLE, Position("archive.jsonl", -1, 7))
    assert (info.value.vendor, info.value.field, info.value.position.offset) == ("canal-json", "table", 7)
    assert "missing" in info.value.reason
    [row] = decode_rows("canal-json", raw_columns(NO_TABLE), 1)
    assert row["op"] is None and row["dl_field"] == "table" and row["dl_raw"] == NO_TABLE
    assert row["dl_reason"].startswith("canal-json: field 'table' at archive.jsonl line 1:")


def test_the_event_record_refuses_a_data_event_without_table_whatever_the_codec_says():
    [event] = get_codec("canal-json").decode(
        b'{"type":"INSERT","data":[{"id":"1"}],"database":"d","table":"t","es":1}', Position("a"))
    for table in (None, ""):
        with pytest.raises(DecodeError) as info:
            check_events("oms-default", [event.with_(table=table)], "allMetaData.table_name")
        assert info.value.field == "allMetaData.table_name" and "needs its table" in info.value.reason


def _kinds_and_messages(fmt: str) -> list[tuple[str, str, dict]]:
    """(seed name, kind, parsed message) of the seeds the codec accepts whose kind declares requirements."""
    codec = get_codec(fmt)
    out = []
    for name, raw in seed_messages(fmt):
        try:
            check_events(fmt, codec.decode(raw, Position("seed")))
            msg, _ = jsontext.loads(raw)
        except (DecodeError, ValueError):
            continue
        subject = codec.required.subject(msg)
        kind = codec.required.kind(subject) if isinstance(subject, dict) else None
        if kind in codec.required.needs:
            out.append((name, kind, msg))
    return out


def _without(msg: dict, path: str, subject_prefix: tuple[str, ...], value: object = KeyError) -> dict:
    """A copy of ``msg`` without the field at ``path`` (or with ``value`` there)."""
    out = copy.deepcopy(msg)
    holder = out
    for key in (*subject_prefix, *path.split("."))[:-1]:
        holder = holder[key]
    last = path.split(".")[-1]
    if value is KeyError:
        del holder[last]
    else:
        holder[last] = value
    return out


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_every_declared_field_missing_null_or_retyped_is_a_dead_letter_naming_it(fmt):
    codec = get_codec(fmt)
    seeds = _kinds_and_messages(fmt)
    assert seeds, f"{fmt}: no seed message has a kind with required fields"
    checked = 0
    for name, kind, msg in seeds:
        # Debezium's declaration is relative to the payload; a bare message is its own payload.
        enveloped = codec.required.table.startswith("payload.")  # Debezium's: paths relative to the payload
        prefix = ("payload",) if enveloped and "payload" in msg and "op" not in msg else ()
        for need in codec.required.needs[kind]:
            path = need.path.removeprefix("payload.") if enveloped else need.path
            for mutation in (KeyError, None, [1, {"x": 2}], True):
                if mutation is not KeyError and json_type(mutation) in need.types:
                    continue  # a value of a type the field may have (a time may be null): legitimate
                try:
                    damaged = _without(msg, path, prefix, mutation)
                except (KeyError, TypeError):
                    continue  # the seed does not have the field (an optional branch of the path)
                with pytest.raises(DecodeError) as info:
                    check_events(fmt, codec.decode(jsontext.dumps(damaged), Position("damaged.jsonl", -1, 3)))
                field = info.value.field
                # The vendor's reading may name it first, possibly a cell of it, or the field it must agree with
                # (an UPDATE's old rows, one per data row): always a field the kind requires.
                named = {path, codec.required.table, *(n.path for n in codec.required.needs[kind])}
                named |= {p.removeprefix("payload.") for p in named}
                assert any(field == p or field.startswith((p + ".", p + "[")) for p in named), \
                    f"{fmt} {name}: {need.path} {mutation!r} -> {info.value}"
                assert "damaged.jsonl line 3" in str(info.value)
                checked += 1
    assert checked >= 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_what_the_codec_writes_satisfies_its_declaration(fmt):
    """Every event the canonical model allows, re-encoded, reads back: with its time and without (a full-sync row
    of a source that has none), so the declaration only asks what the format always carries."""
    codec = get_codec(fmt)
    events = [e for e in scenario_events() if codec.capabilities.carries(e.op)]
    events += [e.with_(event_time_ms=None) for e in events if e.op.is_data]
    read = 0
    for e in events:
        for m in codec.encode([e]):
            codec.decode(m.value, Position("reencoded"))  # raises DecodeError naming the field otherwise
            read += 1
    assert read >= len(events) // 2


def test_every_codec_declares_its_table_field():
    for fmt in FORMATS:
        required = get_codec(fmt).required
        assert required.needs, f"{fmt} declares no required fields"
        assert any(n.path == required.table or n.path.endswith(".source") for ns in required.needs.values()
                   for n in ns), f"{fmt}: its table field {required.table!r} is not among its required fields"
