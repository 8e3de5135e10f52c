"""Outputs are ours to replace, and only ours: the ownership marker, the one-writer lock, what a killed run leaves
(SIGKILL of the whole process group at named points, through CDC_REPLAY_TEST_KILL_AT), and byte-identical
re-runs with stable file names."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.errors import UsageError
from cdc_jobs.io import atomic

from state_tables import data_files  # beside the tests

REPO = Path(__file__).resolve().parents[2]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root, by relative path, with its bytes (what a user's diff or sync compares)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def content(root: Path) -> dict[str, bytes]:
    """``tree`` where a re-run can differ only in what Delta writes per commit: a Delta table is compared by the
    bytes of its current data files (their names and its log's commit time and id are new on every run)."""
    tables = {p.parent for p in root.rglob("_delta_log")}
    files = {k: v for k, v in tree(root).items() if not any(t in (root / k).parents for t in tables)}
    return {**files, **data_files(root)}


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


# ------------------------------------------------------------------------------------------ no Spark needed

def test_refuses_a_directory_it_did_not_write(tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"not written by cdc-replay .*notes.txt.*remove it yourself"):
        with atomic.staged_output(str(out), "replay") as stage:
            (stage / "x").write_text("y")
    assert tree(out) == {"notes.txt": b"mine"}
    assert leftovers(out) == []


def test_replaces_its_own_output_and_marks_it(tmp_path):
    out = tmp_path / "o"
    for text in ("one", "two"):
        with atomic.staged_output(str(out), "replay") as stage:
            (stage / "data.txt").write_text(text)
    assert tree(out) == {"data.txt": b"two", atomic.MARKER: atomic._marker_text("replay").encode()}
    assert json.loads((out / atomic.MARKER).read_text())["written_by"] == "cdc-replay"
    assert leftovers(out) == []


def test_an_empty_directory_and_outputs_from_before_the_marker_are_replaceable(tmp_path):
    (tmp_path / "empty").mkdir()
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "_state.json").write_text("{}")
    for out in ("empty", "legacy"):
        with atomic.staged_output(str(tmp_path / out)) as stage:
            (stage / "f").write_text("new")
        assert (tmp_path / out / "f").read_text() == "new"


def _lock_file(out: Path, **held) -> Path:
    lock = out.parent / f".{out.name}.lock"
    lock.write_text(json.dumps({"host": socket.gethostname(), "started": time.time(), "heartbeat": time.time(),
                                "token": "other", **held}))
    return lock


def test_a_second_writer_is_refused_while_the_first_lives(tmp_path):
    out = tmp_path / "o"
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lock_file(out, pid=first.pid)
        with pytest.raises(UsageError, match=rf"another run is writing this output .*pid {first.pid}"):
            with atomic.staged_output(str(out)):
                pass
        assert not out.exists()
        # A run on another machine is trusted while its heartbeat is fresh ...
        _lock_file(out, pid=1, host="elsewhere")
        with pytest.raises(UsageError, match="host elsewhere"):
            with atomic.staged_output(str(out)):
                pass
    finally:
        first.kill()
        first.wait()


def test_a_dead_runs_lock_is_taken_over(tmp_path, monkeypatch):
    out = tmp_path / "o"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _lock_file(out, pid=dead.pid)  # this host, pid gone: a SIGKILLed run
    with atomic.staged_output(str(out)) as stage:
        (stage / "f").write_text("1")
    # ... and a run on another machine whose heartbeat stopped longer than the lease ago
    monkeypatch.setenv("CDC_REPLAY_LOCK_TTL", "60")
    lock = _lock_file(out, pid=1, host="elsewhere", heartbeat=time.time() - 120)
    os.utime(lock, (time.time() - 120,) * 2)
    with atomic.staged_output(str(out)) as stage:
        (stage / "f").write_text("2")
    assert (out / "f").read_text() == "2" and leftovers(out) == []


def test_failure_inside_leaves_previous_output_and_no_lock(tmp_path):
    out = tmp_path / "o"
    with atomic.staged_output(str(out)) as stage:
        (stage / "f").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.staged_output(str(out)) as stage:
            (stage / "f").write_text("half")
            raise RuntimeError("disk full")
    assert (out / "f").read_text() == "old" and leftovers(out) == []


def test_spark_part_names_become_stable(tmp_path):
    out = tmp_path / "o"
    with atomic.staged_output(str(out)) as stage:
        d = stage / "events" / "table_name=a"
        d.mkdir(parents=True)
        for n, job in (("00001", "0" * 8), ("00000", "0" * 8)):
            (d / f"part-{n}-{job}-1111-2222-3333-444455556666.c000.snappy.parquet").write_text(n)
            (d / f".part-{n}-{job}-1111-2222-3333-444455556666.c000.snappy.parquet.crc").write_text("crc")
    names = sorted((out / "events" / "table_name=a").iterdir())
    assert [p.name for p in names] == ["part-00000.c000.snappy.parquet", "part-00001.c000.snappy.parquet"]
    assert [p.read_text() for p in names] == ["00000", "00001"]


