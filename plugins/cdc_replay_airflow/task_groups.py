"""The replay -> merge -> verify chain, one task group both DAGs use.

    prepare (print the exact CLI of each job; fail/skip a plan that carries an error/skip)
      -> replay -> merge_enabled? -> merge -> verify (with the "Verification report" link)
      [-> publish: one Asset event per verified table, when `publish_assets`]

`cdc_replay` calls it once with its validated plan; `cdc_daily_replay` maps it over the pipelines (`.expand`),
one map index per pipeline, labelled with the pipeline's name.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import task, task_group

from .links import attach_report_link
from .operators.spark_submit import CdcSparkSubmitOperator, spark_task_args

GROUP_ID = "jobs"
LABEL = ("{{ task_instance.xcom_pull(task_ids='" + GROUP_ID + ".prepare', key='pipeline', "
         "map_indexes=task_instance.map_index) or 'ad-hoc' }}")


def replay_merge_verify(*, publish_assets: bool = False):
    """The task group (decorated function): call it with a plan, or `.expand(plan=plans)`."""

    @task_group(group_id=GROUP_ID)
    def jobs(plan: dict) -> None:
        @task(multiple_outputs=True, retries=0, map_index_template="{{ pipeline_label }}")
        def prepare(plan: dict) -> dict:
            """A plan that carries an error fails here, with the validation message, on its own."""
            from airflow.sdk import get_current_context
            from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

            get_current_context()["pipeline_label"] = plan.get("pipeline") or "ad-hoc"  # names the map index
            if plan.get("error"):
                raise AirflowFailException(plan["error"])
            if plan.get("skip"):
                raise AirflowSkipException(plan["skip"])
            for key in ("replay_args", "merge_args", "verify_args"):
                print(f"{key}: cdc-replay {' '.join(plan[key])}")
            return plan

        @task.short_circuit(ignore_downstream_trigger_rules=True, map_index_template=LABEL)
        def merge_enabled(enabled: bool) -> bool:
            return bool(enabled)

        p = prepare(plan)
        replay = CdcSparkSubmitOperator(
            task_id="replay", name="cdc-replay-replay", application=p["application"],
            application_args=p["replay_args"], kafka_conn_id=p["kafka_conn_id"], map_index_template=LABEL,
            **spark_task_args())
        merge = CdcSparkSubmitOperator(
            task_id="merge", name="cdc-replay-merge", application=p["application"],
            application_args=p["merge_args"], map_index_template=LABEL, **spark_task_args())
        verify = attach_report_link(CdcSparkSubmitOperator(
            task_id="verify", name="cdc-replay-verify", application=p["application"],
            application_args=p["verify_args"], reference_conn_id=p["reference_conn_id"],
            map_index_template=LABEL,
            # a failed verification is a finding, not a transient error
            **(spark_task_args() | {"retries": 0})))
        chain_end: Any = verify
        replay >> merge_enabled(p["merge"]) >> merge >> verify
        if publish_assets:
            from .assets import alias

            @task(retries=0, outlets=[alias()], map_index_template=LABEL)
            def publish(plan: dict, *, outlet_events=None) -> list[str]:
                """One Asset event per table the verification passed for (see assets.py)."""
                from .assets import alias as _alias, table_asset
                from .runtime import verified_tables

                published = []
                for row in verified_tables(plan):
                    outlet_events[_alias()].add(table_asset(plan["pipeline"], row["table"]), extra={
                        "day": plan.get("day"), "state": plan["state_dir"], "rows": row.get("actual_rows"),
                        "report": plan["report"],
                        # the stable Delta table this day was published to (its latest version), if any
                        "table": f"{plan['published']}/{row['table']}" if plan.get("published") else None})
                    published.append(row["table"])
                print(f"published {len(published)} table asset(s): {', '.join(published) or 'none'}")
                return published

            chain_end >> publish(p)

    return jobs
