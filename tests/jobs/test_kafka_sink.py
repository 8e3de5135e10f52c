"""write_kafka: re-encoded messages written from the executors come back from the topic unchanged, keyed, in
order per key, with their source position in the headers."""

from __future__ import annotations

from collections import defaultdict

import pytest

from cdc_codecs import get_codec
from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_sink import write_kafka
from cdc_jobs.io.kafka_source import read_kafka
from cdc_jobs.commands.sample import simulate

SCHEMA = "seq long, key binary, value binary, headers array<struct<key:string,value:binary>>"


def encoded_rows(n: int) -> list[tuple]:
    w = simulate(17, "2024-01-01", rows=10, changes=n)
    codec = get_codec("canal-json")
    rows = []
    for i, e in enumerate(w.snapshot + w.changes):
        for m in codec.encode([e]):
            headers = [("cdc-source", b"archive/part-0.jsonl"), ("cdc-partition", b"-1"),
                       ("cdc-offset", str(i + 1).encode())]
            rows.append((len(rows), m.key, m.value, headers))
    return rows


@pytest.mark.kafka
@pytest.mark.spark
def test_sink_round_trip_same_messages_keyed_and_in_order_per_key(spark, kafka_broker):
    kafka_broker.create_topic("sink-roundtrip", 3)
    url = kafka_broker.url("sink-roundtrip")
    rows = encoded_rows(80)
    # The lead's encoder hands over frames partitioned by key and sorted: the same shape here, 3 tasks.
    df = spark.createDataFrame(rows, SCHEMA).repartition(3, "key").sortWithinPartitions("seq")
    assert write_kafka(df, url, {}) == len(rows)

    back = read_kafka(spark, url, None, None, 0, 1000, {}).collect()
    sent = sorted((k, v, h) for _, k, v, h in rows)
    assert sorted((r.pos_key, r.value, [(h.key, h.value) for h in r.pos_headers]) for r in back) == sent

    by_key = defaultdict(list)
    for r in sorted(back, key=lambda r: (r.pos_partition, r.pos_offset)):
        by_key[r.pos_key].append((r.pos_partition, int(dict((h.key, h.value) for h in r.pos_headers)
                                                            ["cdc-offset"])))
    for key, seen in by_key.items():
        assert len({p for p, _ in seen}) == 1, f"key {key!r} spread over partitions"
        assert [o for _, o in seen] == sorted(o for _, o in seen), f"key {key!r} out of order"
    assert len({r.pos_partition for r in back}) > 1


@pytest.mark.kafka
@pytest.mark.spark
def test_sink_of_an_empty_frame_writes_nothing(spark, kafka_broker):
    kafka_broker.create_topic("sink-empty", 1)
    df = spark.createDataFrame([], SCHEMA)
    assert write_kafka(df, kafka_broker.url("sink-empty"), {}) == 0


def test_sink_needs_exactly_one_topic_and_the_message_columns(spark):
    df = spark.createDataFrame([(b"k", b"v", [])], "key binary, value binary, headers array<struct<key:string,"
                                                   "value:binary>>")
    with pytest.raises(UsageError, match="--sink: name exactly one topic"):
        write_kafka(df, "kafka://127.0.0.1:1/a,b", {})
    with pytest.raises(UsageError, match="lacks column"):
        write_kafka(df.drop("value"), "kafka://127.0.0.1:1/a", {})
