"""replay -> merge -> verify on a Spark standalone cluster (a master and a worker, separate JVMs, see
spark_cluster.py), with the archive and every output on the S3 API server: executors read and write s3a://
themselves, and (as root) their /tmp is not the driver's, so a run that hands them a driver-local file fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.io import atomic, storage

from s3_server import BUCKET, REPO, s3  # noqa: F401 - the module fixture, beside this file
from services import in_ci
from spark_cluster import start_cluster

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark-cluster")]


@pytest.fixture(scope="module")
def cluster(s3, tmp_path_factory):
    # Started after the S3 server: the worker's environment holds its AWS_* variables, as a real cluster's
    # machines hold theirs (spark-env.sh, an instance role); executors inherit the worker's, not the driver's.
    base = tmp_path_factory.getbasetemp()
    c = start_cluster(tmp_path_factory.mktemp("spark-cluster"), hide=[base.parent if base.name.startswith("popen-gw")
                                                                     else base])
    if in_ci() and not c.isolated:
        c.stop()
        pytest.fail("CI runs as root: the worker must get a /tmp of its own (unshare --mount failed)")
    yield c
    c.stop()


def _cli(cluster, *argv: str) -> subprocess.CompletedProcess:
    """One command as a user runs it, its driver in this machine's process, its executors on the cluster."""
    env = {**os.environ, "CDC_REPLAY_SPARK_MASTER": cluster.master_url, "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    run = subprocess.run([sys.executable, "-m", "cdc_jobs.cli", *argv], capture_output=True, text=True,
                         timeout=900, env=env, cwd=REPO)
    assert run.returncode == 0, f"{argv[0]} failed:\n{run.stderr[-4000:]}\n{cluster.log_tail()}"
    return run


def test_replay_merge_verify_on_a_standalone_cluster_with_everything_in_the_bucket(cluster, s3, tmp_path):
    w = simulate(11, "2024-01-01", rows=8, changes=40)
    local = tmp_path / "archive"
    write_archive(w.snapshot, "canal-json", local / "full" / "part-00000.jsonl")
    write_archive(w.changes, "canal-json", local / "incremental" / "part-00000.jsonl")
    archive = f"s3://{BUCKET}/cluster/archive"
    storage.upload_tree(local, archive)
    replay, state = f"s3://{BUCKET}/cluster/replay", f"s3://{BUCKET}/cluster/state"

    _cli(cluster, "replay", "--source", archive, "--format", "canal-json", "--out", replay)
    _cli(cluster, "merge", "--replay", replay, "--out", state)
    verified = _cli(cluster, "verify", "--replay", replay, "--state", state)

    counts = json.loads(storage.read_text(storage.join(atomic.committed_location(replay), "counts.json")))
    assert counts["records_read"] == len(w.snapshot) + len(w.changes)
    assert counts.get("dead_letters", 0) == 0
    merged = json.loads(storage.read_text(storage.join(atomic.committed_location(state), "_state.json")))
    assert {t: s["rows"] for t, s in merged["tables"].items()} == {t: len(rows) for t, rows in w.final.items()}
    report = json.loads(storage.read_text(storage.join(atomic.committed_location(state), "verification.json")))
    assert report and all(t["ok"] for t in report), verified.stdout
