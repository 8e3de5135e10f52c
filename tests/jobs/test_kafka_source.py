"""Reading archived CDC from Kafka topics with read_kafka (Spark's Kafka source over the driver's plan): windows,
parallel bounded splits, checkpoints, tombstones, empty partitions, offsets that hold no visible record (aborted
transactions and their markers), and a replay window through the CLI.

Windows are cut by the records' Kafka timestamps (the producer's send time here): each test produces in phases
separated by real time and puts the window edges into the gaps between phases (kafka_broker.wait_ms_boundary)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from types import SimpleNamespace

import pytest
from pyspark.sql import functions as F

from cdc_codecs import get_codec
from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_source import plan_kafka, read_kafka, read_plan
from cdc_jobs.commands.sample import simulate
from cdc_jobs.schemas import RAW_SPARK

from kafka_broker import wait_ms_boundary

_topics = itertools.count()


def fresh_topic(broker, partitions: int, prefix: str = "cdc") -> str:
    name = f"{prefix}-{next(_topics)}"
    broker.create_topic(name, partitions)
    return name


def canal_messages(seed: int, n: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of real Canal JSON messages: one per event of a simulated day of changes."""
    w = simulate(seed, "2024-01-01", rows=5, changes=n)
    codec = get_codec("canal-json")
    msgs = [(m.key, m.value) for e in (w.snapshot + w.changes) for m in codec.encode([e])]
    return msgs[:n]


def dts_avro_messages(n: int) -> list[tuple[bytes, bytes, object]]:
    """(key, value, event) of DTS Avro messages (binary, not UTF-8), one per simulated event."""
    codec = get_codec("dts-avro")
    w = simulate(11, "2024-01-01", rows=3, changes=n)
    return [(m.key, m.value, e) for e in (w.snapshot + w.changes) for m in codec.encode([e])][:n]


def produce_round_robin(broker, topic, partitions, messages, headers=None):
    recs = [(i % partitions, k, v, headers(i) if headers else None) for i, (k, v) in enumerate(messages)]
    positions = broker.produce(topic, recs)
    return {pos: (k, v, h) for pos, (_, k, v, h) in zip(positions, recs)}


def rows_of(df) -> list[tuple]:
    return [(r.pos_source, r.pos_partition, r.pos_offset, r.pos_key, r.value,
             [(h.key, h.value) for h in r.pos_headers], r.pos_timestamp_ms) for r in df.collect()]


@pytest.fixture(scope="module")
def phased(kafka_broker):
    """Topic 'cdc-*' (3 partitions) and 'other-*' (2), produced in three phases A | B | C with boundaries
    m1 (A/B) and m2 (B/C). B holds a tombstone and headers with binary values."""
    b = kafka_broker
    cdc, other = fresh_topic(b, 3), fresh_topic(b, 2, "other")
    msgs = canal_messages(3, 60)
    a = produce_round_robin(b, cdc, 3, msgs[:12])
    m1 = wait_ms_boundary()
    inside = msgs[12:42] + [(b"shop.customers\x017", None)]  # a tombstone: key kept, value null
    bb = produce_round_robin(b, cdc, 3, inside, headers=lambda i: [("trace", bytes([i, 0, 255])), ("n", b"%d" % i)])
    bo = produce_round_robin(b, other, 2, msgs[42:47])
    m2 = wait_ms_boundary()
    c = produce_round_robin(b, cdc, 3, msgs[47:56])
    wait_ms_boundary()
    return SimpleNamespace(cdc=cdc, other=other, a=a, b=bb, b_other=bo, c=c, m1=m1, m2=m2, msgs=msgs)


def keyed(topic, produced):
    return Counter((topic, p, o) for (p, o) in produced)


