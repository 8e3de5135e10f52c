"""cdc_replay: one replay on demand, from the trigger form.

validate (conf -> exact CLI arguments, or a clear failure naming the field) -> jobs: replay -> [merge on?] ->
merge -> verify. Wiring only: the form, the arguments and the task group come from the installed provider
`cdc_replay_airflow` (derived from the job contract `cdc_jobs.contract`), the work from the Spark jobs.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from cdc_codecs.registry import FORMATS  # a plain dict of names; loads no codec
from cdc_replay_airflow import pipelines as pl
from cdc_replay_airflow.params import build_params
from cdc_replay_airflow.task_groups import replay_merge_verify

DAG_ID = "cdc_replay"


def _pipeline_choices() -> tuple[list[str], dict[str, str], str]:
    """Names for the form's pipeline list. Reads one small YAML file; any problem only shortens the list and is
    shown in the field's description (the validate task reports it in full), it never breaks parsing."""
    path = pl.configured_path()
    if not path:
        return [], {}, "No pipelines file is configured (Airflow Variable cdc_replay_pipelines or env " \
                       "CDC_REPLAY_PIPELINES): use an ad-hoc source."
    try:
        pipes = pl.load(path)
    except pl.PipelinesFileError as exc:
        return [], {}, f"The pipelines file cannot be used: {exc}"
    labels = {n: f"{n} - {p.format} - {p.description or ', '.join(p.sources)}" for n, p in pipes.valid.items()}
    labels |= {n: f"{n} (INVALID: fix the pipelines file)" for n in pipes.errors}
    return pipes.names, labels, f"Pipelines from {path}."


_names, _labels, _note = _pipeline_choices()

with DAG(
    dag_id=DAG_ID,
    description="Replay an archived CDC stream on Spark, merge it into table state and verify it",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    params=build_params(formats=sorted(FORMATS), pipelines=_names, pipeline_labels=_labels, pipelines_note=_note),
    max_active_runs=4,
    dagrun_timeout=dt.timedelta(hours=24),
    tags=["cdc-replay"],
    doc_md=__doc__,
) as dag:

    @task(retries=0)
    def validate(**context) -> dict:
        """Check the form's values together and turn them into the jobs' arguments; fail with the field's
        name before any Spark job starts."""
        from airflow.sdk.exceptions import AirflowFailException
        from cdc_replay_airflow import runtime
        from cdc_replay_airflow.plan import ConfError, manual_plan

        conf = {k: v for k, v in context["params"].items()}
        try:
            pipelines = runtime.load_pipelines_or_none() if conf.get("pipeline") else None
            return manual_plan(conf, pipelines, dag_id=DAG_ID, run_id=context["run_id"], formats=FORMATS)
        except (ConfError, pl.PipelinesFileError) as exc:
            raise AirflowFailException(f"cdc_replay: invalid trigger conf: {exc}") from None

    replay_merge_verify()(validate())
