"""Outputs on a real S3 API: moto's server mode on 127.0.0.1 (its own virtualenv, .venv/moto-server, see
tests/README.md), reached through the standard AWS_* environment only.

Spark writes s3a:// itself (hadoop-aws from the installed JVM jars, cdc_jobs.jvm), configured from the same
environment each job runs with (cdc_jobs.io.storage.configure_spark). What is tested against the S3 API: every
Python-side write (counts, checkpoint, state file, reports, marker, lock, pointer), the commit protocol and a
SIGKILL during the publish. The end-to-end replay -> merge -> verify whose archive and outputs live only in the
bucket runs on a Spark cluster (test_spark_cluster.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cdc_jobs.errors import UsageError
from cdc_jobs.io import atomic, storage

from s3_server import BUCKET, s3  # noqa: F401 - the module fixture, beside this file


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