@pytest.mark.kafka
@pytest.mark.spark
def test_window_reads_every_record_inside_exactly_once_in_bounded_parallel_splits(spark, kafka_broker, phased):
    df = read_kafka(spark, kafka_broker.url(phased.cdc), phased.m1, phased.m2, 0, 4, {})
    assert df.schema == RAW_SPARK
    assert df.rdd.getNumPartitions() > 1
    per_split = df.groupBy(F.spark_partition_id().alias("split")).agg(
        F.count(F.lit(1)).alias("n"), F.countDistinct("pos_partition").alias("kafka_partitions")).collect()
    assert max(r.n for r in per_split) <= 4 and all(r.kafka_partitions == 1 for r in per_split)

    rows = rows_of(df)
    got = Counter((t, p, o) for t, p, o, *_ in rows)
    assert got == keyed(phased.cdc, phased.b)  # each inside record once; nothing from A or C
    assert max(got.values()) == 1
    for t, p, o, key, value, headers, ts in rows:
        k, v, h = phased.b[(p, o)]
        assert (key, value, headers) == (k, v, h)
        assert phased.m1 < ts < phased.m2  # the Kafka timestamp is kept
    tombstones = [r for r in rows if r[4] is None]
    assert [(r[3]) for r in tombstones] == [b"shop.customers\x017"]

    # The values are the archived Canal messages: they decode into the events that were produced.
    codec = get_codec("canal-json")
    from cdc_codecs import Position
    for t, p, o, key, value, *_ in rows[:5]:
        if value is not None:
            [event] = codec.decode(value, Position(t, p, o))
            assert event.qualified_table.startswith("shop.")


@pytest.mark.kafka
@pytest.mark.spark
def test_lookback_widens_the_start_and_several_topics_are_read_together(spark, kafka_broker, phased):
    url = kafka_broker.url(phased.cdc, phased.other)
    df = read_kafka(spark, url, phased.m2, None, phased.m2 - phased.m1, 1000, {}, lookahead_ms=0)
    got = Counter((t, p, o) for t, p, o, *_ in rows_of(df))
    assert got == keyed(phased.cdc, phased.b) + keyed(phased.cdc, phased.c) + keyed(phased.other, phased.b_other)


@pytest.mark.kafka
@pytest.mark.spark
def test_lookahead_covers_records_appended_after_until(spark, kafka_broker, phased):
    # until = m1 with a margin reaching m2: records of B (appended after m1, e.g. late Kafka timestamps of
    # events before m1) are read; the replay's event-time filter decides which ones belong to the window.
    df = read_kafka(spark, kafka_broker.url(phased.cdc), None, phased.m1, phased.m2 - phased.m1, 1000, {})
    got = Counter((t, p, o) for t, p, o, *_ in rows_of(df))
    assert got == keyed(phased.cdc, phased.a) + keyed(phased.cdc, phased.b)


@pytest.mark.kafka
@pytest.mark.spark
def test_checkpoint_continues_exactly_where_the_previous_plan_ended(spark, kafka_broker, phased):
    url = kafka_broker.url(phased.cdc)
    first = plan_kafka(url, phased.m1, phased.m2, 0, {})
    checkpoint = {"sources": first.checkpoint_sources()}
    assert {(s["source"], s["partition"]) for s in checkpoint["sources"]} == {(phased.cdc, p) for p in range(3)}
    before = Counter((t, p, o) for t, p, o, *_ in rows_of(read_plan(spark, first, 3, {})))
    after = Counter((t, p, o) for t, p, o, *_ in rows_of(read_kafka(spark, url, None, None, 0, 3, {}, checkpoint)))
    assert not (set(before) & set(after))
    assert before + after == keyed(phased.cdc, phased.b) + keyed(phased.cdc, phased.c)


@pytest.mark.kafka
@pytest.mark.spark
def test_plan_is_bounded_at_planning_time_and_rereads_the_same_records(spark, kafka_broker):
    topic = fresh_topic(kafka_broker, 2, "grow")
    first = produce_round_robin(kafka_broker, topic, 2, canal_messages(5, 10))
    plan = plan_kafka(kafka_broker.url(topic), None, None, 0, {})
    produce_round_robin(kafka_broker, topic, 2, canal_messages(6, 6))  # appended after planning
    one = rows_of(read_plan(spark, plan, 3, {}))
    two = rows_of(read_plan(spark, plan, 3, {}))
    assert Counter((t, p, o) for t, p, o, *_ in one) == keyed(topic, first)
    assert sorted(one, key=repr) == sorted(two, key=repr)


