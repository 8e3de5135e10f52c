"""Outputs on a real S3 API: moto's server mode on 127.0.0.1 (its own virtualenv, .venv/moto-server, see
tests/README.md), reached through the standard AWS_* environment only.

Spark writes s3a:// itself (hadoop-aws from the installed JVM jars, cdc_jobs.jvm), configured from the same
environment each job runs with (cdc_jobs.io.storage.configure_spark). What is tested against the S3 API: every
Python-side write (counts, checkpoint, state file, reports, marker, lock, pointer), the commit protocol, a SIGKILL
during the publish, and an end-to-end replay -> merge -> verify whose archive and outputs live only in the bucket.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable

from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.errors import UsageError
from cdc_jobs.io import atomic, storage

from s3_server import BUCKET, REPO, s3  # noqa: F401 - the module fixture, beside this file


def test_python_side_writes_through_the_standard_environment(s3):
    uri = f"s3a://{BUCKET}/plain/counts.json"
    storage.write_text(uri, '{"n": 1}\n')
    assert storage.read_text(f"s3://{BUCKET}/plain/counts.json") == '{"n": 1}\n'  # s3:// and s3a:// agree
    assert storage.is_dir(f"s3://{BUCKET}/plain") and storage.listdir(f"s3://{BUCKET}/plain") == ["counts.json"]
    assert storage.spark_uri(f"s3://{BUCKET}/x") == f"s3a://{BUCKET}/x"
    storage.delete(f"s3://{BUCKET}/plain")
    assert not storage.exists(uri)
    with pytest.raises(ValueError, match="unsupported storage scheme 'ftp://'"):
        storage.check_uri("ftp://host/x", "--out")


def test_pointer_commit_on_s3(s3):
    out = f"s3://{BUCKET}/commit/out"
    attempts = []
    for text in ("1", "2", "3"):
        with atomic.staged_output(out, "replay") as stage:
            (stage / "events").mkdir()
            (stage / "events" / "part-00000-00000000-1111-2222-3333-444455556666-c000.txt").write_text(text)
        attempts.append(atomic.read_pointer(out)["attempt"])
        got = atomic.resolve_output(out, "--replay")
        assert (got / "events" / "part-00000.txt").read_text() == text  # stable name, new content
    names = storage.listdir(f"{out}/{atomic.ATTEMPTS}")
    assert sorted(names) == sorted(a.split("/")[1] for a in attempts[1:])  # current + previous kept
    assert sorted(storage.listdir(out)) == [atomic.POINTER, atomic.ATTEMPTS, atomic.MARKER]
    pointer = atomic.read_pointer(out)
    assert [f for f, _ in pointer["files"]] == [atomic.MARKER, "events/part-00000.txt"]

    # a failure inside leaves the committed attempt current and removes its own
    with pytest.raises(RuntimeError):
        with atomic.staged_output(out, "replay") as stage:
            (stage / "x").write_text("half")
            raise RuntimeError("boom")
    assert atomic.read_pointer(out) == pointer and sorted(storage.listdir(f"{out}/{atomic.ATTEMPTS}")) == sorted(names)


def test_foreign_prefix_and_live_lock_are_refused(s3):
    foreign = f"s3://{BUCKET}/theirs"
    storage.write_text(f"{foreign}/data.csv", "a,b\n")
    with pytest.raises(UsageError, match="not written by cdc-replay"):
        with atomic.staged_output(foreign):
            pass
    assert storage.read_text(f"{foreign}/data.csv") == "a,b\n"

    out = f"s3://{BUCKET}/locked"
    storage.write_text(f"{out}/{atomic.LOCK}", json.dumps({"host": "worker-7", "pid": 42, "token": "t",
                                                          "started": time.time(), "heartbeat": time.time()}))
    with pytest.raises(UsageError, match="another run is writing this output .*worker-7"):
        with atomic.staged_output(out):
            pass


KILLED_PUBLISH = """
import sys
from cdc_jobs.io import atomic
with atomic.staged_output(sys.argv[1], "replay") as stage:
    (stage / "f").write_text("new")
