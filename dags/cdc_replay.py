"""cdc_replay: one replay on demand, from the trigger form.

validate (conf -> exact CLI arguments, or a clear failure) -> replay -> [merge on?] -> merge -> verify.
Wiring only: the arguments come from cdc_replay_common.plan, the work from the `cdc-replay` Spark jobs.
"""

from __future__ import annotations

import datetime as dt
import os
import sys

from airflow.sdk import DAG, Param, task

# The helper package lives next to this file. The DAG processor puts the bundle folder on sys.path, a bare
# DagBag or `python dags/x.py` does not: make the import work the same everywhere.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cdc_codecs.registry import FORMATS  # a plain dict of names; loads no codec
from cdc_replay_common import pipelines as pl
from cdc_replay_common.operators import CdcSparkSubmitOperator, spark_task_args
from cdc_replay_common.links import verify_links

DAG_ID = "cdc_replay"
FORMAT_NAMES = sorted(FORMATS)
# An optional field must accept null: the trigger form sends an empty text box or a cleared list as null and
# marks a field whose type excludes null as required (its section shows an error, the Trigger button stays
# disabled). Lists offer None as their "nothing chosen" entry for the same reason.
OPTIONAL_STRING = ["null", "string"]
# Every list entry needs its own label: the form shows the None entry's label for any value it has no label for.
FORMAT_LABELS = {name: name for name in FORMAT_NAMES}


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


_names, _labels, _pipelines_note = _pipeline_choices()

params = {
    "pipeline": Param(
        None, type=OPTIONAL_STRING, enum=[None, *_names],
        values_display={None: "(none: ad-hoc source below)", **_labels},
        title="Pipeline", section="Source",
        description="A configured pipeline supplies source, format, tables, targets and reference database. "
                    + _pipelines_note),
    "source": Param(
        None, type=OPTIONAL_STRING, title="Ad-hoc source", section="Source",
        description="Instead of a pipeline: an absolute archive path, directory or glob, or "
                    "kafka://HOST:PORT/TOPIC[,TOPIC]."),
    "format": Param(
        None, type=OPTIONAL_STRING, enum=[None, *FORMAT_NAMES],
        values_display={None: "(the pipeline's format)", **FORMAT_LABELS},
        title="Source format", section="Source",
        description="Vendor format of the archived messages. Required for an ad-hoc source."),
    "since": Param(
        None, type=["null", "string"], format="date-time", title="Since (inclusive)", section="Window",
        description="Keep events whose source event time is at or after this instant (UTC if no zone). "
                    "Empty: from the beginning."),
    "until": Param(
        None, type=["null", "string"], format="date-time", title="Until (exclusive)", section="Window",
        description="Keep events before this instant. Empty: to the end."),
    "tables": Param(
        [], type="array", items={"type": "string", "pattern": r"^[^\s,]+$"}, title="Tables", section="Tables",
        description="db.table globs to keep, one per line (e.g. shop.*). Empty: the pipeline's tables, or all."),
    "to_format": Param(
        None, type=OPTIONAL_STRING, enum=[None, *FORMAT_NAMES],
        values_display={None: "(no re-encode / the pipeline's)", **FORMAT_LABELS},
        title="Target format", section="Target",
        description="Re-encode the kept events into this format under <out>/replay/encoded/."),
    "sink": Param(
        None, type=OPTIONAL_STRING, pattern=r"^(|kafka://[^\s/]+/[A-Za-z0-9._-]+)$", title="Sink", section="Target",
        description="Also produce the re-encoded messages to kafka://HOST:PORT/TOPIC (needs a target format)."),
    "out_dir": Param(
        None, type=OPTIONAL_STRING, title="Output directory", section="Target",
        description="Absolute directory for replay/ and state/. Empty: <pipeline state root>/manual/<run id>, "
                    "or $CDC_REPLAY_OUTPUT_ROOT/<run id> for an ad-hoc source."),
    "merge": Param(
        True, type="boolean", title="Merge into table state", section="Merge",
        description="Off: replay only (merge and verify are skipped)."),
    "base": Param(
        None, type=OPTIONAL_STRING, title="Base state", section="Merge",
        description="Absolute path of an earlier merge's state to continue from. Empty: start from nothing."),
    "history": Param(
        False, type="boolean", title="Keep history", section="Merge",
        description="Also write a type-2 history per table."),
    "reference_conn_id": Param(
        None, type=OPTIONAL_STRING, title="Reference database connection", section="Verify",
        description="Airflow connection id of the source database to count rows against (overrides the "
                    "pipeline's). Empty: the pipeline's, or none."),
}

with DAG(
    dag_id=DAG_ID,
    description="Replay an archived CDC stream on Spark, merge it into table state and verify it",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    params=params,
    max_active_runs=4,
    dagrun_timeout=dt.timedelta(hours=24),
    tags=["cdc-replay"],
    doc_md=__doc__,
) as dag:

    @task(multiple_outputs=True, retries=0)
    def validate(**context) -> dict:
        """Check the form's values together and turn them into the jobs' arguments; fail with the field's
        name before any Spark job starts."""
        from airflow.sdk.exceptions import AirflowFailException
        from cdc_replay_common import runtime
        from cdc_replay_common.plan import ConfError, manual_plan

        try:
            pipelines = runtime.load_pipelines_or_none() if context["params"].get("pipeline") else None
            plan = manual_plan(context["params"], pipelines, dag_id=DAG_ID, run_id=context["run_id"],
                               formats=FORMATS)
        except (ConfError, pl.PipelinesFileError) as exc:
            raise AirflowFailException(f"cdc_replay: invalid trigger conf: {exc}") from None
        for key in ("replay_args", "merge_args", "verify_args"):
            print(f"{key}: cdc-replay {' '.join(plan[key])}")
        return plan

    @task.short_circuit(ignore_downstream_trigger_rules=True)
    def merge_enabled(enabled: bool) -> bool:
        return bool(enabled)

    plan = validate()
    replay = CdcSparkSubmitOperator(
        task_id="replay", name="cdc-replay-replay", application=plan["application"],
        application_args=plan["replay_args"], kafka_conn_id=plan["kafka_conn_id"], **spark_task_args())
    merge = CdcSparkSubmitOperator(
        task_id="merge", name="cdc-replay-merge", application=plan["application"],
        application_args=plan["merge_args"], **spark_task_args())
    verify = CdcSparkSubmitOperator(
        task_id="verify", name="cdc-replay-verify", application=plan["application"],
        application_args=plan["verify_args"], reference_conn_id=plan["reference_conn_id"],
        **(spark_task_args() | {"retries": 0}))  # a failed verification is a finding, not a transient error
    verify.operator_extra_links = verify_links()
    replay >> merge_enabled(plan["merge"]) >> merge >> verify
