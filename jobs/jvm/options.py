"""The JVM options of every job's driver and executors, for a session the CLI starts (``cdc_jobs.spark.session``)
and for the Airflow operator's spark-submit alike: UTC, the driver's class archive (``class_archive``), and the
JIT (``jit_options``, chosen where the master and the input are known: the CLI before it starts Spark, the
operator when its task runs). No pyspark here: the operator builds its conf when Airflow parses a DAG."""

from __future__ import annotations

import os

from cdc_jobs.errors import UsageError
from cdc_jobs.jvm import class_archive

# ``CDC_REPLAY_JIT``. A fresh local job on a small input ends before the C2 compiler's work pays back, and on a
# 2-core machine that work takes the cores from the tasks. C1 alone (``-XX:TieredStopAtLevel=1``) made fresh runs
# (bench/RESULTS.md, "Fresh processes") of `cdc-replay replay` about a fifth faster up to 300k messages (a 150 MB
# archive) and a quarter slower at 1M (500 MB); of `merge` about a third faster up to 1M events (25 MiB of
# Parquet), even at 3M (76 MiB); of `verify` a quarter faster at 300k (8 MiB), no faster at 1M. "auto": C1 alone
# where the master is local and the job's input (``QUICK_JIT_BELOW``: a replay's archive, the Parquet of the
# outputs merge and verify read) is known to be below its size; "quick": always; "peak": never (default tiers).
JIT_MODES = ("auto", "quick", "peak")
# C1 alone also shrinks the JVM's default code cache from 240 MB to 48 MB, which one merge and one verify of a small
# day in one JVM already fill: "CodeCache is full. Compiler has been disabled", and the job runs on in the interpreter
# while the cache is swept (a session merging and verifying a 79-event day: 38.5 MB after the first pair, full in the
# second; test_merge.py's fifteen tests in one JVM, 2 idle cores: 257 s with 48 MB, 207 s with 240 MB).
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
QUICK_JIT_BELOW = {"replay": 200 * 2**20, "merge": 64 * 2**20, "verify": 16 * 2**20}


def jit_options(master: str | None, input_bytes: int | None, job: str = "replay") -> str:
    """The JIT option of ``job`` (its command; one not in ``QUICK_JIT_BELOW`` keeps the JVM's default under "auto")
    for ``master`` (None: not known here, as when Airflow's connection chooses it) that reads ``input_bytes`` (None:
    not known before Spark starts, e.g. a Kafka topic), as ``CDC_REPLAY_JIT`` says; "" for the JVM's default."""
    mode = os.environ.get("CDC_REPLAY_JIT", "auto").strip().lower() or "auto"
    if mode not in JIT_MODES:
        raise UsageError(f"CDC_REPLAY_JIT={mode!r}: expected one of {', '.join(JIT_MODES)}")
    if mode == "auto":  # only where the driver runs the tasks: a cluster's executors have JVMs of their own
        small = input_bytes is not None and input_bytes < QUICK_JIT_BELOW.get(job, 0)
        return QUICK_JIT if small and master is not None and master.startswith("local") else ""
    return QUICK_JIT if mode == "quick" else ""


JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def java_options(jit: str = "") -> dict[str, str]:
    """``spark.driver.extraJavaOptions`` and ``spark.executor.extraJavaOptions`` of a job: UTC, the driver's class
    archive, and ``jit`` (``jit_options``)."""
    return with_jit({JAVA_OPTION_KEYS[0]: class_archive.driver_java_options(),
                     JAVA_OPTION_KEYS[1]: class_archive.BASE_OPTIONS}, jit)


def with_jit(conf: dict[str, str], jit: str) -> dict[str, str]:
    """``conf`` with ``jit`` added to both JVMs' options, after whatever they hold (a deployment's own)."""
    if not jit:
        return conf
    return {**conf, **{key: " ".join(o for o in (conf.get(key, ""), jit) if o) for key in JAVA_OPTION_KEYS}}