@pytest.mark.kafka
@pytest.mark.spark
def test_empty_partitions_and_empty_windows(spark, kafka_broker):
    topic = fresh_topic(kafka_broker, 4, "sparse")
    produced = kafka_broker.produce(topic, [(p, b"k", b"v%d" % i) for i, p in enumerate([0, 2, 2, 0, 2])])
    plan = plan_kafka(kafka_broker.url(topic), None, None, 0, {})
    assert [(r.partition, r.start, r.end) for r in plan.ranges] == [(0, 0, 2), (1, 0, 0), (2, 0, 3), (3, 0, 0)]
    df = read_plan(spark, plan, 1, {})
    assert df.rdd.getNumPartitions() == 5  # one split per record here; empty partitions need none
    assert sorted((p, o) for _, p, o, *_ in rows_of(df)) == sorted(produced)
    boundary = wait_ms_boundary()
    empty = read_kafka(spark, kafka_broker.url(topic), boundary, None, 0, 10, {})
    assert empty.schema == RAW_SPARK and empty.count() == 0


@pytest.mark.kafka
@pytest.mark.spark
def test_dts_avro_messages_keep_bytes_and_positions_and_decode_to_the_archived_events(spark, kafka_broker):
    from cdc_codecs import Position

    msgs = dts_avro_messages(12)
    topic = fresh_topic(kafka_broker, 3, "dts")
    produced = produce_round_robin(kafka_broker, topic, 3, [(k, v) for k, v, _ in msgs])
    event_of = {pos: msgs[i][2] for i, pos in enumerate(produced)}
    rows = rows_of(read_kafka(spark, kafka_broker.url(topic), None, None, 0, 2, {}))
    assert {(p, o): (k, v) for _, p, o, k, v, *_ in rows} == {pos: kv[:2] for pos, kv in produced.items()}
    codec = get_codec("dts-avro")
    for t, p, o, _, value, *_ in rows:
        [got] = codec.decode(value, Position(t, p, o))
        want = event_of[(p, o)]
        # The source's job is the right record at the right position: table, op and row key. (Value fidelity
        # of the codec itself is tested with the codecs.)
        pk = lambda e: tuple((e.after or e.before or {}).get(k) for k in e.primary_key)  # noqa: E731
        assert (got.qualified_table, got.op, got.primary_key, pk(got)) == \
               (want.qualified_table, want.op, want.primary_key, pk(want))


@pytest.mark.kafka
def test_unknown_topic_is_a_usage_error(kafka_broker):
    with pytest.raises(UsageError, match="topic 'no-such-topic' does not exist"):
        plan_kafka(kafka_broker.url("no-such-topic"), None, None, 0, {})


# --- Through the replay: Spark's Kafka source, the decode path, checkpoints, dead letters ------------------

def _first_at_or_after(stamps: list[int], t: int) -> int:
    return next((i for i, ts in enumerate(stamps) if ts >= t), len(stamps))


