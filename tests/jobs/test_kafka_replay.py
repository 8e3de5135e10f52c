"""End to end through the CLI: CDC archived in a Kafka topic -> `cdc-replay replay` -> re-encoded into another
topic (--sink) -> replayed again gives the same canonical events; a --checkpoint run picks up only what was
appended since."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_codecs import get_codec
from cdc_codecs.records import from_record
from cdc_jobs import cli
from cdc_jobs.sample import simulate

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def canonical(out: Path) -> list[tuple]:
    """What must survive a re-encode: table, op, key, images, event time (not the archive position)."""
    events = [from_record(r) for r in pq.read_table(out / "events").to_pylist()]
    return sorted(((e.qualified_table, e.op.value, e.event_time_ms, tuple(sorted((e.before or {}).items())),
                    tuple(sorted((e.after or {}).items()))) for e in events), key=repr)


def produce_events(broker, topic, events, partitions=3):
    """One Canal message per event, partitioned by its key like a CDC pipeline (all changes of a row in one
    partition, in order)."""
    codec = get_codec("canal-json")
    recs = []
    for e in events:
        for m in codec.encode([e]):
            recs.append((zlib.crc32(m.key) % partitions, m.key, m.value))
    broker.produce(topic, recs)
    return len(recs)


def test_kafka_replay_reencode_to_kafka_and_replay_again_gives_the_same_events(kafka_broker, tmp_path):
    b = kafka_broker
    b.create_topic("e2e-in", 3)
    b.create_topic("e2e-out", 3)
    w = simulate(23, "2024-01-01", rows=15, changes=60)
    n = produce_events(b, "e2e-in", w.snapshot + w.changes)
    cfg = tmp_path / "kafka.json"
    cfg.write_text(json.dumps({"batch_size": 1}))  # Tansu's end offsets need one record per batch

    first, second = tmp_path / "first", tmp_path / "second"
    assert cli.main(["replay", "--source", b.url("e2e-in"), "--format", "canal-json", "--to-format", "canal-json",
                     "--sink", b.url("e2e-out"), "--kafka-config", str(cfg), "--max-records-per-split", "20",
                     "--out", str(first)]) == 0
    counts = json.loads((first / "counts.json").read_text())
    assert counts["records_read"] == n and counts["dead_letters"] == 0
    assert {s["source"] for s in counts["sources"]} == {"e2e-in"}
    written = counts["encoded"]["sink"]["written"]
    assert written == counts["encoded"]["messages"] > 0

    assert cli.main(["replay", "--source", b.url("e2e-out"), "--format", "canal-json", "--kafka-config", str(cfg),
                     "--out", str(second)]) == 0
    assert json.loads((second / "counts.json").read_text())["records_read"] == written
    assert canonical(second) == canonical(first)
    assert len(canonical(first)) == len(w.snapshot) + len(w.changes)

    # Continue from the first run's checkpoint after more changes were archived: only the new ones come.
    more = simulate(29, "2024-01-02", rows=3, changes=10)
    m = produce_events(b, "e2e-in", more.snapshot + more.changes)
    third = tmp_path / "third"
    assert cli.main(["replay", "--source", b.url("e2e-in"), "--format", "canal-json", "--kafka-config", str(cfg),
                     "--checkpoint", str(first / "checkpoint.json"), "--out", str(third)]) == 0
    assert json.loads((third / "counts.json").read_text())["records_read"] == m