"""


def test_sigkill_during_publish_leaves_previous_output_current(s3):
    out = f"s3://{BUCKET}/killed"
    with atomic.staged_output(out, "replay") as stage:
        (stage / "f").write_text("old")
    before = atomic.read_pointer(out)
    run = subprocess.run([sys.executable, "-c", KILLED_PUBLISH, out], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CDC_REPLAY_TEST_KILL_AT": "publish"}, start_new_session=True)
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert atomic.read_pointer(out) == before
    assert (atomic.resolve_output(out, "--replay") / "f").read_text() == "old"
    # what the kill left: its uploaded attempt and its lock; the next run takes both over
    assert len(storage.listdir(f"{out}/{atomic.ATTEMPTS}")) == 2 and storage.exists(f"{out}/{atomic.LOCK}")
    with atomic.staged_output(out, "replay") as stage:
        (stage / "f").write_text("next")
    assert len(storage.listdir(f"{out}/{atomic.ATTEMPTS}")) == 2  # the killed run's attempt is gone
    assert not storage.exists(f"{out}/{atomic.LOCK}")


REPLAYS = """
import json, sys
from cdc_jobs import cli
for args in json.loads(sys.argv[1]):
    if cli.main(["replay", *args]) != 0:
        sys.exit(1)
"""


def _replay_process(*runs: list[str]) -> None:
    """Replays read the archive in Spark's Python workers, which inherit the environment the JVM started with:
    the shared test session may predate the fixture's AWS_* variables, so replays run in a process of their own
    (as spark-submit runs them), one after the other on its one Spark session (a process per replay would pay a
    JVM start-up each); merge and verify read through the driver in this process."""
    run = subprocess.run([sys.executable, "-c", REPLAYS, json.dumps(runs)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable}, cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.spark
def test_replay_merge_verify_end_to_end_in_the_bucket(spark, s3, tmp_path):
    w = simulate(5, "2024-01-01", rows=8, changes=30)
    local = tmp_path / "archive"
    write_archive(w.snapshot, "canal-json", local / "full" / "part-00000.jsonl")
    write_archive(w.changes, "canal-json", local / "incremental" / "part-00000.jsonl")
    archive = f"s3://{BUCKET}/archive/shop"
    storage.upload_tree(local, archive)
    storage.write_text(f"{archive}/_SUCCESS", "")  # markers are skipped, as on a local archive
    day = f"s3://{BUCKET}/pipelines/shop/2024-01-01"
    replay_out, state_out = f"{day}/replay", f"{day}/state"
    # The replay, then a continuation that reads the first one's checkpoint from the bucket.
    _replay_process(["--source", archive, "--format", "canal-json", "--out", replay_out],
                    ["--source", f"{archive}/*/part-*.jsonl", "--format", "canal-json", "--checkpoint", replay_out,
                     "--out", f"{day}/replay-next"])
    assert cli.main(["merge", "--replay", replay_out, "--out", state_out]) == 0
    assert cli.main(["verify", "--replay", replay_out, "--state", state_out]) == 0

    state = json.loads(storage.read_text(storage.join(atomic.committed_location(state_out), "_state.json")))
    assert {t: s["rows"] for t, s in state["tables"].items()} == {t: len(rows) for t, rows in w.final.items()}
    # Each committed table is a Delta table in the bucket: delta-rs reads it from S3 itself (no cdc-replay code).
    s3_options = {"AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true",
                  "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
    for table, rows in w.final.items():
        uri = storage.join(atomic.committed_location(state_out), table)
        assert DeltaTable(uri, storage_options=s3_options).to_pyarrow_table().num_rows == len(rows), table
    report = json.loads(storage.read_text(storage.join(atomic.committed_location(state_out), "verification.json")))
    assert report and all(t["ok"] for t in report)
    counts = json.loads(storage.read_text(storage.join(atomic.committed_location(replay_out), "counts.json")))
    assert counts["records_read"] == len(w.snapshot) + len(w.changes)
    assert sorted(s["source"] for s in counts["sources"]) == [f"{archive}/full/part-00000.jsonl",
                                                               f"{archive}/incremental/part-00000.jsonl"]

    # a merge continues from the bucket's state
    assert cli.main(["merge", "--replay", f"{day}/replay-next", "--base", state_out, "--out", f"{day}/state-next"]) == 0
    nxt = json.loads(storage.read_text(storage.join(atomic.committed_location(f"{day}/state-next"), "_state.json")))
    assert {t: s["rows"] for t, s in nxt["tables"].items()} == {t: s["rows"] for t, s in state["tables"].items()}
