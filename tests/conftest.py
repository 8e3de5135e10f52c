"""Shared fixtures. One SparkSession per test process: starting Spark costs 6-10 s here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cdc_jobs.jvm.options import QUICK_JIT

REPO = Path(__file__).resolve().parents[1]
FORMATS_DIR = REPO.parent / "shared" / "formats"

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("CDC_REPLAY_SHUFFLE_PARTITIONS", "4")
# Every JVM of the tests (the in-process SparkSession, CLI subprocesses, the Airflow tasks' spark-submits, which
# inherit this environment) runs small data: the C1 compiler alone (``QUICK_JIT``, with the code cache C1 alone
# would shrink to 48 MB kept at 240 MB) and the serial collector spare the two cores the C2 compiler and parallel
# GC threads would take (measured: the same Spark tests ran 1.8x faster on this 2-core machine under load). The
# test session's JVM lives for the whole run, yet C2 did not pay there either: test_merge.py beside two other
# test files, 251 s on C1 alone against 240 s on the default tiers, whose compiler threads made the other files
# 198 s -> 223 s. Product runs choose their own (``cdc_jobs.jvm.options``).
os.environ.setdefault("SPARK_SUBMIT_OPTS", f"{QUICK_JIT} -XX:+UseSerialGC")


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the broker runs on one xdist worker (``--dist loadgroup``), so a suite starts one
    Kafka JVM (30-50 s on a loaded 2-core machine), not one per worker. A test already in a group keeps it."""
    for item in items:
        if "kafka_broker" in getattr(item, "fixturenames", ()) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("kafka"))
