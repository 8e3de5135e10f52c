"""replay -> merge -> verify on a Spark standalone cluster (a master and a worker, separate JVMs, see
spark_cluster.py), with the archive and every output on the S3 API server: executors read and write s3a://
themselves, and (as root) their /tmp is not the driver's, so a run that hands them a driver-local file fails.
Then a replay continued from the first one's checkpoint and a merge onto the bucket's state with --base. This is
the end-to-end run in the bucket (test_object_store checks what the driver writes there and the commit protocol)."""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable

from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.io import atomic, storage

from one_process import run_commands
from s3_server import BUCKET, s3  # noqa: F401 - the module fixture, beside this file
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


def test_replay_merge_verify_on_a_standalone_cluster_with_everything_in_the_bucket(cluster, s3, tmp_path):
    w = simulate(11, "2024-01-01", rows=8, changes=40)
    local = tmp_path / "archive"
    write_archive(w.snapshot, "canal-json", local / "full" / "part-00000.jsonl")
    write_archive(w.changes, "canal-json", local / "incremental" / "part-00000.jsonl")
    archive = f"s3://{BUCKET}/cluster/archive"
    storage.upload_tree(local, archive)
    storage.write_text(f"{archive}/_SUCCESS", "")  # markers are skipped, as on a local archive
    root = f"s3://{BUCKET}/cluster"
    replay, state, later, later_state = f"{root}/replay", f"{root}/state", f"{root}/replay-next", f"{root}/state-next"

    # The commands as a user runs them, their driver in one process of this machine, their executors on the
    # cluster (one driver start-up: a process per command adds a cold driver and cold executors each).
    env = {**os.environ, "CDC_REPLAY_SPARK_MASTER": cluster.master_url, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = run_commands(
        [["replay", "--source", archive, "--format", "canal-json", "--out", replay],
         ["merge", "--replay", replay, "--out", state],
         ["verify", "--replay", replay, "--state", state],
         # a continuation that reads the first replay's checkpoint from the bucket, merged onto the bucket's state
         ["replay", "--source", f"{archive}/*/part-*.jsonl", "--format", "canal-json", "--checkpoint", replay,
          "--out", later],
         ["merge", "--replay", later, "--base", state, "--out", later_state]],
        env, {"counts": (replay, "counts.json"), "state": (state, "_state.json"),
              "report": (state, "verification.json"), "next": (later_state, "_state.json")},
        context=cluster.log_tail)

    counts = out["counts"]
    assert counts["records_read"] == len(w.snapshot) + len(w.changes)
    assert counts.get("dead_letters", 0) == 0
    assert sorted(s["source"] for s in counts["sources"]) == [f"{archive}/full/part-00000.jsonl",
                                                               f"{archive}/incremental/part-00000.jsonl"]
    assert {t: s["rows"] for t, s in out["state"]["tables"].items()} == {t: len(rows) for t, rows in w.final.items()}
    assert out["report"] and all(t["ok"] for t in out["report"])
    # Each committed table is a Delta table in the bucket: delta-rs reads it from S3 itself (no cdc-replay code).
    s3_options = {"AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true",
                  "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
    for table, rows in w.final.items():
        uri = storage.join(atomic.committed_location(state), table)
        assert DeltaTable(uri, storage_options=s3_options).to_pyarrow_table().num_rows == len(rows), table
    # the continuation found nothing after the checkpoint: the state merged onto the base is the base's
    assert {t: s["rows"] for t, s in out["next"]["tables"].items()} == \
        {t: s["rows"] for t, s in out["state"]["tables"].items()}
