"""The Kafka bench's peers (``bench/kafka_replay.py``) read a topic and write as many rows per table as cdc-replay's
``events/`` of the same topic, decoded in the JVM: a broken peer fails here rather than as a meaningless ratio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import kafka_replay  # noqa: E402
from test_peers import rows_per_table  # noqa: E402  (beside this file)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.mark.parametrize("fmt", ["canal-json", "dts-avro"])
def test_the_kafka_peer_writes_the_rows_cdc_replay_writes(fmt, spark, kafka_broker, tmp_path, monkeypatch):
    topic = f"bench-peer-{fmt}"
    kafka_broker.create_topic(topic, 2)
    kafka_replay.produce(spark, kafka_broker.bootstrap, topic, fmt, 2, 200, rows=20, changes=150)
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "on")  # restored after the test (ours sets it for its run)
    kafka_replay.ours(kafka_broker.bootstrap, topic, fmt, tmp_path / "ours", "on")
    kafka_replay.peer(spark, kafka_broker.bootstrap, topic, fmt, tmp_path / "peer")
    expected = rows_per_table(spark, tmp_path / "ours")
    assert len(expected) == 2 and sum(expected.values()) >= 140, expected
    assert rows_per_table(spark, tmp_path / "peer") == expected
