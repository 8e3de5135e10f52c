"""The Spark task used by both DAGs: SparkSubmitOperator plus the two things every cdc-replay job needs at
execute time - the project's Python for the Spark workers, and secrets from Airflow connections handed over as
environment variables (never as arguments, never in rendered template fields)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
from typing import Any
from urllib.parse import quote

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from .plan import KAFKA_CONFIG_ENV, REFERENCE_ENV

# SQLAlchemy drivers the project installs, by Airflow connection type.
SQLALCHEMY_DRIVERS = {"mysql": "mysql+pymysql", "postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2"}


def spark_conf() -> dict[str, str]:
    """Settings every job needs whatever the cluster: UTC everywhere (the same timestamp text gave different
    epochs under other zones), and a shuffle width that suits the data rather than Spark's default 200."""
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.sql.shuffle.partitions": os.environ.get("CDC_REPLAY_SHUFFLE_PARTITIONS", "8"),
    }


def spark_task_args() -> dict[str, Any]:
    """Retries and timeouts for long Spark jobs: a lost executor or a broker hiccup is worth a retry after a
    pause; a job that runs for hours past its budget is stuck, not slow. Tunable per deployment by env."""
    return {
        "retries": int(os.environ.get("CDC_REPLAY_SPARK_RETRIES", "2")),
        "retry_delay": dt.timedelta(minutes=float(os.environ.get("CDC_REPLAY_SPARK_RETRY_MINUTES", "5"))),
        "retry_exponential_backoff": True,
        "max_retry_delay": dt.timedelta(minutes=30),
        "execution_timeout": dt.timedelta(hours=float(os.environ.get("CDC_REPLAY_SPARK_TIMEOUT_HOURS", "6"))),
    }


def sqlalchemy_url(conn: Any) -> str:
    """An Airflow connection -> SQLAlchemy URL. An explicit `sqlalchemy_url` in the extra wins."""
    extra = conn.extra_dejson or {}
    if extra.get("sqlalchemy_url"):
        return extra["sqlalchemy_url"]
    driver = SQLALCHEMY_DRIVERS.get(conn.conn_type, conn.conn_type)
    auth = ""
    if conn.login:
        auth = quote(conn.login, safe="") + (f":{quote(conn.password, safe='')}" if conn.password else "") + "@"
    port = f":{conn.port}" if conn.port else ""
    return f"{driver}://{auth}{conn.host or ''}{port}/{conn.schema or ''}"


class CdcSparkSubmitOperator(SparkSubmitOperator):
    """`spark-submit cdc_jobs/spark_main.py <subcommand> ...` with the connections a job needs.

    reference_conn_id: Airflow connection of the source database; its SQLAlchemy URL goes to the job as
        $CDC_REPLAY_REFERENCE_URL (verify --reference env:CDC_REPLAY_REFERENCE_URL).
    kafka_conn_id: Airflow connection whose extra holds Kafka client settings (security.protocol, sasl_*...);
        handed to the job as the JSON object in $CDC_REPLAY_KAFKA_CONFIG_JSON.

    In local and client mode the variables reach spark-submit through its process environment only. On YARN
    and Kubernetes the provider turns env_vars into --conf options, so there prefer Spark-side secrets.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "reference_conn_id", "kafka_conn_id")
    ui_color = "#fde9d9"

    def __init__(self, *, reference_conn_id: str | None = None, kafka_conn_id: str | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("conf", spark_conf())
        super().__init__(**kwargs)
        self.reference_conn_id = reference_conn_id
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Any) -> None:
        from airflow.sdk import BaseHook

        env = {str(k): str(v) for k, v in (self.env_vars or {}).items()}
        # Spark's Python workers must run the interpreter that has the project installed.
        env.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", os.environ.get("PYSPARK_DRIVER_PYTHON") or sys.executable)
        if self._spark_binary is None and shutil.which("spark-submit") is None:
            # `airflow` started without the virtualenv on PATH: use the spark-submit next to this Python.
            candidate = os.path.join(os.path.dirname(sys.executable), "spark-submit")
            if os.path.exists(candidate):
                self._spark_binary = candidate
        if self.reference_conn_id:
            env[REFERENCE_ENV] = sqlalchemy_url(BaseHook.get_connection(self.reference_conn_id))
        if self.kafka_conn_id:
            env[KAFKA_CONFIG_ENV] = json.dumps(BaseHook.get_connection(self.kafka_conn_id).extra_dejson or {})
        # Set after templates were rendered (and recorded): the values never show in the UI's rendered fields.
        self.env_vars = env
        return super().execute(context)