def test_pointer_protocol_on_posix(tmp_path, monkeypatch):
    """CDC_REPLAY_COMMIT=pointer (e.g. a FUSE-mounted bucket): attempts + _CURRENT.json; readers resolve it."""
    monkeypatch.setenv("CDC_REPLAY_COMMIT", "pointer")
    out = tmp_path / "o"
    seen = []
    for text in ("1", "2", "3"):
        with atomic.staged_output(str(out)) as stage:
            (stage / "f").write_text(text)
        seen.append(atomic.read_pointer(str(out))["attempt"])
        assert (atomic.resolve_output(str(out), "--replay") / "f").read_text() == text
    # the current attempt and the one before it (readers may still be on it); older ones are gone
    assert sorted(os.listdir(out / atomic.ATTEMPTS)) == sorted(a.split("/")[1] for a in seen[1:])


def test_committed_bytes_counts_the_current_attempt_only_and_unreachable_outputs_as_unknown(tmp_path, monkeypatch):
    """What a job's JIT sizes (merge, verify): the committed content, not the attempt kept for late readers; the
    sum stops once it is big enough; an output sizing cannot reach is unknown (None), left for the job to report."""
    monkeypatch.setenv("CDC_REPLAY_COMMIT", "pointer")
    out = tmp_path / "o"
    for size in (5000, 300):  # the previous attempt (5000 bytes) stays beside the current one
        with atomic.staged_output(str(out)) as stage:
            (stage / "events").mkdir()
            (stage / "events" / "part-0.parquet").write_bytes(b"x" * size)
            (stage / "counts.json").write_text("{}")
    assert atomic.committed_bytes([(str(out), "events")], 10**6) == 300
    current = out / atomic.read_pointer(str(out))["attempt"]
    whole = sum(f.stat().st_size for f in current.rglob("*") if f.is_file())  # events, counts.json, the marker
    assert atomic.committed_bytes([(str(out), "events"), (str(out), "")], 10**6) == 300 + whole
    assert atomic.committed_bytes([(str(out), "events")] * 5, 700) == 900  # stopped at the third

    def unreachable(uri):
        raise OSError(f"When listing objects under {uri}: connection refused")

    monkeypatch.setattr(atomic.storage, "walk_files", unreachable)
    assert atomic.committed_bytes([(str(out), "events")], 10**6) is None


# ------------------------------------------------------------------------------------- SIGKILLed real runs


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("kill-archive")
    w = simulate(11, "2024-01-01", rows=8, changes=30)
    write_archive(w.snapshot, "canal-json", root / "full" / "part-00000.jsonl")
    write_archive(w.changes, "canal-json", root / "incremental" / "part-00000.jsonl")
    return root


def _cli(*args: str, kill_at: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CDC_REPLAY_TEST_KILL_AT": kill_at, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "cdc_jobs.cli", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300, start_new_session=True)  # own process group: the kill's target


@pytest.mark.spark
def test_killed_replay_and_merge_leave_previous_output_and_rerun_is_identical(spark, archive, tmp_path):
    replay_out, state_out = tmp_path / "replay", tmp_path / "state"
    replay_args = ["replay", "--source", str(archive), "--format", "canal-json", "--to-format", "oms-default",
                   "--out", str(replay_out)]
    merge_args = ["merge", "--replay", str(replay_out), "--out", str(state_out)]
    assert cli.main(replay_args) == 0 and cli.main(merge_args) == 0
    replay_before, state_before, content_before = tree(replay_out), tree(state_out), content(state_out)
    assert not [n for n in replay_before if "-c000" in n or n.endswith(".crc")]  # stable names only

    # replay: killed while Spark writes the events (decode is still running: the first part file has just
    # appeared), and between writing and publishing (the rename exchange). merge: killed in the exchange window of
    # its publish. Each kill pays a Spark start, so only points that reach different code are killed: `locked`
    # (lock taken, nothing staged) leaves a subset of what `write` leaves and is taken over by the same code, and
    # merge writes its staging through the same staged_output/_kill_when_writing as replay.
    for point in ("write", "publish"):
        run = _cli(*replay_args, kill_at=point)
        assert run.returncode == -signal.SIGKILL, (point, run.stderr[-2000:])
        assert tree(replay_out) == replay_before, point
        left = leftovers(replay_out)
        assert ".replay.lock" in left, (point, left)  # what a kill leaves: the dead run's lock ...
        assert any(".staging-" in n for n in left), (point, left)  # ... and its staging
    run = _cli(*merge_args, kill_at="publish")
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    assert tree(state_out) == state_before
    left = leftovers(state_out)
    assert ".state.lock" in left and any(".staging-" in n for n in left), left

    # The next runs are not blocked by the dead runs' locks, clean their staging and give identical bytes (the
    # state's Delta tables: identical data files).
    assert cli.main(replay_args) == 0 and cli.main(merge_args) == 0
    assert tree(replay_out) == replay_before and content(state_out) == content_before
    assert leftovers(replay_out) == [] and leftovers(state_out) == []
