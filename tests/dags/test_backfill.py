"""Airflow's own backfill of cdc_daily_replay, executed by a running scheduler (the session's `airflow standalone`):
`airflow backfill create` over two days gives the same table state as one replay + merge of the two days, and
announces each day's verified tables as Asset events. A broken pipeline next to the good one fails its own tasks
(and so each day's run) with its own message, and never stops the good one. (A manual run's interval: test_dagbag.)

Each day continues from the previous day's state, so the backfill must run its days one at a time and in order:
`--max-active-runs 1` (a backfill does not inherit the DAG's max_active_runs=1; with Airflow's default of 10
concurrent backfill runs, day 2 would start before day 1's state exists and fail)."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from deltalake import DeltaTable

from .dag_runs import daily_archive, one_replay, table_rows

pytestmark = [pytest.mark.airflow, pytest.mark.xdist_group("airflow-standalone")]
DAYS = ["2024-01-01", "2024-01-02"]  # the days daily_archive spreads its changes over
VARIABLE = "cdc_replay_pipelines"
BACKFILL_TIMEOUT_S = 900  # two days x (plan, prepare, 3 spark-submits, checks) on a busy 2-core machine


@pytest.mark.spark
def test_backfill_of_days_equals_one_replay_of_them(spark, airflow_standalone, tmp_path):
    sa = airflow_standalone
    archive = tmp_path / "archive"
    final = daily_archive(archive)
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        "pipelines:\n"
        "  shop:\n"
        f"    source: {{archive: {archive}}}\n"
        "    format: canal-json\n"
        f"    start: {DAYS[0]}\n"
        f"    targets: {{state_root: {tmp_path / 'state'}}}\n"
        "  broken:\n"  # reported by its own tasks; must not stop 'shop'
        f"    source: {{archive: {archive}}}\n"
        "    format: canal-jsn\n"
        f"    start: {DAYS[0]}\n"
        f"    targets: {{state_root: {tmp_path / 'state'}}}\n")
    # The tasks read the Variable before the environment: this test's pipelines, without restarting Airflow.
    sa.api("POST", "/variables", {"key": VARIABLE, "value": str(pipelines)})
    try:
        started = time.monotonic()
        for attempt in range(3):
            proc = sa.cli("backfill", "create", "--dag-id", "cdc_daily_replay", "--from-date", DAYS[0],
                          "--to-date", DAYS[-1], "--max-active-runs", "1", timeout=300)
            # SQLite answers "database is locked" at once (no busy wait) when two connections both try to turn a
            # read transaction into a write, as the scheduler and this CLI can: the CLI's transaction is rolled
            # back whole, so trying again is what a user would do. Any other failure fails the test.
            if proc.returncode == 0 or "database is locked" not in proc.stderr:
                break
            time.sleep(2)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        # Backfill runs of a paused DAG are not scheduled (the UI's backfill form unpauses it the same way).
        sa.api("PATCH", "/dags/cdc_daily_replay", {"is_paused": False})
        runs = [r for r in sa.api("GET", "/dags/cdc_daily_replay/dagRuns?limit=50")["dag_runs"]
                if r["run_type"] == "backfill"]
        by_day = {r["data_interval_start"][:10]: r for r in runs}
        assert sorted(by_day) == DAYS, [(r["dag_run_id"], r["data_interval_start"]) for r in runs]
        for day in DAYS:  # in order: each waits for the one before
            r = by_day[day]
            assert r["data_interval_end"][:10] == (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
            remaining = max(60.0, BACKFILL_TIMEOUT_S - (time.monotonic() - started))
            done = sa.wait_for_run("cdc_daily_replay", r["dag_run_id"], timeout=remaining)
            # The run fails ('broken'), with each pipeline's tasks as themselves: 'shop' verified and published.
            assert done["state"] == "failed", f"backfill run for {day}: {done['state']}\n{sa.log_tail()}"
            assert pipeline_states(sa, r["dag_run_id"]) == {
                "jobs.prepare": ["failed", "success"], "jobs.verify": ["success", "upstream_failed"],
                "jobs.publish": ["success", "upstream_failed"]}, f"{day}\n{sa.log_tail()}"
            assert "pipeline 'broken': field 'format': unknown format 'canal-jsn'" in task_logs(
                sa, r["dag_run_id"], "jobs.prepare"), day
            print(f"backfill {day} done at {time.monotonic() - started:.0f}s")
        elapsed = time.monotonic() - started
    finally:
        sa.api("PATCH", "/dags/cdc_daily_replay", {"is_paused": True})
        sa.api("DELETE", f"/variables/{VARIABLE}", ok=(200, 204, 404))

    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["shop"]  # nothing of 'broken'
    assert sorted(p.name for p in (tmp_path / "state" / "shop").iterdir()) == [*DAYS, "tables"]
    for day in DAYS:  # every interval verified its own state
        assert (tmp_path / "state" / "shop" / day / "state").is_dir()
        report = sa.home / "reports" / "cdc_daily_replay" / by_day[day]["dag_run_id"] / "shop" / "verification.json"
        results = json.loads(report.read_text())
        assert results and all(r["ok"] for r in results), results

    backfilled = table_rows(tmp_path / "state" / "shop" / DAYS[-1] / "state")
    assert set(backfilled) == set(final)
    assert {t: len(r) for t, r in backfilled.items()} == {t: len(r) for t, r in final.items()}
    assert backfilled == one_replay(archive, "2024-01-03T00:00:00Z", tmp_path / "one")
    # The stable Delta table per source table: the last day's state, one version per backfilled day.
    published = tmp_path / "state" / "shop" / "tables"
    assert table_rows(published) == backfilled
    assert {DeltaTable(str(published / t)).version() for t in final} == {len(DAYS) - 1}
    # Data-aware scheduling: each day announced every verified table of 'shop' as an Asset event (what the UI's
    # Assets page lists).
    events = [e for e in sa.api("GET", "/assets/events?source_dag_id=cdc_daily_replay&limit=100")["asset_events"]
              if e["source_run_id"] in {r["dag_run_id"] for r in by_day.values()}]
    assert {e["name"] for e in events} == {f"cdc_replay/shop/{t}" for t in final}, events
    assert sorted(e["extra"]["day"] for e in events if e["name"] == "cdc_replay/shop/shop.customers") == DAYS
    print(f"backfill of {len(DAYS)} days by the scheduler: {elapsed:.0f}s")


def pipeline_states(sa, run_id: str) -> dict[str, list[str]]:
    """The states of the mapped tasks (one map index per pipeline) a test looks at, sorted."""
    from urllib.parse import quote

    tis = sa.api("GET", f"/dags/cdc_daily_replay/dagRuns/{quote(run_id, safe='')}/taskInstances?limit=100")
    wanted = ("jobs.prepare", "jobs.verify", "jobs.publish")
    return {task: sorted(t["state"] for t in tis["task_instances"] if t["task_id"] == task) for task in wanted}


def task_logs(sa, run_id: str, task_id: str) -> str:
    """Every attempt's log of a task (all map indexes) in the run, as the UI's log view shows them."""
    folder = sa.home / "logs" / "dag_id=cdc_daily_replay" / f"run_id={run_id}" / f"task_id={task_id}"
    return "\n".join(p.read_text(errors="replace") for p in sorted(folder.rglob("*.log")))
