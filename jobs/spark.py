"""One way to get a SparkSession, whether launched by spark-submit (Airflow) or by the CLI in-process."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from pyspark.sql import SparkSession

from cdc_jobs import jvm
from cdc_jobs.jvm.options import java_options, jit_options

DEFAULT_MASTER = "local[2]"


def session(app_name: str = "cdc-replay", input_bytes: int | None = None, job: str = "replay") -> SparkSession:
    """The job's session: the one spark-submit started, else a local one started here, its JIT chosen by the
    size of what ``job`` reads (``input_bytes``, None when not known: ``cdc_jobs.jvm.options.jit_options``)."""
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM already exists and its master is the one the Airflow connection chose; a plain
    # `cdc-replay` run starts its own local Spark.
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        master = os.environ.get("CDC_REPLAY_SPARK_MASTER", DEFAULT_MASTER)
        # The project jar and the connectors (Delta Lake, Kafka, s3a), built at install time by cdc_jobs.jvm;
        # spark-submit gets the same list as --jars (the Airflow operator).
        jars = jvm.runtime_jars()
        if jars:
            builder = builder.config("spark.jars", ",".join(map(str, jars)))
        builder = (
            builder.master(master)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", os.environ.get("CDC_REPLAY_SHUFFLE_PARTITIONS", "8"))
            .config(map=java_options(jit_options(master, input_bytes, job)))
            # Spark keeps 100 generated classes by default; one merge compiles about 100, so a session that runs
            # several jobs (tests, the bench, a notebook) recompiled 54 of them on every merge (0.6 s, and the JIT
            # starts over on the new classes).
            .config("spark.sql.codegen.cache.maxEntries", "1000")
        )
    # Merged state is Delta Lake (``cdc_jobs.io.delta_tables``): the session extension adds its SQL (MERGE INTO,
    # DESCRIBE HISTORY, RESTORE, VERSION AS OF) and the catalog resolves ``delta.`path``` tables. Both are static
    # settings, so every session gets them; ``require_delta`` checks the jars came too.
    for key, value in jvm.DELTA_CONF.items():
        builder = builder.config(key, value)
    spark = (
        builder.config("spark.sql.session.timeZone", "UTC")
        # Delta rebuilds a table's snapshot from its log with 50 shuffle partitions by default: 50 tasks for a
        # log of a few files (seconds per table on a busy 2-core machine, for nothing).
        .config("spark.databricks.delta.snapshotPartitions", os.environ.get("CDC_REPLAY_DELTA_SNAPSHOT_PARTITIONS",
                                                                            "2"))
        # Timestamps and maps are exchanged with Python workers as Arrow batches.
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.sources.partitionOverwriteMode", "static")
        # PySpark's "DataFrame query context": on by default, it wraps every Column function and DataFrame call
        # in about five JVM round trips and a walk of the Python stack, to name the calling line in Spark's
        # errors. The merge builds its plan from thousands of such calls (0.9 s of a 1M-event merge's 10 s); our
        # errors name the vendor, field and position themselves.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel(os.environ.get("CDC_REPLAY_SPARK_LOG_LEVEL", "WARN"))
    require_delta(spark)
    from cdc_jobs.io.storage import configure_spark

    configure_spark(spark)
    return spark


def require_delta(spark: SparkSession) -> None:
    """Fail at start, naming what is missing, rather than at the first state write: Spark only logs a warning
    when the session extension's class is not found, and the catalog fails later with a bare ClassNotFound."""
    extension = jvm.DELTA_CONF["spark.sql.extensions"]
    if not spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable(extension):
        raise RuntimeError(
            f"Delta Lake is not on Spark's classpath (class {extension} not found): merged state is written as "
            "Delta tables. `make install` resolves io.delta:delta-spark_4.2_2.13 into the project's runtime jars "
            "(cdc_jobs.jvm, spark.jars); on another cluster add them to its jars.")


@contextmanager
def settings(spark: SparkSession, values: dict[str, str]) -> Iterator[None]:
    """Session settings for the statements inside the block, and what they were after it (unset ones unset
    again). Session-wide: only for a phase whose concurrent statements all want them."""
    before = {key: spark.conf.get(key, None) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
