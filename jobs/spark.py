"""One way to get a SparkSession, whether launched by spark-submit (Airflow) or by the CLI in-process."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from cdc_jobs import jvm

DEFAULT_MASTER = "local[2]"


def session(app_name: str = "cdc-replay") -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM already exists and its master is the one the Airflow connection chose; a plain
    # `cdc-replay` run starts its own local Spark.
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # The project jar and the connectors (Delta Lake, Kafka, s3a), built at install time by cdc_jobs.jvm;
        # spark-submit gets the same list as --jars (the Airflow operator).
        jars = jvm.runtime_jars()
        if jars:
            builder = builder.config("spark.jars", ",".join(map(str, jars)))
            for key, value in jvm.DELTA_CONF.items():
                builder = builder.config(key, value)
        builder = (
            builder.master(os.environ.get("CDC_REPLAY_SPARK_MASTER", DEFAULT_MASTER))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", os.environ.get("CDC_REPLAY_SHUFFLE_PARTITIONS", "8"))
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
            .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC")
            # Spark keeps 100 generated classes by default; one merge compiles about 100, so a session that runs
            # several jobs (tests, the bench, a notebook) recompiled 54 of them on every merge (0.6 s, and the JIT
            # starts over on the new classes).
            .config("spark.sql.codegen.cache.maxEntries", "1000")
        )
    spark = (
        builder.config("spark.sql.session.timeZone", "UTC")
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
    from cdc_jobs.io.storage import configure_spark

    configure_spark(spark)
    return spark
