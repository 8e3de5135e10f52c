"""Exactly-once Kafka sink (issue 15 item 4): one transaction per Spark task, transactional ids from run + partition,
fencing of earlier attempts, and no second commit of the same messages by a re-run, proven as a consumer sees it
on Apache Kafka: a ``read_committed`` consumer of the sink topic gets every message once, while a
``read_uncommitted`` one also gets what failed, fenced and re-run attempts wrote and aborted (so these tests
would fail if the sink committed what it should abort). The calls each attempt makes (init/begin/send/
send_offsets/commit or abort) and the committed progress digests are checked too.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from cdc_jobs.io import kafka_sink as ks
from cdc_jobs.io.kafka_sink import (_producer, committed_digest, run_digest, send_transaction, transactional_id,
                                    write_kafka_transactional)

pytestmark = pytest.mark.kafka
CONFIG: dict = {}  # the sink's defaults, as a deployment without a client config file has them


def consume(bootstrap: str, topic: str, isolation: str) -> list[tuple]:
    """(partition, key, value, headers) of everything a consumer with ``isolation`` reads from the topic, in
    offset order per partition; it reads up to the end offsets it is given (the last stable offset for
    read_committed, so no transaction may still be open)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             group_id=None, auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        got: dict[int, list] = {tp.partition: [] for tp in tps}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{topic}: stuck below the end offsets {end}"
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [(r.partition, r.key, r.value, tuple(r.headers)) for r in records]
        return [m for p in sorted(got) for m in got[p]]
    finally:
        consumer.close()


class Recorder:
    """A real transactional producer whose calls are recorded; optionally fails after ``fail_after`` sends."""

    def __init__(self, fail_after: int | None = None):
        self.calls: list[str] = []
        self.fail_after = fail_after
        self.producer = None

    def __call__(self, bootstrap, config, txn_id):
        self.producer = _producer(bootstrap, config, txn_id)
        self.calls.append(f"new {txn_id}")
        rec = self

        class Wrapped:
            def __getattr__(self, name):
                attr = getattr(rec.producer, name)
                if name in ("init_transactions", "begin_transaction", "commit_transaction", "abort_transaction",
                            "send_offsets_to_transaction", "send"):
                    def call(*a, **kw):
                        if name == "send" and rec.fail_after is not None and rec.calls.count("send") >= rec.fail_after:
                            raise ConnectionError("executor lost mid-task")
                        rec.calls.append(name)
                        return attr(*a, **kw)
                    return call
                return attr
        return Wrapped()

    def protocol(self) -> list[str]:
        out = []
        for c in self.calls:
            if not (c == "send" and out and out[-1] == "send*"):
                out.append("send*" if c == "send" else c)
        return out


def rows(n: int, tag: bytes = b"") -> list[tuple]:
    return [(b"k%d" % (i % 3), b"value-%d%s" % (i, tag), [{"key": "cdc-offset", "value": b"%d" % i}])
            for i in range(n)]


def test_ids_are_derived_from_output_window_topic_and_partition(tmp_path):
    a = run_digest(str(tmp_path / "out"), 1, 2, "t")
    assert a == run_digest(str(tmp_path / "out"), 1, 2, "t") == run_digest(f"file://{tmp_path}/out", 1, 2, "t")
    assert len({a, run_digest(str(tmp_path / "out"), 1, 3, "t"), run_digest(str(tmp_path / "other"), 1, 2, "t"),
                run_digest(str(tmp_path / "out"), 1, 2, "u")}) == 4
    assert transactional_id(a, 7) == f"cdc-replay-{a}-7"


def test_one_transaction_per_task_commit_rerun_and_changed_content(kafka_broker):
    b = kafka_broker
    b.create_topic("txn-rerun", 2)
    boot, txn = [b.bootstrap], "cdc-replay-test-rerun-0"
    first = Recorder()
    assert send_transaction(rows(25), boot, "txn-rerun", CONFIG, txn, first) == (25, "committed")
    assert first.protocol() == [f"new {txn}", "init_transactions", "begin_transaction", "send*",
                                "send_offsets_to_transaction", "commit_transaction"]
    digest = committed_digest(boot, CONFIG, txn, "txn-rerun")
    assert digest and digest > 1

    # a re-run of the same window: identical messages, so its transaction is aborted, nothing committed again
    again = Recorder()
    assert send_transaction(rows(25), boot, "txn-rerun", CONFIG, txn, again) == (25, "already committed")
    assert again.protocol()[-1] == "abort_transaction" and "commit_transaction" not in again.calls
    assert committed_digest(boot, CONFIG, txn, "txn-rerun") == digest

    # different content under the same id (the archive changed): committed, with its own digest
    changed = Recorder()
    assert send_transaction(rows(25, b"!"), boot, "txn-rerun", CONFIG, txn, changed) == (25, "committed")
    assert committed_digest(boot, CONFIG, txn, "txn-rerun") not in (None, digest)
    assert send_transaction(iter(()), boot, "txn-rerun", CONFIG, txn, Recorder()) == (0, "empty")

    # committed: the first 25 and the changed 25, each once; the re-run's 25 were written and aborted
    committed = consume(b.bootstrap, "txn-rerun", "read_committed")
    assert Counter(v for _, _, v, _ in committed) == Counter(r[1] for r in rows(25) + rows(25, b"!"))
    everything = consume(b.bootstrap, "txn-rerun", "read_uncommitted")
    assert len(committed) == 50 and len(everything) == 75


