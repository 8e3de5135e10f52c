"""cdc_daily_replay: every configured pipeline, every UTC day.

plan (read the pipelines file) -> per pipeline, the shared task group mapped over the pipelines: prepare ->
replay the data interval -> merge into the previous day's state -> verify -> publish each verified table as an
Asset (`cdc_replay_airflow.assets.table_asset(pipeline, table)`); then per table: one check each. Pipelines and
tables are mapped, so one failing pipeline or table shows as itself and never hides the others.

Each interval writes only <state_root>/<pipeline>/<yyyy-mm-dd>/{replay,state} (published atomically), so a
re-run or a backfill of a day replaces exactly that day. Days run one at a time (max_active_runs=1) because
each continues from the day before; after re-running a day, clear the later days to rebuild them in order.

Intervals: a scheduled run or a backfill run for logical date D replays [D, D+1 day) UTC. A manual run
(`airflow dags test cdc_daily_replay D`, or "Trigger" in the UI) gets the last *complete* interval before D,
i.e. `airflow dags test cdc_daily_replay 2024-01-02` replays 2024-01-01.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task
from airflow.sdk.definitions.timetables.interval import CronDataIntervalTimetable

from cdc_replay_airflow.task_groups import replay_merge_verify

DAG_ID = "cdc_daily_replay"
# Earliest interval the scheduler knows about; each pipeline's own `start` decides its first day.
START = dt.datetime.fromisoformat(os.environ.get("CDC_REPLAY_DAILY_START", "2024-01-01")).replace(
    tzinfo=dt.timezone.utc)

with DAG(
    dag_id=DAG_ID,
    description="Replay each configured CDC pipeline's day, merge it into the previous day's state, verify",
    schedule=CronDataIntervalTimetable("@daily", timezone="UTC"),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=dt.timedelta(hours=23),
    tags=["cdc-replay"],
    doc_md=__doc__,
) as dag:

    @task(retries=0)
    def plan(**context) -> list[dict]:
        """One item per pipeline in the file: its exact job arguments for this interval, or its error."""
        from airflow.sdk.exceptions import AirflowFailException
        from cdc_replay_airflow import pipelines as pl, runtime

        path = runtime.pipelines_path()
        if not path:
            raise AirflowFailException("no pipelines file is configured: set the Airflow Variable "
                                       "cdc_replay_pipelines or the environment variable CDC_REPLAY_PIPELINES")
        try:
            pipes = pl.load(path)
        except pl.PipelinesFileError as exc:
            raise AirflowFailException(str(exc)) from None
        start, end = context["data_interval_start"], context["data_interval_end"]
        if start is None or end is None or start == end:
            raise AirflowFailException("cdc_daily_replay needs a data interval (run it scheduled, with "
                                       "`airflow dags test cdc_daily_replay YYYY-MM-DD` or a backfill)")
        items = runtime.daily_items(pipes, start, end, dag_id=DAG_ID, run_id=context["run_id"])
        for item in items:
            print(f"{item['pipeline']}: " + (item["error"] or item.get("skip") or "planned"))
        return items

    @task(trigger_rule="all_done", retries=0)
    def tables(items: list[dict]) -> list[dict]:
        """Per-table results from the verification reports, whatever happened to each pipeline."""
        from cdc_replay_airflow import runtime

        return runtime.table_results(items)

    @task(retries=0, map_index_template="{{ table_label }}")
    def check_table(result: dict) -> None:
        from airflow.sdk import get_current_context
        from airflow.sdk.exceptions import AirflowFailException
        from cdc_replay_airflow.runtime import describe_table_result

        get_current_context()["table_label"] = f"{result['pipeline']}: {result['table'] or '(no report)'}"
        message = describe_table_result(result)
        if not result["ok"]:
            raise AirflowFailException(message)
        print(message)

    items = plan()
    groups = replay_merge_verify(publish_assets=True).expand(plan=items)
    results = tables(items)
    groups >> results
    check_table.expand(result=results)
