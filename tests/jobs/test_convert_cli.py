"""Every format converts through the CLI: the scenario archived in format A is replayed with `--to-format B`, the
re-encoded output is replayed as B, and the events equal the scenario up to A's and B's declared capabilities.
The formats form a ring, so each codec is a source once and a target once through Spark (the pure-codec matrix in
tests/codecs covers every pair)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from cdc_codecs import get_codec
from cdc_codecs.records import from_record
from cdc_codecs.registry import FORMATS
from cdc_codecs.scenario import assert_same_as_scenario, scenario_events
from cdc_jobs import cli
from cdc_jobs.commands.sample import write_archive

pytestmark = pytest.mark.spark

RING = sorted(FORMATS)
PAIRS = [(a, RING[(i + 1) % len(RING)]) for i, a in enumerate(RING)]


def replayed(out):
    rows = pq.read_table(out / "events").to_pylist()
    # Output files are grouped by table; the scenario's order is its event time (one second apart).
    return sorted((from_record(r) for r in rows), key=lambda e: (e.event_time_ms, e.position.offset))


@pytest.mark.parametrize("a,b", PAIRS)
def test_replay_converts_a_to_b(a, b, tmp_path):
    codec_a = get_codec(a)
    suffix = ".dump.jsonl" if codec_a.capabilities.binary else ".jsonl"
    archive = tmp_path / "archive" / f"scenario{suffix}"
    write_archive([e for e in scenario_events() if codec_a.capabilities.carries(e.op)], a, archive)
    converted, back = tmp_path / "converted", tmp_path / "back"
    assert cli.main(["replay", "--source", str(archive.parent), "--format", a, "--to-format", b,
                     "--out", str(converted)]) == 0
    assert cli.main(["replay", "--source", str(converted / "encoded"), "--format", b, "--out", str(back)]) == 0
    caps = [codec_a.capabilities, get_codec(b).capabilities]
    assert_same_as_scenario(replayed(back), caps)


def _python_daemons(spark) -> set[int]:
    """The Python daemons this session's JVM started (Spark keeps one, with its forked workers, per distinct
    Python environment of the context)."""
    import psutil

    def command(process: psutil.Process) -> str:
        try:
            return " ".join(process.cmdline())
        except psutil.NoSuchProcess:  # (ZombieProcess too) it ended after the listing: not a live daemon
            return ""

    jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)
    return {p.pid for p in jvm.children() if "pyspark.daemon" in command(p)}


def test_re_encodes_in_one_session_reuse_its_python_workers(tmp_path):
    """Each run's settings (its encoders' schema folder is in its staging folder) go to the tasks with them, not
    into the context's environment: that made Spark start a new daemon and workers for every re-encode of a
    long-lived session (tests, notebooks, the bench) and keep them, ~3 s and six processes a run."""
    from cdc_jobs.spark import session

    archive = tmp_path / "archive" / "scenario.jsonl"
    canal = get_codec("canal-json").capabilities
    write_archive([e for e in scenario_events() if canal.carries(e.op)], "canal-json", archive)
    runs = []
    for n in range(3):
        out = tmp_path / f"out{n}"
        assert cli.main(["replay", "--source", str(archive.parent), "--format", "canal-json",
                         "--to-format", "debezium-avro-confluent", "--out", str(out)]) == 0
        assert list((out / "encoded" / "_schemas").glob("*.avsc")), "the encoders wrote no schemas"
        runs.append(_python_daemons(session()))
    assert runs[0] and runs[2] <= runs[1] <= runs[0], runs
