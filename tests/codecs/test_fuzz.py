"""Every codec against a seeded fuzz corpus (``fuzz.py``): no crash, every bad input a positioned DecodeError, and
nothing wrong accepted silently.

What a user relies on, per input:
* decoding either gives events or raises ``DecodeError`` naming this vendor, a field and the input's position
  (the decode step turns anything else into an anonymous "(message)" dead letter: here it is a codec bug);
* accepted events fit the event record (``cdc_codecs.contract``) and can be stored as Arrow rows;
* an accepted message is a message the codec can stand behind: re-encoding its events gives messages that decode
  to the same events (or the encoder refuses with ``EncodeError``, which the encode step dead-letters), so a
  mutation cannot slip through as a silently different row.
"""

from __future__ import annotations

import collections

import pyarrow as pa
import pytest

from cdc_codecs import DecodeError, EncodeError, Position, available_formats, get_codec
from cdc_codecs.contract import check_events
from cdc_codecs.records import to_records
from fuzz import SEED, FuzzInput, corpus  # beside this file

FORMATS = available_formats()
PER_FORMAT = 90  # x 14 formats + one 10 MB line per JSON format: > 1,000 inputs per run


def _event_arrow() -> pa.Schema:
    from cdc_jobs.schemas import EVENT_ARROW  # the jobs' record schema (pyarrow only, no Spark session)

    return EVENT_ARROW


def canonical(e) -> tuple:
    return (e.op.value, e.qualified_table, e.before, e.after, e.event_time_ms, e.sequence, e.primary_key, e.ddl,
            e.transaction_id)


def redecode(codec, messages) -> list:
    out, pending = [], {}
    for n, m in enumerate(messages, start=1):
        for d in codec.decode(m.value, Position("roundtrip", -1, n)):
            if d.fragment_key is None:
                out.append(d)
                continue
            pending.setdefault(d.fragment_key, []).append(d)
            if len(pending[d.fragment_key]) == d.fragment_total:
                out.append(codec.assemble(pending.pop(d.fragment_key)))
    assert not pending, "re-encoded fragments do not reassemble"
    return out


def check_input(fmt: str, n: int, inp: FuzzInput, outcomes: collections.Counter) -> None:
    codec = get_codec(fmt)
    pos = Position(source=f"fuzz-{fmt}.jsonl", partition=-1, offset=n)
    where = f"seed {SEED}, input {n} ({inp.label})"
    try:
        events = codec.decode(inp.raw, pos)
        assert events, f"{where}: decoded to no event and no error"
        check_events(fmt, events)  # what the decode step runs: values that do not fit are dead letters
    except DecodeError as exc:
        assert exc.vendor == fmt and exc.field, f"{where}: DecodeError without vendor/field: {exc}"
        assert exc.position is not None and (exc.position.source, exc.position.offset) == (pos.source, n), \
            f"{where}: DecodeError with the wrong position: {exc}"
        assert pos.describe() in str(exc), f"{where}: message does not say where: {exc}"
        outcomes["dead letter"] += 1
        return
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{where}: codec crashed with {type(exc).__name__}: {exc}")
    pa.RecordBatch.from_pylist(to_records(events), schema=_event_arrow())  # storable as decoded rows
    if any(e.fragment_key for e in events):
        outcomes["fragment"] += 1  # reassembled (and re-checked) with its siblings in the decode step
        return
    try:
        messages = codec.encode(events)
    except EncodeError:
        outcomes["decoded, refused by the encoder"] += 1
        return
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{where}: decoded, but the encoder crashed with {type(exc).__name__}: {exc}")
    try:
        again = redecode(codec, messages)
    except DecodeError as exc:
        pytest.fail(f"{where}: accepted, but its own re-encoding does not decode: {exc}")
    assert [canonical(e) for e in again] == [canonical(e) for e in events], \
        f"{where}: accepted, but re-encoding changes it"
    outcomes["decoded and round-tripped"] += 1


@pytest.fixture(scope="module")
def tally():
    totals: dict[str, collections.Counter] = {}
    yield totals
    n = sum(sum(c.values()) for c in totals.values())
    print(f"\nfuzz seed {SEED}: {n} inputs, 0 crashes; " + "; ".join(
        f"{fmt}: {dict(c)}" for fmt, c in sorted(totals.items())))


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzzed_messages_are_decoded_or_dead_lettered(fmt, tally):
    inputs = corpus(fmt, PER_FORMAT)
    outcomes = collections.Counter()
    for n, inp in enumerate(inputs, start=1):
        check_input(fmt, n, inp, outcomes)
    tally[fmt] = outcomes
    assert sum(outcomes.values()) == len(inputs) >= PER_FORMAT
    assert outcomes["dead letter"] > len(inputs) // 4, f"{fmt}: the mutations are not reaching the decoder"


def test_corpus_is_large_and_covers_every_kind():
    inputs = [i for fmt in FORMATS for i in corpus(fmt, PER_FORMAT)]
    assert len(inputs) >= 1000
    kinds = collections.Counter(i.label.split(" of ")[0] for i in inputs)
    for kind in ("truncation", "bit flips", "invalid UTF-8", "NUL bytes", "wrong type", "missing field",
                 "huge number", "huge string", "deep nesting", "lone surrogate", "10 MB line", "huge varint"):
        assert kinds[kind] > 0, f"no '{kind}' input in the corpus: {kinds}"
    assert max(len(i.raw) for i in inputs) >= 10 * 1024 * 1024


def test_same_seed_same_corpus():
    assert corpus("canal-json", 20, seed=5, ten_mb_line=False) == corpus("canal-json", 20, seed=5, ten_mb_line=False)
    assert corpus("canal-json", 20, seed=5, ten_mb_line=False) != corpus("canal-json", 20, seed=6, ten_mb_line=False)