@pytest.mark.kafka
@pytest.mark.spark
def test_replay_window_gives_the_expected_events_dead_letter_and_checkpoint_and_continues_from_it(
        kafka_broker, tmp_path):
    """Canal messages stamped with their event times (3 partitions, offsets from 0), one undecodable message
    inside the window. Read by Spark's Kafka source with a 30-minute lookback: the events of [since, until),
    the bad message as a dead letter at its position with its bytes, and per partition a checkpoint at the
    first record stamped at or after until; a continuation from it gives exactly [until, until2)."""
    import pyarrow.parquet as pq

    from cdc_codecs.records import from_record
    from cdc_jobs import cli

    topic = fresh_topic(kafka_broker, 3, "window")
    codec = get_codec("canal-json")
    w = simulate(41, "2024-03-01", rows=6, changes=90)
    events = sorted(w.snapshot + w.changes, key=lambda e: e.event_time_ms)
    recs = [(i % 3, m.key, m.value, [], e.event_time_ms) for i, e in enumerate(events) for m in codec.encode([e])]
    since, until, until2 = (events[len(events) * k // 4].event_time_ms for k in (1, 2, 3))
    bad_at = next(i for i, r in enumerate(recs) if since + 1_800_000 <= r[4] < until)  # inside, after the lookback
    recs[bad_at] = (*recs[bad_at][:2], b'{"database":"shop","table":', [], recs[bad_at][4])
    positions = kafka_broker.produce(topic, recs)
    where = dict(zip(positions, recs))

    def replay(out, *more):
        assert cli.main(["replay", "--source", kafka_broker.url(topic), "--format", "canal-json", "--lookback",
                         "30m", "--max-records-per-split", "7", "--max-dead-letters", "1", "--out", str(out),
                         *more]) == 0
        got = [from_record(r) for r in pq.read_table(out / "events").to_pylist()]
        dead = pq.read_table(out / "dead_letters").to_pylist() if (out / "dead_letters").exists() else []
        return got, dead, json.loads((out / "checkpoint.json").read_text())

    def expected(lo, hi):
        return sorted(((p, o) for (p, o), r in where.items() if lo <= r[4] < hi and (p, o) != positions[bad_at]))

    first = tmp_path / "first"
    got, dead, checkpoint = replay(first, "--since", str(since), "--until", str(until))
    assert sorted((e.position.partition, e.position.offset) for e in got) == expected(since, until)
    for e in got:  # each event is the one produced at its position, stamped with its Kafka timestamp
        assert e.position.source == topic and e.position.timestamp_ms == where[(e.position.partition,
                                                                                e.position.offset)][4]
    assert [(d["pos_source"], d["pos_partition"], d["pos_offset"], d["dl_raw"]) for d in dead] == \
           [(topic, *positions[bad_at], b'{"database":"shop","table":')]
    stamps = {p: [r[4] for (q, _), r in sorted(where.items()) if q == p] for p in range(3)}
    assert [(s["source"], s["partition"], s["next_offset"]) for s in checkpoint["sources"]] == \
           [(topic, p, _first_at_or_after(stamps[p], until)) for p in range(3)]

    second = tmp_path / "second"
    got2, dead2, _ = replay(second, "--checkpoint", str(first / "checkpoint.json"), "--until", str(until2))
    assert sorted((e.position.partition, e.position.offset) for e in got2) == expected(until, until2)
    assert dead2 == []


@pytest.mark.kafka
@pytest.mark.spark
def test_records_of_aborted_transactions_are_not_replayed(spark, kafka_broker):
    """committed A | aborted B | committed C on one partition: B's records (and the transaction markers) hold
    offsets inside the planned range, but only A and C are read, unless the settings ask for read_uncommitted."""
    from kafka import KafkaProducer

    topic = fresh_topic(kafka_broker, 1, "txn")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, transactional_id=f"test-{topic}",
                             enable_idempotence=True, acks="all")
    producer.init_transactions()
    sent: dict[str, list[bytes]] = {}
    try:
        for name, commit in (("a", True), ("b", False), ("c", True)):
            producer.begin_transaction()
            sent[name] = [b"%s%d" % (name.encode(), i) for i in range(5)]
            for value in sent[name]:
                producer.send(topic, key=b"k", value=value, partition=0)
            producer.flush()
            (producer.commit_transaction if commit else producer.abort_transaction)()
    finally:
        producer.close()

    plan = plan_kafka(kafka_broker.url(topic), None, None, 0, {})
    assert plan.checkpoint_sources() == [{"source": topic, "partition": 0, "next_offset": 18}]  # 15 + 3 markers
    committed = [r.value for r in read_plan(spark, plan, 4, {}).orderBy("pos_offset").collect()]
    assert committed == sent["a"] + sent["c"]
    everything = read_plan(spark, plan, 4, {"isolation_level": "read_uncommitted"}).orderBy("pos_offset").collect()
    assert [r.value for r in everything] == sent["a"] + sent["b"] + sent["c"]