def test_a_failed_attempt_aborts_and_the_retry_commits(kafka_broker):
    b = kafka_broker
    b.create_topic("txn-retry", 1)
    boot, txn = [b.bootstrap], "cdc-replay-test-retry-0"
    failing = Recorder(fail_after=10)
    with pytest.raises(ConnectionError):
        send_transaction(rows(30), boot, "txn-retry", CONFIG, txn, failing)
    assert failing.protocol() == [f"new {txn}", "init_transactions", "begin_transaction", "send*",
                                  "abort_transaction"]
    assert committed_digest(boot, CONFIG, txn, "txn-retry") is None  # nothing of the failed attempt committed
    retry = Recorder()
    assert send_transaction(rows(30), boot, "txn-retry", CONFIG, txn, retry) == (30, "committed")
    assert committed_digest(boot, CONFIG, txn, "txn-retry") is not None
    committed = consume(b.bootstrap, "txn-retry", "read_committed")
    assert [v for _, _, v, _ in committed] == [r[1] for r in rows(30)]  # once each, in send order
    # what the failed attempt's abort flushed (up to its 10 sends) only a read_uncommitted consumer sees
    assert 30 <= len(consume(b.bootstrap, "txn-retry", "read_uncommitted")) <= 40


def test_a_retried_task_fences_the_zombie_attempt(kafka_broker):
    from kafka.errors import InvalidProducerEpochError, ProducerFencedError

    b = kafka_broker
    b.create_topic("txn-fence", 1)
    boot, txn = [b.bootstrap], "cdc-replay-test-fence-0"
    zombie = _producer(boot, CONFIG, txn)
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send("txn-fence", key=b"k", value=b"from the first attempt").get(timeout=30)
        # Spark retries the task (the first attempt is slow, not dead): same partition, same id
        assert send_transaction(rows(5), boot, "txn-fence", CONFIG, txn, Recorder()) == (5, "committed")
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):  # Kafka 2.7+ answers the latter
            zombie.send("txn-fence", key=b"k", value=b"zombie writes on").get(timeout=30)
    finally:
        zombie.close(timeout=5)
    # the zombie's acknowledged message was aborted by the retry's init_transactions
    assert [v for _, _, v, _ in consume(b.bootstrap, "txn-fence", "read_committed")] == [r[1] for r in rows(5)]
    assert [v for _, _, v, _ in consume(b.bootstrap, "txn-fence", "read_uncommitted")] == \
        [b"from the first attempt"] + [r[1] for r in rows(5)]


@pytest.mark.spark
def test_spark_tasks_write_one_transaction_each_and_a_rerun_commits_nothing_new(spark, kafka_broker, tmp_path):
    b = kafka_broker
    b.create_topic("txn-spark", 3)
    data = [(i, b"k%d" % (i % 7), b"v%d" % i, [("cdc-offset", b"%d" % i)]) for i in range(60)]
    df = spark.createDataFrame(data, "seq long, key binary, value binary, headers array<struct<key:string,"
                                     "value:binary>>").repartition(3, "key").sortWithinPartitions("seq")
    run = run_digest(str(tmp_path / "out"), 0, 86_400_000, "txn-spark")
    first = write_kafka_transactional(df, b.url("txn-spark"), CONFIG, run)
    assert first["committed"] == first["written"] == 60 and first["already_committed"] == 0
    assert first["transactions"] == 3 and first["transactional_id_prefix"] == f"cdc-replay-{run}"
    assert all(committed_digest([b.bootstrap], CONFIG, transactional_id(run, p), "txn-spark") for p in range(3))
    # the same replay again (a scheduler retry of the whole job): every task finds its messages committed
    again = write_kafka_transactional(df, b.url("txn-spark"), CONFIG, run)
    assert again["committed"] == 0 and again["already_committed"] == again["written"] == 60
    assert ks.MODES == ("transactional", "idempotent")
    committed = consume(b.bootstrap, "txn-spark", "read_committed")
    assert sorted(v for _, _, v, _ in committed) == sorted(v for _, _, v, _ in data)  # 60, each once
    assert_source_order_per_key(committed, data)
    assert len(consume(b.bootstrap, "txn-spark", "read_uncommitted")) == 120  # the re-run's 60, aborted


