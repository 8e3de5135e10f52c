"""Fixtures of the job tests: a Kafka-protocol broker (Tansu, see kafka_broker.py) shared by the whole session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # kafka_broker is a helper module beside the tests

from kafka_broker import Broker, start_broker  # noqa: E402


@pytest.fixture(scope="session")
def kafka_broker() -> Broker:
    broker = start_broker()
    yield broker
    broker.stop()
