"""The replay job as a user runs it: `cdc-replay replay` on archive files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_codecs.records import from_record
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive

pytestmark = pytest.mark.spark


def replay(*args: str) -> int:
    return cli.main(["replay", *args])


def events_of(out: Path) -> list:
    rows = pq.read_table(out / "events").to_pylist()
    return [from_record(r) for r in rows]


def canonical(events) -> list[tuple]:
    """What must survive a re-encode: table, op, key, images, event time (not the archive position)."""
    out = []
    for e in events:
        out.append((e.qualified_table, e.op.value, e.event_time_ms,
                    tuple(sorted((e.before or {}).items())), tuple(sorted((e.after or {}).items()))))
    return sorted(out, key=repr)


def archive_for(seed: int, root: Path, database: str = "shop") -> dict:
    """A canal-json snapshot and day of changes of ``seed``'s workload (in ``database``) with one corrupt line at a
    random place (also ``seed_sweep.py replay``)."""
    w = simulate(seed, "2024-01-01", rows=30, changes=120)
    if database != "shop":
        w = type(w)([e.with_(database=database) for e in w.snapshot], [e.with_(database=database) for e in w.changes],
                    w.final)
    write_archive(w.snapshot, "canal-json", root / "full" / "part-00000.jsonl")
    inc = root / "incremental" / "part-00000.jsonl"
    write_archive(w.changes, "canal-json", inc)
    lines = inc.read_bytes().splitlines(keepends=True)
    bad_line = random.Random(seed).randrange(len(lines)) + 1
    lines[bad_line - 1] = b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":"1"\n'
    inc.write_bytes(b"".join(lines))
    return {"root": root, "workload": w, "bad_line": bad_line, "inc": inc, "seed": seed}


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    seed = int(os.environ.get("CDC_REPLAY_TEST_SEED") or random.randrange(1 << 30))  # printed on failure
    return archive_for(seed, tmp_path_factory.mktemp("archive"))


def test_replay_decodes_every_line_and_dead_letters_exactly_the_corrupt_one(archive, tmp_path):
    out = tmp_path / "replay"
    assert replay("--source", str(archive["root"]), "--format", "canal-json", "--out", str(out)) == 0
    w = archive["workload"]
    dead = pq.read_table(out / "dead_letters").to_pylist()
    assert [(d["pos_source"], d["pos_offset"]) for d in dead] == [(str(archive["inc"]), archive["bad_line"])], \
        f"seed {archive['seed']}"
    assert dead[0]["dl_raw"].startswith(b'{"database":"shop"')
    assert "canal-json" in dead[0]["dl_reason"] and f"line {archive['bad_line']}" in dead[0]["dl_reason"]

    counts = json.loads((out / "counts.json").read_text())
    total_messages = len(w.snapshot) + len(w.changes)
    assert counts["records_read"] == total_messages
    data = sum(sum(ops.values()) for ops in counts["events"].values())
    assert data + counts["dead_letters"] + sum(counts["control"].values()) == total_messages
    assert len(events_of(out)) == total_messages - 1
    for s in counts["sources"]:
        assert s["records"] == s["events"] + s["control"] + s["dead_letters"] + s["filtered_out"]


def test_window_and_table_filters(archive, tmp_path):
    w = archive["workload"]
    since = 1704067200000 + 6 * 3600_000
    until = since + 6 * 3600_000
    out = tmp_path / "replay"
    replay("--source", str(archive["root"] / "full"), "--source", str(archive["root"] / "incremental"),
           "--format", "canal-json", "--since", str(since), "--until", "2024-01-01T12:00:00+00:00",
           "--tables", "shop.cust*", "--out", str(out))
    got = events_of(out)
    expected = [e for e in w.changes if since <= e.event_time_ms < until and e.table == "customers"]
    # The corrupted line may have been one of the expected events.
    assert len(expected) - 1 <= len(got) <= len(expected)
    assert all(since <= e.event_time_ms < until and e.qualified_table == "shop.customers" for e in got)


def test_reencode_and_replay_back_gives_the_same_events(archive, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    replay("--source", str(archive["root"]), "--format", "canal-json", "--to-format", "oms-default",
           "--out", str(first))
    counts = json.loads((first / "counts.json").read_text())
    assert counts["encoded"]["messages"] == len(events_of(first))
    replay("--source", str(first / "encoded"), "--format", "oms-default", "--out", str(second))
    a, b = events_of(first), events_of(second)
    # oms-default carries event time in whole seconds and no column types: compare what it carries.
    strip = lambda evs: [(t, op, ms // 1000, bi, ai) for (t, op, ms, bi, ai) in canonical(evs)]
    assert sorted(strip(b), key=repr) == sorted(strip(a), key=repr)


def test_rerun_gives_identical_events(archive, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for out in (one, two):
        replay("--source", str(archive["root"]), "--format", "canal-json", "--out", str(out))
    key = lambda r: (r["pos_source"], r["pos_offset"], r["pos_index"])
    assert sorted(pq.read_table(one / "events").to_pylist(), key=key) == \
        sorted(pq.read_table(two / "events").to_pylist(), key=key)


def test_failed_run_leaves_previous_output_intact(archive, tmp_path, monkeypatch):
    out = tmp_path / "replay"
    replay("--source", str(archive["root"]), "--format", "canal-json", "--out", str(out))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))

    import cdc_jobs.commands.replay as job

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(job, "check_dead_letter_budget", boom)  # after events/ and dead_letters/ are written
    with pytest.raises(RuntimeError, match="disk full"):
        replay("--source", str(archive["root"]), "--format", "canal-json", "--out", str(out))
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".replay.staging")]


def test_unknown_format_suggests_the_close_one(tmp_path, capsys):
    assert replay("--source", str(tmp_path), "--format", "canal-jsn", "--out", str(tmp_path / "o")) == 2
    assert "unknown format 'canal-jsn', did you mean 'canal-json'?" in capsys.readouterr().err


def test_bad_window_is_a_clear_usage_error(archive, tmp_path, capsys):
    code = replay("--source", str(archive["root"]), "--format", "canal-json", "--since", "yesterday",
                  "--out", str(tmp_path / "o"))
    assert code == 2
    assert "--since: 'yesterday' is neither ISO-8601" in capsys.readouterr().err


def test_checkpoint_continuation_reads_every_event_exactly_once(archive, tmp_path):
    """Day 1 replays [since, mid); day 2 continues from day 1's checkpoint up to `until`. Records of day 2 that
    day 1 read and held back are read again; nothing is lost, nothing is emitted twice."""
    w = archive["workload"]
    since, mid, until = 1704067200000, 1704067200000 + 9 * 3600_000, 1704067200000 + 86_400_000
    first, second = tmp_path / "day1", tmp_path / "day2"
    assert replay("--source", str(archive["root"]), "--format", "canal-json", "--since", str(since), "--until",
                  str(mid), "--max-dead-letters", "1", "--out", str(first)) == 0
    ckpt = json.loads((first / "checkpoint.json").read_text())
    inc = next(s for s in ckpt["sources"] if s["source"] == str(archive["inc"]))
    held = [e for e in w.changes if e.event_time_ms >= mid]
    assert ckpt["until_ms"] == mid and inc["next_offset"] <= len(w.changes) - len(held) + 2
    # day 2 reads fewer records, so the archive's one corrupt line may exceed the default 1% dead-letter budget
    assert replay("--source", str(archive["root"]), "--format", "canal-json", "--checkpoint", str(first),
                  "--until", str(until), "--max-dead-letters", "1", "--out", str(second)) == 0
    got = events_of(first) + events_of(second)
    positions = [(e.position.source, e.position.offset, e.position.index) for e in got]
    assert len(positions) == len(set(positions)), "an event was emitted by both replays"
    expected = [e for e in w.changes if since <= e.event_time_ms < until]
    assert len(expected) - 1 <= len([e for e in got if e.event_time_ms >= since]) <= len(expected)


def test_dead_letters_are_read_again_from_the_files_that_hold_them_only():
    """A replay that kept no rows reads its dead letters again: only the files named by them, or every file when
    a row names no file of the archive (a Kafka dump's rows name their topic)."""
    from cdc_jobs.commands.replay import files_again

    files = ["/a/full/part-00000.jsonl", "/a/inc/part-00000.jsonl", "/a/inc/part-00001.jsonl"]
    assert files_again(files, {("/a/inc/part-00001.jsonl", -1)}) == ["/a/inc/part-00001.jsonl"]
    assert files_again(files, {("/a/inc/part-00001.jsonl", -1), ("/a/full/part-00000.jsonl", -1)}) == \
        ["/a/full/part-00000.jsonl", "/a/inc/part-00001.jsonl"]
    assert files_again(files, {("shop.orders", 3)}) == files
    assert files_again(files, {("shop.orders", 3), ("/a/inc/part-00000.jsonl", -1)}) == files