def assert_source_order_per_key(messages: list[tuple], source: list[tuple]) -> None:
    """Every key's messages sit in one partition of the sink topic, in the order of the source (its seq)."""
    sink: dict[bytes, list] = {}
    for partition, key, _, headers in messages:
        sink.setdefault(key, []).append((partition, int(dict(headers)["cdc-offset"])))
    want: dict[bytes, list[int]] = {}
    for seq, key, *_ in sorted(source):
        want.setdefault(key, []).append(seq)
    assert sink.keys() == want.keys()
    for key, seen in sink.items():
        assert len({p for p, _ in seen}) == 1, f"key {key!r} spread over partitions"
        assert [seq for _, seq in seen] == want[key], f"key {key!r}: sink order differs from the source"


# A driver of its own: Spark retries a failed task only when spark.task.maxFailures > 1, which a local master
# sets as local[N,F] when the session starts (the tests' shared session fails on the first task error).
KILLED_ATTEMPT_DRIVER = r"""
import json, os, sys
from cdc_jobs.io import kafka_sink as ks
from cdc_jobs.spark import session

bootstrap, topic, out = sys.argv[1:4]
spark = session("killed-attempt")
SCHEMA = "seq long, key binary, value binary, headers array<struct<key:string,value:binary>>"


def frame(first, n):
    data = [(i, b"k%d" % (i % 10), b"v%d" % i, [("cdc-offset", b"%d" % i)]) for i in range(first, first + n)]
    return spark.createDataFrame(data, SCHEMA).repartition(3, "key").sortWithinPartitions("seq")


def dying_attempt(batches, *args):
    # The first attempt of task 1 flushes 20 messages into its open transaction, then its process dies
    # (an executor lost mid-transaction): no abort, no commit. Spark runs the task again.
    from pyspark import TaskContext
    import cdc_jobs.io.kafka_sink as sink

    ctx = TaskContext.get()
    if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
        make = sink._producer

        def producer(*a):
            p = make(*a)
            send, sent = p.send, [0]

            def send_or_die(*sa, **kw):
                if sent[0] == 20:
                    p.flush()
                    os._exit(1)
                sent[0] += 1
                return send(*sa, **kw)
            p.send = send_or_die
            return p
        sink._producer = producer
    yield from sink.send_batches_transactional(batches, *args)


url = f"kafka://{bootstrap}/{topic}"
day1 = ks.run_digest(out, 0, 86_400_000, topic)
ks.send_batches_transactional, real = dying_attempt, ks.send_batches_transactional
results = {"killed": ks.write_kafka_transactional(frame(0, 90), url, {}, day1)}
ks.send_batches_transactional = real
results["rerun"] = ks.write_kafka_transactional(frame(0, 90), url, {}, day1)
results["day2"] = ks.write_kafka_transactional(frame(1000, 40), url, {}, ks.run_digest(out, 86_400_000,
                                                                                         172_800_000, topic))
print("RESULTS " + json.dumps(results))
"""


@pytest.mark.spark
def test_a_killed_task_attempt_is_retried_by_spark_and_every_message_lands_once(kafka_broker, tmp_path):
    """Spark task 1's first attempt dies mid-transaction after 20 messages; Spark retries it; the same window is
    then replayed again, and a second window goes to the same topic. A read_committed consumer sees the 90 + 40
    messages once each, in source order per key; a read_uncommitted one also sees the 20 of the killed attempt
    and the re-run's aborted 90."""
    import json
    import os
    import subprocess
    import sys

    b = kafka_broker
    b.create_topic("txn-killed", 3)
    env = dict(os.environ, CDC_REPLAY_SPARK_MASTER="local[2,4]")  # up to 4 attempts per task
    done = subprocess.run([sys.executable, "-c", KILLED_ATTEMPT_DRIVER, b.bootstrap, "txn-killed",
                           str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.split("RESULTS ", 1)[1])
    assert results["killed"]["committed"] == 90 and results["killed"]["transactions"] == 3
    assert "Lost task 1.0" in done.stderr  # Spark saw the attempt die and ran it again
    assert results["rerun"]["committed"] == 0 and results["rerun"]["already_committed"] == 90
    assert results["day2"]["committed"] == 40

    source = [(i, b"k%d" % (i % 10), b"v%d" % i, ()) for i in [*range(90), *range(1000, 1040)]]
    committed = consume(b.bootstrap, "txn-killed", "read_committed")
    assert Counter(v for _, _, v, _ in committed) == Counter(v for _, _, v, _ in source)  # 130, once each
    assert_source_order_per_key(committed, source)
    everything = consume(b.bootstrap, "txn-killed", "read_uncommitted")
    assert len(everything) == 130 + 20 + 90
    assert len(everything) - len(set(v for _, _, v, _ in everything)) == 20 + 90
