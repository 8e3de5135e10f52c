"""Re-encoding through a target's fast path (``Codec.plain_messages``: messages built from the batch columns, no
Event per row) gives exactly the rows of the Event path: the same messages, keys, headers, positions and dead
letters in the same order, also when a source message's rows straddle two Arrow batches and when some messages
take the Event path (own-format events, DDL, control records, values the target cannot write). No Spark needed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from cdc_codecs import Codec, DecodeError, Op, Position, available_formats, get_codec
from cdc_codecs.event_schema import ENCODED_ARROW, EVENT_ARROW
from cdc_codecs.oms.oms_default import OmsDefaultCodec
from cdc_codecs.records import to_record
from cdc_codecs.scenario import scenario_events
from cdc_jobs.transforms.encode import encode_batches

FIXTURES = Path(__file__).parents[1] / "fixtures"


def events_of_every_format() -> pa.Table:
    """The scenario encoded in every format and decoded again, the canal-json (multi-row messages) and OMS
    fixtures (own events with vendor fixes), and
    an event oms-default cannot carry (a transaction commit marker) in the middle of a multi-row message, as
    EVENT rows."""
    events = []
    for fmt in available_formats():
        codec = get_codec(fmt)
        messages = codec.encode([e for e in scenario_events() if codec.capabilities.carries(e.op)])
        for n, m in enumerate(messages):
            try:
                events += [e for e in codec.decode(m.value, Position(f"{fmt}.jsonl", -1, n + 1))
                           if e.fragment_key is None]
            except DecodeError:
                continue
    for fmt in ("canal-json", "oms-default", "oms-extend-column-type"):  # own events keep vendor fixes
        codec = get_codec(fmt)
        for n, path in enumerate(sorted((FIXTURES / fmt).glob("*.json"))):
            try:
                events += codec.decode(path.read_bytes(), Position(f"{fmt}-fixtures.jsonl", -1, n + 1))
            except DecodeError:
                continue
    row = next(e for e in events if e.format == "canal-json" and e.after)
    at = Position("mixed.jsonl", -1, 1)
    events += [row.with_(position=at), row.with_(op=Op.COMMIT, position=replace(at, index=1)),
               row.with_(position=replace(at, index=2))]
    return pa.Table.from_pylist([to_record(e) for e in events], schema=EVENT_ARROW)


def encoded(fmt: str, table: pa.Table, chunk: int) -> pa.Table:
    return pa.Table.from_batches(list(encode_batches(fmt, table.to_batches(max_chunksize=chunk))),
                                 schema=ENCODED_ARROW)


@pytest.mark.parametrize("fmt", ["oms-default", "oms-extend-column-type"])
@pytest.mark.parametrize("columns", [True, False], ids=["plain_columns", "plain_messages"])
def test_fast_path_gives_the_rows_of_the_event_path(fmt, columns, monkeypatch):
    table = events_of_every_format()
    calls = {"taken": 0}
    fast, whole = OmsDefaultCodec.plain_messages, OmsDefaultCodec.plain_columns

    def counted(self, cols, declared, rows):
        out = fast(self, cols, declared, rows)
        calls["taken"] += out is not None
        return out

    def counted_columns(self, batch):
        out = whole(self, batch)
        calls["taken"] += 0 if out is None else pa.compute.sum(out.taken).as_py() or 0
        return out

    monkeypatch.setattr(OmsDefaultCodec, "plain_messages", counted)
    monkeypatch.setattr(OmsDefaultCodec, "plain_columns", counted_columns if columns else Codec.plain_columns)
    results = {chunk: encoded(fmt, table, chunk) for chunk in (1, 2, 7, 100_000)}
    monkeypatch.setattr(OmsDefaultCodec, "plain_messages", Codec.plain_messages)
    monkeypatch.setattr(OmsDefaultCodec, "plain_columns", Codec.plain_columns)
    reference = encoded(fmt, table, 100_000)
    assert reference.num_rows > 50 and pa.compute.sum(reference["el_reason"].is_valid()).as_py() >= 1
    for chunk, got in results.items():
        assert got.equals(reference), f"batches of {chunk} rows"
    # the fast path took the foreign row events: the column path for both, the row path for oms-default only
    # (its variant changes the images, which only the column path writes)
    assert (calls["taken"] > 50) == (columns or fmt == "oms-default"), calls
