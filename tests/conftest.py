"""Shared fixtures. One SparkSession per test process: starting Spark costs 6-10 s here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORMATS_DIR = REPO.parent / "shared" / "formats"

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("CDC_REPLAY_SHUFFLE_PARTITIONS", "4")
# Every JVM of the tests (the in-process SparkSession, CLI subprocesses, the Airflow tasks' spark-submits, which
# inherit this environment) is short-lived on small data: C1-only JIT and the serial collector spare the two
# cores the C2 compiler and parallel GC threads would take (measured: the same Spark tests ran 1.8x faster on
# this 2-core machine under load). Product runs keep the JVM defaults.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture(scope="session")
def spark():
    from cdc_jobs.spark import session

    s = session("cdc-replay-tests")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def kafka_broker():
    """An Apache Kafka broker (KRaft, tests/jobs/kafka_broker.py) shared by the whole session."""
    sys.path.insert(0, str(Path(__file__).parent / "jobs"))
    from kafka_broker import BrokerUnavailable, start_broker
    from services import missing

    try:
        broker = start_broker()
    except BrokerUnavailable as exc:
        missing(f"no Kafka broker: {exc}")  # skips locally, fails under CI=true
    print(f"\nKafka broker {broker.bootstrap} started in {broker.started_in_s:.1f} s", file=sys.stderr)
    yield broker
    broker.stop()
