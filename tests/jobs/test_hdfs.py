"""replay -> merge -> verify with the archive and every output on HDFS (Hadoop's MiniDFSCluster, see
hdfs_cluster.py): Spark reads and writes hdfs:// with its own client; what Python reads and writes (the archive in
the decode tasks, counts, checkpoint, reports, markers) goes over WebHDFS, found through $HADOOP_CONF_DIR."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cdc_jobs.commands.sample import simulate, write_archive

from hdfs_cluster import start_hdfs
from one_process import run_commands
from services import missing

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("hdfs")]


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory):
    try:
        cluster = start_hdfs(tmp_path_factory.mktemp("hdfs"))
    except RuntimeError as exc:
        missing(f"HDFS minicluster: {exc}")
    yield cluster
    cluster.stop()


def test_replay_merge_verify_with_archive_and_outputs_on_hdfs(hdfs, tmp_path):
    w = simulate(7, "2024-01-01", rows=8, changes=30)
    local = tmp_path / "archive"
    write_archive(w.snapshot, "canal-json", local / "full" / "part-00000.jsonl")
    write_archive(w.changes, "canal-json", local / "incremental" / "part-00000.jsonl")
    env = {**os.environ, "HADOOP_CONF_DIR": str(hdfs.conf_dir), "PYSPARK_PYTHON": sys.executable}
    root = f"{hdfs.url}/cdc/shop"
    archive, replay, state = f"{root}/archive", f"{root}/replay", f"{root}/state"
    upload = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                             "from cdc_jobs.io import storage; storage.upload_tree(Path(sys.argv[1]), sys.argv[2])",
                             str(local), archive], env=env, capture_output=True, text=True, timeout=120)
    assert upload.returncode == 0, upload.stderr[-3000:]

    # The three commands in one process of their own (one Spark start-up), as spark-submit runs them: the shared
    # test session predates HADOOP_CONF_DIR.
    out = run_commands([["replay", "--source", archive, "--format", "canal-json", "--out", replay],
                        ["merge", "--replay", replay, "--out", state],
                        ["verify", "--replay", replay, "--state", state]],
                       env, {"counts": (replay, "counts.json"), "state": (state, "_state.json"),
                             "report": (state, "verification.json")}, context=lambda: hdfs.log.read_text()[-2000:])

    assert out["counts"]["records_read"] == len(w.snapshot) + len(w.changes)
    assert {t: s["rows"] for t, s in out["state"]["tables"].items()} == {t: len(r) for t, r in w.final.items()}
    assert out["report"] and all(t["ok"] for t in out["report"])
