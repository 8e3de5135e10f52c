"""`replay --to-format` as a user checks it: a value the target cannot write is an encode dead letter (the job goes
on, counts and verify's accounting close), and where a target that needs only per-key order is shuffled (``--sink``,
sources with multi-message events: ``replay.encodes_in_source_order``) it is encoded by several tasks per table with
every key's changes still in order."""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from cdc_codecs import Position, get_codec
from cdc_jobs import cli
from cdc_jobs.commands import replay as replay_command
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.transforms import verify_counts as vc

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).parents[1] / "fixtures" / "debezium-json" / "synthetic-postgres-snapshot-read.json"


def debezium_lines() -> list[bytes]:
    """A snapshot row, an UPDATE without a before image (PostgreSQL without REPLICA IDENTITY FULL), an insert."""
    base = json.loads(FIXTURE.read_text())
    out = []
    for n, (op, row, name) in enumerate([("r", 1, "first"), ("u", 1, "second"), ("c", 2, "other")]):
        m = json.loads(json.dumps(base))
        m["payload"].update(op=op)
        m["payload"]["after"].update(id=row, name=name)
        m["payload"]["source"].update(snapshot="true" if op == "r" else "false", lsn=24020000 + n)
        out.append(json.dumps(m).encode())
    return out


def test_an_event_the_target_cannot_write_is_dead_lettered_and_the_replay_goes_on(tmp_path):
    archive = tmp_path / "archive" / "part-00000.jsonl"
    archive.parent.mkdir()
    archive.write_bytes(b"\n".join(debezium_lines()) + b"\n")
    out = tmp_path / "out"
    assert cli.main(["replay", "--source", str(archive), "--format", "debezium-json",
                     "--to-format", "dataworks-json", "--out", str(out)]) == 0

    dead = pq.read_table(out / "encoded_dead_letters").to_pylist()
    assert len(dead) == 1
    d = dead[0]
    assert (d["to_format"], d["table_name"], d["op"], d["el_field"]) == \
        ("dataworks-json", "appdb.public.users", "UPDATE", "payload.before")
    assert "before image" in d["el_reason"] and f"{archive} line 2" in d["el_reason"]
    event = orjson.loads(d["el_event"])
    assert event["op"] == "UPDATE" and dict(event["after"])["name"] == "second" and event["pos_offset"] == 2

    counts = json.loads((out / "counts.json").read_text())
    enc = counts["encoded"]
    assert enc["dead_letters"] == 1
    assert enc["dead_letters_by_table"] == {"appdb.public.users": {"UPDATE": 1}}
    lines = [json.loads(x) for f in sorted((out / "encoded").glob("part-*")) for x in f.read_text().splitlines()]
    assert len(lines) == enc["messages"] == 2  # the snapshot row (as INSERT) and the insert

    # verify's accounting: events in = events in messages + encode dead letters.
    found = {"appdb.public.users": counts["events"]["appdb.public.users"]}
    target = get_codec("dataworks-json")
    check = vc.encoding_check(counts, found, [o.value for o in target.capabilities.ops],
                              target.capabilities.messages_per_update, len(lines))
    assert check["ok"], check["problems"]
    # ... and without them it would not close: the dead letter is what accounts for the UPDATE.
    hidden = json.loads(json.dumps(counts))
    hidden["encoded"].pop("dead_letters_by_table")
    assert not vc.encoding_check(hidden, found, [o.value for o in target.capabilities.ops],
                                 target.capabilities.messages_per_update, len(lines))["ok"]


def test_per_key_target_splits_a_table_over_tasks_and_keeps_each_keys_order(tmp_path, monkeypatch):
    monkeypatch.setattr(replay_command, "encodes_in_source_order", lambda *a: False)  # the shuffled way
    w = simulate(random.randrange(1 << 30), "2024-01-01", rows=30, changes=300)
    archive = tmp_path / "archive" / "part-00000.jsonl"
    write_archive(w.snapshot + w.changes, "canal-json", archive)
    out = tmp_path / "out"
    assert get_codec("oms-default").capabilities.order_scope == "key"
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--to-format", "oms-default",
                     "--out", str(out)]) == 0
    per_table_files = _each_keys_messages_in_order(out)
    assert max(len(v) for v in per_table_files.values()) > 1, "a table was encoded by one task only"


def test_a_large_replay_re_encodes_over_more_tasks_with_the_same_messages(tmp_path, monkeypatch):
    """The encode's task count grows with the events (``encode.task_count``), so no task holds too many of a
    large replay's; here a tiny per-task limit stands in for a large archive: the same messages come out, and
    each key's still in one file and in order."""
    from cdc_jobs.transforms import encode

    monkeypatch.setattr(replay_command, "encodes_in_source_order", lambda *a: False)  # the shuffled way
    w = simulate(random.randrange(1 << 30), "2024-01-01", rows=30, changes=300)
    archive = tmp_path / "archive" / "part-00000.jsonl"
    write_archive(w.snapshot + w.changes, "canal-json", archive)

    def replay(out: Path) -> list[bytes]:
        assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--to-format",
                         "oms-default", "--out", str(out)]) == 0
        return [line for f in sorted((out / "encoded").glob("part-*")) for line in f.read_bytes().splitlines()]

    default = replay(tmp_path / "default")
    monkeypatch.setattr(encode, "EVENTS_PER_TASK", 10)
    many = replay(tmp_path / "many")
    assert len(list((tmp_path / "many" / "encoded").glob("part-*"))) > \
        len(list((tmp_path / "default" / "encoded").glob("part-*")))
    assert sorted(many) == sorted(default)
    _each_keys_messages_in_order(tmp_path / "many")


def test_task_count_grows_with_the_events_and_never_below_the_configured_partitions():
    from cdc_jobs.transforms.encode import EVENTS_PER_TASK, task_count

    assert task_count(0, 8) == task_count(10, 8) == task_count(8 * EVENTS_PER_TASK, 8) == 8
    assert task_count(8 * EVENTS_PER_TASK + 1, 8) == 9
    assert task_count(40 * EVENTS_PER_TASK, 8) == 40


def _each_keys_messages_in_order(out: Path) -> dict[str, set]:
    """Within one key, messages come out in time order and all in one file; returns each table's files."""
    files = sorted((out / "encoded").glob("part-*"))
    assert [f.name for f in files] == [f"part-{n:05d}.jsonl" for n in range(len(files))]
    per_table_files: dict[str, set] = {}
    last_seen: dict[tuple, tuple] = {}
    oms = get_codec("oms-default")
    for f in files:
        for n, line in enumerate(f.read_bytes().splitlines(), start=1):
            for e in oms.decode(line, Position(f.name, -1, n)):
                per_table_files.setdefault(e.qualified_table, set()).add(f.name)
                image = e.after if e.after is not None else e.before
                key = (e.qualified_table, tuple(image[k] for k in e.primary_key))
                order = (e.event_time_ms // 1000,)
                prev = last_seen.get(key)
                assert prev is None or (prev[0] == f.name and prev[1] <= order), (key, prev, f.name, order)
                last_seen[key] = (f.name, order)
    return per_table_files
