"""Progress of long jobs (jobs/progress.py): the plain lines a log shows while Spark works, from Spark's own
status tracker, and nothing at all for a command that never starts Spark."""

from __future__ import annotations

import io
import threading
import time

import pytest

from cdc_jobs.progress import Reporter, SparkStatus

pytestmark = pytest.mark.spark


def test_plain_lines_show_stages_tasks_records_and_rate(spark):
    out = io.StringIO()  # not a terminal: plain lines, as in an Airflow task log
    spark.range(0, 1_000, numPartitions=2).repartition(3).collect()  # an earlier job: not this command's
    with Reporter("cdc-replay replay", stream=out, interval=0.2, context=lambda: spark.sparkContext) as rep:
        # Two shuffles, so several stages run one after the other while the reporter polls.
        df = spark.range(0, 300_000, numPartitions=4).selectExpr("id % 97 AS k", "id")
        df.repartition(3, "k").groupBy("k").count().repartition(2).collect()
        time.sleep(0.5)  # one more poll after the job
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("cdc-replay replay: progress: stages ") for line in lines), lines
    last = rep.snapshots[-1]
    assert last.stages_done == last.stages_total > 0 and last.tasks_done == last.tasks_total > 0
    # The source stage's rows, once (later stages read them from shuffles), and only this command's: the
    # shared session's earlier jobs are not counted.
    assert last.records == 300_000
    assert f"tasks {last.tasks_done}/{last.tasks_total}" in lines[-1] and "records read (" in lines[-1]


def test_a_poll_costs_the_same_few_py4j_calls_however_many_jobs_the_session_ran(spark, monkeypatch):
    """A poll is a handful of py4j round trips, not two per job the session ran: a shared session (tests,
    bench, a notebook) keeps 1,000 jobs, and listing them element by element made each poll cost 0.2 s."""
    for _ in range(60):  # more finished jobs than any one poll should pay for
        spark.range(0, 10, numPartitions=1).count()
    spark.range(0, 10_000, numPartitions=4).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    status = SparkStatus(spark.sparkContext)
    status.snapshot(time.monotonic())  # the first poll reads every stage once, later ones only new/active stages
    client = spark.sparkContext._gateway._gateway_client
    commands: list[str] = []
    send = client.send_command

    poller = threading.get_ident()

    def counted(command: str, *args, **kwargs):
        # The poll's own calls: not another thread's in this shared session, nor py4j releasing Java objects whose
        # Python proxies the garbage collector happened to free meanwhile ("m\nd\n..."), which CI once counted.
        if threading.get_ident() == poller and not command.startswith("m\nd\n"):
            commands.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    snap = status.snapshot(time.monotonic())
    monkeypatch.undo()
    assert snap.stages_total >= 60 and snap.stages_done == snap.stages_total
    assert len(commands) <= 10, commands


def test_no_output_without_spark():
    out = io.StringIO()
    with Reporter("cdc-replay formats", stream=out, interval=0.05, context=lambda: None):
        time.sleep(0.3)
    assert out.getvalue() == ""


def test_lines_go_to_the_stderr_of_the_moment(spark, monkeypatch):
    """A host that swaps sys.stderr after this module was imported (an Airflow task's log, pytest's capture) gets
    the lines; the stream of import time may be closed by then."""
    import sys

    swapped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", swapped)
    with Reporter("cdc-replay replay", interval=0.2, context=lambda: spark.sparkContext):
        spark.range(0, 10_000, numPartitions=2).repartition(2).collect()
        time.sleep(0.5)
    assert swapped.getvalue().startswith("cdc-replay replay: progress: stages "), swapped.getvalue()


def test_a_replay_shows_the_records_it_read_not_its_splits(spark, tmp_path, capsys, monkeypatch):
    """The archive's reader feeds Spark the numbers of its splits and yields the rows itself, so Spark's input
    metrics count the splits: the progress line of a replay must still say how many records it read."""
    from cdc_jobs import cli
    from cdc_jobs.io import files

    monkeypatch.setattr(files, "SPLIT_BYTES", 100_000)  # the sample's ~0.5 MB in several splits
    monkeypatch.setattr(files, "MIN_SPLIT_BYTES", 10_000)
    monkeypatch.setenv("CDC_REPLAY_PROGRESS", "plain")
    monkeypatch.setenv("CDC_REPLAY_PROGRESS_INTERVAL", "0.2")
    archive = tmp_path / "archive"
    assert cli.main(["sample", "--format", "canal-json", "--out", str(archive)]) == 0
    capsys.readouterr()
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path / "r")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "progress:" in line]
    assert lines and ", 973 records read (" in lines[-1], lines
    assert int(lines[-1].split("tasks ")[1].split("/")[1].split(",")[0]) > 3, lines  # several splits
