"""cdc-replay's Airflow provider: everything Airflow needs to run the `cdc-replay` Spark jobs.

Laid out like an Airflow provider package (``apache_airflow_provider`` entry point -> `get_provider_info`):

- ``hooks/``      connections -> what a job needs: Spark submit, Kafka client settings, reference database URL
- ``operators/``  `CdcSparkSubmitOperator` (delegates connection work to the hooks)
- ``pipelines``   the pipelines file model and its validation (schema derived from the job contract)
- ``params``      the `cdc_replay` trigger form (derived from the job contract)
- ``confine``     form values cannot escape: paths under configured roots, no extra arguments
- ``plan``        conf / pipeline + interval -> the jobs' exact arguments (`cdc_jobs.contract`)
- ``task_groups`` the replay -> merge -> verify chain both DAGs use
- ``links``       the verify task's "Verification report" link
- ``assets``      per-table Assets the daily DAG publishes
- ``plugins/``    the Airflow plugin: report pages (FastAPI) with charts, menu entry, link registration

Importing this package is cheap (no Airflow, no pyspark): DAG files import from it on every parse.
"""

from __future__ import annotations

__version__ = "0.1.0"


def get_provider_info() -> dict:
    return {
        "package-name": "cdc-replay",
        "name": "cdc-replay",
        "description": "Replay, merge and verify archived CDC streams on Spark (the cdc-replay jobs).",
        "versions": [__version__],
        # Hooks by module (connections of the standard types are used: spark, mysql/postgres, kafka/generic).
        "hooks": [{"integration-name": "cdc-replay",
                   "python-modules": ["cdc_replay_airflow.hooks.kafka", "cdc_replay_airflow.hooks.reference",
                                      "cdc_replay_airflow.hooks.spark_submit"]}],
        "operators": [{"integration-name": "cdc-replay",
                       "python-modules": ["cdc_replay_airflow.operators.spark_submit"]}],
        "extra-links": ["cdc_replay_airflow.links.VerificationReportLink"],
    }
