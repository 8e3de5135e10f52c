"""The Spark task both DAGs use: `spark-submit cdc_jobs/spark_main.py <job> ...` with the connections a job
needs. Connection work is the hooks' (hooks/reference.py, hooks/kafka.py); this class only wires them in."""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import sys
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from cdc_jobs import jvm
from cdc_jobs.jvm.options import QUICK_JIT_BELOW, java_options, jit_options, with_jit

from ..hooks.spark_submit import CdcSparkSubmitHook

log = logging.getLogger(__name__)


def spark_conf() -> dict[str, str]:
    """Settings every job needs whatever the cluster: UTC everywhere (the same timestamp text gave different
    epochs under other zones), a shuffle width that suits the data rather than Spark's default 200, and Delta
    Lake's SQL extension and catalog where its jar is installed (``spark_jars``)."""
    return {
        "spark.sql.session.timeZone": "UTC",
        # the driver maps the classes it loads from the archive built at install time (cdc_jobs.jvm.class_archive);
        # the JIT is added when the task runs (``_get_hook``)
        **java_options(),
        "spark.sql.shuffle.partitions": os.environ.get("CDC_REPLAY_SHUFFLE_PARTITIONS", "8"),
        **(jvm.DELTA_CONF if jvm.runtime_jars() else {}),
    }


def spark_jars() -> str | None:
    """spark-submit --jars: the jars ``python -m cdc_jobs.jvm`` built at install time (the project's JVM decode,
    Delta Lake, Spark's Kafka source, s3a), the same list a CLI session loads (cdc_jobs.spark.session)."""
    return ",".join(map(str, jvm.runtime_jars())) or None


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


def job_input_bytes(master: str, argv: list[Any]) -> int | None:
    """The size of what a replay, merge or verify reads (a replay's archive files, None for Kafka; the Parquet of
    the outputs merge and verify read) where it decides the JIT (a local master), from the job's arguments as the
    job's own parser reads them; None otherwise."""
    job = str(argv[0]) if argv else None
    if not master.startswith("local") or job not in QUICK_JIT_BELOW:
        return None
    from cdc_jobs.cli import build_parser
    from cdc_jobs.commands import merge, replay, verify

    sized = {"replay": replay.input_bytes, "merge": merge.input_bytes, "verify": verify.input_bytes}[job]
    try:
        return sized(build_parser().parse_args([str(a) for a in argv]))
    except (SystemExit, Exception) as exc:  # a bad argument or a missing source is the job's to report, with
        # its own clear error; here it only means the JVM keeps its default JIT
        log.info("JIT: what the %s reads could not be sized here (%s); keeping the JVM's default", job, exc)
        return None


class CdcSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit of one cdc-replay job.

    application_args: the job's arguments, from `cdc_jobs.contract` (`JobArgs.to_argv`).
    reference_conn_id: the source database for verify (ReferenceDatabaseHook -> $CDC_REPLAY_REFERENCE_URL).
    kafka_conn_id: Kafka client settings for replay (KafkaClientConfigHook -> $CDC_REPLAY_KAFKA_CONFIG_JSON).

    Secrets from those connections reach spark-submit through its process environment only (see
    hooks/spark_submit.py): never its command line, never a rendered template field, never the task log.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "reference_conn_id", "kafka_conn_id")
    ui_color = "#fde9d9"

    def __init__(self, *, reference_conn_id: str | None = None, kafka_conn_id: str | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("conf", spark_conf())
        kwargs.setdefault("jars", spark_jars())
        super().__init__(**kwargs)
        self.reference_conn_id = reference_conn_id
        self.kafka_conn_id = kafka_conn_id

    def secret_env(self) -> dict[str, str]:
        from ..hooks.kafka import KafkaClientConfigHook
        from ..hooks.reference import ReferenceDatabaseHook

        env: dict[str, str] = {}
        if self.reference_conn_id:
            env |= ReferenceDatabaseHook(self.reference_conn_id).job_env()
        if self.kafka_conn_id:
            env |= KafkaClientConfigHook(self.kafka_conn_id).job_env()
        return env

    def _get_hook(self) -> CdcSparkSubmitHook:
        hook = CdcSparkSubmitHook.adopt(super()._get_hook(), self.secret_env())
        # The JIT follows where the job runs and what it reads (cdc_jobs.jvm.options), both known only now: the
        # connection's master, and the archive or outputs the job reads.
        master = hook._connection["master"]
        argv = self.application_args or []
        job = str(argv[0]) if argv else ""
        hook._conf = with_jit(hook._conf, jit_options(master, job_input_bytes(master, argv), job))
        return hook

    def execute(self, context: Any) -> None:
        env = {str(k): str(v) for k, v in (self.env_vars or {}).items()}
        # Spark's Python workers must run the interpreter that has the project installed.
        env.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", os.environ.get("PYSPARK_DRIVER_PYTHON") or sys.executable)
        # The task log is not a terminal: the job prints plain progress lines every few seconds.
        env.setdefault("CDC_REPLAY_PROGRESS", "plain")
        if self._spark_binary is None and shutil.which("spark-submit") is None:
            # `airflow` started without the virtualenv on PATH: use the spark-submit next to this Python.
            candidate = os.path.join(os.path.dirname(sys.executable), "spark-submit")
            if os.path.exists(candidate):
                self._spark_binary = candidate
        self.env_vars = env  # not secret: safe anywhere, including --conf on YARN/Kubernetes
        return super().execute(context)
