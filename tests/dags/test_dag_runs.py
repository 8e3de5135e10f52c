"""Real DAG runs on local Spark and SQLite (`airflow dags test`, in a subprocess so Airflow's configuration is
this test's own). Slow: each Spark task is a spark-submit with its own JVM."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from .conftest import REPO, airflow_env

pytestmark = [pytest.mark.airflow, pytest.mark.xdist_group("airflow-runs")]
BIN = Path(sys.executable).parent
DAY_MS = 86_400_000


def run(cmd: list[str], env: dict, log: Path, timeout: int = 1500) -> None:
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO)
    if proc.returncode != 0:
        tail = log.read_text()[-6000:]
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}; end of {log}:\n{tail}")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-home")
    run([str(BIN / "airflow"), "db", "migrate"], airflow_env(home), home / "migrate.log", timeout=600)
    return home


def table_rows(state: Path) -> dict[str, list]:
    """Every merged table's full contents (all columns, metadata included), in a canonical row order."""
    out = {}
    for table_dir in sorted(p for p in state.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        rows = ds.dataset(table_dir, format="parquet").to_table().to_pylist()
        out[table_dir.name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


def test_cdc_replay_dag_on_the_sample_archive(home, tmp_path):
    archive, expected = tmp_path / "archive", tmp_path / "expected.json"
    run([str(BIN / "cdc-replay"), "sample", "--format", "canal-json", "--out", str(archive), "--rows", "40",
         "--changes", "120", "--expected", str(expected)], airflow_env(home), tmp_path / "sample.log")
    out = tmp_path / "run"
    conf = {"source": str(archive), "format": "canal-json", "to_format": "oms-default", "tables": ["shop.*"],
            "out_dir": str(out)}
    run([str(BIN / "airflow"), "dags", "test", "cdc_replay", "-c", json.dumps(conf)], airflow_env(home),
        tmp_path / "dags-test.log")
    reports = list((home / "reports" / "cdc_replay").glob("*/verification.json"))
    assert len(reports) == 1 and reports[0].with_suffix(".html").exists()
    results = {r["table"]: r for r in json.loads(reports[0].read_text())}
    truth = json.loads(expected.read_text())
    assert set(results) == set(truth) == {"shop.customers", "shop.order_items"}
    for table, rows in truth.items():
        assert results[table]["ok"] and results[table]["actual_rows"] == len(rows), results[table]
    assert set(table_rows(out / "state")) == set(truth)
    assert (out / "replay" / "encoded").is_dir()  # the target format was written


def three_day_archive(path: Path) -> dict:
    """The sample database, its full sync at 2024-01-01 00:00 and its changes spread over three days."""
    from cdc_jobs.sample import simulate, write_archive

    w = simulate(seed=11, day="2024-01-01", rows=30, changes=150)
    day0 = int(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    snapshot = [e.with_(event_time_ms=day0) for e in w.snapshot]
    # Stretch the day of changes over three days, order kept: [day0 + 1 min, day0 + 3 days - 3 min).
    changes = [e.with_(event_time_ms=day0 + 60_000 + (e.event_time_ms - day0) * 2997 // 1000) for e in w.changes]
    assert {dt.datetime.fromtimestamp(e.event_time_ms / 1000, dt.timezone.utc).day for e in changes} == {1, 2, 3}
    write_archive(snapshot + changes, "canal-json", path / "part-00000.jsonl")
    return w.final


def test_three_daily_runs_equal_one_replay_of_the_three_days(home, tmp_path):
    archive = tmp_path / "archive"
    final = three_day_archive(archive)
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        "pipelines:\n"
        "  shop:\n"
        f"    source: {{archive: {archive}}}\n"
        "    format: canal-json\n"
        "    start: 2024-01-01\n"
        f"    targets: {{state_root: {tmp_path / 'state'}}}\n"
        "  broken:\n"  # reported by its own tasks; must not stop 'shop'
        f"    source: {{archive: {archive}}}\n"
        "    format: canal-jsn\n"
        "    start: 2024-01-01\n"
        f"    targets: {{state_root: {tmp_path / 'state'}}}\n")
    env = airflow_env(home, CDC_REPLAY_PIPELINES=str(pipelines))
    seen: set[Path] = set()
    for day in ["2024-01-01", "2024-01-02", "2024-01-03"]:
        # A manual run (what `dags test DATE` creates) gets the last complete interval before DATE: pass the
        # next day to replay `day`. The run fails (the broken pipeline); 'shop' must be complete regardless.
        run_date = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
        log = tmp_path / f"daily-{day}.log"
        with open(log, "w") as fh:
            subprocess.run([str(BIN / "airflow"), "dags", "test", "cdc_daily_replay", run_date], env=env,
                           stdout=fh, stderr=subprocess.STDOUT, timeout=1500, cwd=REPO)
        text = log.read_text()
        assert "pipeline 'broken': field 'format': unknown format 'canal-jsn'" in text
        assert (tmp_path / "state" / "shop" / day / "state").is_dir(), text[-6000:]
        new = set((home / "reports" / "cdc_daily_replay").glob("*/shop/verification.json")) - seen
        assert len(new) == 1, f"expected one new report for {day}, got {new}"
        results = json.loads(next(iter(new)).read_text())
        assert results and all(r["ok"] for r in results), results
        seen |= new

    one = tmp_path / "one"
    cli = [str(BIN / "cdc-replay")]
    run(cli + ["replay", "--source", str(archive), "--format", "canal-json", "--since", "2024-01-01T00:00:00Z",
               "--until", "2024-01-04T00:00:00Z", "--out", str(one / "replay")], env, tmp_path / "replay.log")
    run(cli + ["merge", "--replay", str(one / "replay"), "--out", str(one / "state")], env, tmp_path / "merge.log")
    daily = table_rows(tmp_path / "state" / "shop" / "2024-01-03" / "state")
    whole = table_rows(one / "state")
    assert set(daily) == set(final) and {t: len(r) for t, r in daily.items()} == {t: len(r) for t, r in final.items()}
    assert daily == whole
