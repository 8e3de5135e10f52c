"""Throughput paths of the replay that must not change results: decode builds its Arrow batches column-wise
(must equal ``from_pylist`` of the contract's ``to_record`` rows), and large JSON-lines files are read as
line-aligned byte ranges (must give every line once, with its exact 1-based line number). No Spark needed."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from cdc_codecs import Position, get_codec
from cdc_codecs.records import to_record
from cdc_codecs.scenario import scenario_events
from cdc_jobs.transforms.decode import decode_batches
from cdc_jobs.schemas import DECODED_ARROW, RAW_ARROW
from cdc_jobs.io.files import _numbered_lines, plan_partitions, read_lines, split_lines_file


def raw_batch(values: list) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "pos_source": ["topic"] * n, "pos_partition": [3] * n, "pos_offset": list(range(10, 10 + n)),
        "pos_timestamp_ms": [1_700_000_000_000 + i if i % 2 else None for i in range(n)],
        "pos_key": [b"k%d" % i if i % 3 else None for i in range(n)],
        "pos_headers": [[{"key": "h", "value": b"v"}] if i % 4 == 0 else [] for i in range(n)],
        "value": values}, schema=RAW_ARROW)


@pytest.mark.parametrize("fmt", ["canal-json", "oms-default", "debezium-json", "drs-json"])
def test_columnar_decode_equals_the_record_contract(fmt):
    codec = get_codec(fmt)
    values = [m.value for m in codec.encode([e for e in scenario_events() if codec.capabilities.carries(e.op)])]
    values += [None, b"{not json"]
    batch = raw_batch(values)
    [got] = list(decode_batches(fmt, [batch]))
    cols = batch.to_pydict()
    expected, n_dead = [], 0
    for i, raw in enumerate(values):
        if raw is None or raw == b"{not json":
            n_dead += 1
            continue
        pos = Position("topic", 3, 10 + i, timestamp_ms=cols["pos_timestamp_ms"][i], key=cols["pos_key"][i],
                       headers=tuple((h["key"], h["value"]) for h in cols["pos_headers"][i]))
        for j, e in enumerate(codec.decode(raw, pos)):
            expected.append(to_record(e) | {"dl_reason": None, "dl_field": None, "dl_raw": None,
                                            "first_of_record": j == 0})
    rows = got.to_pylist()
    events = [r for r in rows if r["dl_reason"] is None and r["op"] != "TOMBSTONE"]
    assert pa.Table.from_pylist(events, schema=DECODED_ARROW).equals(
        pa.Table.from_pylist(expected, schema=DECODED_ARROW))
    # The Kafka tombstone (null value) is counted as read, but is neither an event nor a dead letter.
    tombstones = [r for r in rows if r["op"] == "TOMBSTONE"]
    assert [(t["pos_offset"], t["first_of_record"], t["dl_reason"]) for t in tombstones] == \
        [(10 + len(values) - 2, True, None)]
    dead = [r for r in rows if r["dl_reason"] is not None]
    assert [(d["pos_offset"], d["dl_field"], d["first_of_record"]) for d in dead] == \
        [(10 + len(values) - 1, "$", True)]
    assert f"topic partition 3 offset {9 + len(values)}" in dead[0]["dl_reason"]


def test_split_ranges_keep_every_line_and_its_number(tmp_path):
    rng = random.Random(7)
    for trial in range(60):
        lines = [b"x" * rng.choice([0, 1, 3, 20]) + rng.choice([b"\n", b"\r\n", b" \n"])
                 for _ in range(rng.randrange(1, 50))]
        data = b"".join(lines) + (b"tail" if trial % 2 else b"")
        path = tmp_path / f"f{trial}.jsonl"
        path.write_bytes(data)
        whole = list(_numbered_lines(str(path)))
        for target in (1, 2, 5, 16, 64, 10_000):
            spans = split_lines_file(str(path), target)
            assert spans[0].start == 0 and spans[-1].end == len(data)
            assert all(a.end == b.start for a, b in zip(spans, spans[1:]))
            assert [x for s in spans for x in _numbered_lines(str(path), s)] == whole, (data, target)


def test_only_large_plain_lines_files_are_split(tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(5000)))  # about 48 KB
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"n":1}\n')
    gz = tmp_path / "big.jsonl.gz"
    gz.write_bytes(big.read_bytes())  # never split: byte offsets of a gzip stream are not line offsets
    parts = plan_partitions([str(big), str(small), str(gz)], split_bytes=10_000)
    spans = [p.span for p in parts if p.path == str(big)]
    assert len(spans) >= 4 and all(p.span is None for p in parts if p.path != str(big))
    offsets = [o for s in spans for cols in read_lines(str(big), s) for o in cols["pos_offset"]]
    assert offsets == list(range(1, 5001))


def test_sorted_fragments_assemble_as_each_key_s_group_does():
    """Replay assembles multi-message events from fragment rows sorted by key, many keys per batch
    (``assemble_sorted``): the rows must be those of assembling each key's fragments on its own, also where a
    key's fragments straddle two batches, and a broken group's dead letters must stay its own."""
    from cdc_jobs.transforms.decode import assemble_sorted, assembled_rows

    fmt = "dataworks-json"  # every UPDATE is two messages (UPDATE_BEFOR, UPDATE_AFTER)
    codec = get_codec(fmt)
    values = [m.value for m in codec.encode([e for e in scenario_events() if codec.capabilities.carries(e.op)])]
    rows = [r for b in decode_batches(fmt, [raw_batch(values)]) for r in b.to_pylist() if r["fragment_key"]]
    assert len({r["fragment_key"] for r in rows}) >= 2, "the scenario has multi-message events in this format"
    broken = dict(rows[0], fragment_key="broken", fragment_index=7, fragment_total=9)  # a group that cannot assemble
    rows = sorted(rows + [broken], key=lambda r: r["fragment_key"])
    keys = list(dict.fromkeys(r["fragment_key"] for r in rows))
    each_key = [r for k in keys for r in assembled_rows(fmt, [x for x in rows if x["fragment_key"] == k])]
    expected = pa.Table.from_pylist(each_key, schema=DECODED_ARROW).to_pylist()
    batches = [pa.RecordBatch.from_pylist(rows[i:i + 3], schema=DECODED_ARROW) for i in range(0, len(rows), 3)]
    got = [r for b in assemble_sorted(fmt, iter(batches)) for r in b.to_pylist()]
    assert got == expected
    assert any(r["dl_reason"] for r in got) and any(r["op"] and not r["dl_reason"] for r in got)


def test_a_re_sent_fragment_is_that_fragment_and_a_different_one_under_its_index_is_refused():
    """At-least-once delivery re-sends messages: a copy of one half of a DataWorks update (later in the archive)
    assembles to the event the two halves make alone; another message under the same half is no copy, and the
    group's fragments become dead letters instead of one of them winning."""
    from cdc_jobs.transforms.decode import assembled_rows

    fmt = "dataworks-json"
    codec = get_codec(fmt)
    values = [m.value for m in codec.encode([e for e in scenario_events() if codec.capabilities.carries(e.op)])]
    rows = [r for b in decode_batches(fmt, [raw_batch(values)]) for r in b.to_pylist() if r["fragment_key"]]
    key = rows[0]["fragment_key"]
    pair = [r for r in rows if r["fragment_key"] == key]
    assert sorted(r["fragment_index"] for r in pair) == [0, 1]
    alone = assembled_rows(fmt, pair)
    assert len(alone) == 1 and alone[0]["op"] == "UPDATE" and not alone[0]["dl_reason"]
    copy = dict(pair[0], pos_offset=pair[0]["pos_offset"] + 1000)
    assert assembled_rows(fmt, [*pair, copy]) == alone
    other = dict(copy, before=[(k, "changed") for k, _ in pair[0]["before"] or [("id", None)]])
    refused = assembled_rows(fmt, [*pair, other])
    assert len(refused) == 3 and all(r["dl_reason"] for r in refused), refused


def test_ranges_are_balanced_over_the_cores(tmp_path, monkeypatch):
    """A file above the split size is cut into ranges of about equal size, as many as the cores or a multiple,
    not full ranges and a small rest that leaves a core idle at the end of the read; none exceeds the split
    size, and the lines read are the file's, each once."""
    from cdc_jobs.io import files

    monkeypatch.setattr(files, "SPLIT_BYTES", 32_000)
    monkeypatch.setattr(files, "MIN_SPLIT_BYTES", 1_000)
    path = tmp_path / "day.jsonl"
    path.write_bytes(b"".join(b'{"n":%05d}\n' % i for i in range(4000)))  # 48,000 bytes of 12-byte lines
    for cores, expected in ((1, [24_000] * 2), (2, [24_000] * 2), (3, [16_008] * 2 + [15_984]),
                            (4, [12_000] * 4)):
        spans = [p.span for p in files.plan_partitions([str(path)], cores=cores)]
        assert [s.end - s.start for s in spans] == expected, cores
        lines = [o for s in spans for cols in read_lines(str(path), s) for o in cols["pos_offset"]]
        assert lines == list(range(1, 4001))
    assert files.balanced_split(500, 2) == 32_000  # below the least range: one range, as before
