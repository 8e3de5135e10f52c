"""Write re-encoded messages to a Kafka topic from the executors: exactly-once (transactional, the default) or
at-least-once (idempotent producer).

Both modes send each Spark task's rows in order with ``acks=all`` and idempotence on, so a broker-side retry can
neither lose nor duplicate a message and per-partition order holds; messages are keyed (the encoder computed the
key from table and primary key), so all changes of one row land in one Kafka partition in the order the task sends
them. Only per-task counts come back to the driver.

Transactional mode (how Flink's and Kafka Streams' exactly-once sinks work):
* every Spark task writes all its messages in ONE Kafka transaction whose ``transactional.id`` is derived from the
  run (output directory, window, topic) and the task's partition number: ``cdc-replay-<run digest>-<partition>``.
  A retried or speculative attempt of the task has the same id, so its ``init_transactions`` fences the earlier
  attempt (whose sends then fail with ProducerFencedError) and aborts what that attempt left open: a
  ``read_committed`` consumer sees each message of a task once, whatever Spark retried.
* a re-run of the same window (same output, same window) has the same ids. To keep it from committing the same
  messages a second time, each transaction also commits, atomically with the messages, a consumer-group offset
  (group = the transactional id, on partition 0 of the sink topic) whose value is a digest of the task's
  messages. A later attempt with the same id compares: same digest -> it aborts its transaction (the identical
  messages are already committed; nothing new becomes visible); different content -> it commits. Replay's
  encoding is deterministic (same archive and window -> same partitions, same order), which this relies on.
  (The digest sits in the offset value because brokers keep offsets but not always offset metadata.)
Idempotent mode: no transactions, for brokers or ACLs without them; a retried task or a re-run writes again.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Iterable, Iterator, Mapping, Optional

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_config import describe, for_producer, parse_kafka_url

COUNT_SCHEMA = "messages long"
TASK_SCHEMA = "partition int, messages long, outcome string"
MODES = ("transactional", "idempotent")
# Longer than the default 60 s: one transaction holds a whole Spark task's output. Brokers cap it with
# transaction.max.timeout.ms (default 15 min); a client config file can set it lower or higher.
TRANSACTION_TIMEOUT_MS = 900_000
DIGEST_BITS = 62  # a committed group offset is a signed 64-bit number
_FLUSH_EVERY = 10_000  # bounds the memory of pending delivery futures


class KafkaWriteError(RuntimeError):
    user_facing = True


def _producer(bootstrap: list[str], client_config: Mapping[str, Any], transactional_id: Optional[str] = None):
    from kafka import KafkaProducer

    settings = for_producer(client_config)
    settings.update(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    if transactional_id is not None:
        settings.setdefault("transaction_timeout_ms", TRANSACTION_TIMEOUT_MS)
        settings["transactional_id"] = transactional_id
    try:
        return KafkaProducer(**settings)
    except Exception as exc:
        raise KafkaWriteError(f"Kafka {','.join(bootstrap)}: cannot connect ({type(exc).__name__}: {exc}); "
                              f"client settings in use: {describe(client_config)}") from None


def _check(futures: list, topic: str) -> None:
    for f in futures:
        if f.failed():
            raise KafkaWriteError(f"Kafka {topic}: a message was not acknowledged: {f.exception!r}")


def _send_all(producer, topic: str, rows: Iterable[tuple], on_message=None) -> int:
    """Send (key, value, headers) rows in order, flushing and checking acknowledgements every _FLUSH_EVERY
    messages so a failure surfaces early and memory stays bounded; returns how many were acknowledged."""
    sent, futures = 0, []
    for key, value, headers in rows:
        hdrs = [(h["key"], h["value"]) for h in headers or ()]
        if on_message is not None:
            on_message(key, value, hdrs)
        futures.append(producer.send(topic, key=key, value=value, headers=hdrs))
        if len(futures) >= _FLUSH_EVERY:
            producer.flush()
            _check(futures, topic)
            sent += len(futures)
            futures = []
    producer.flush()
    _check(futures, topic)
    return sent + len(futures)


def _batch_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple]:
    for batch in batches:
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else [None] * len(keys)
        yield from zip(keys, values, headers)


def send_batches(batches: Iterable[pa.RecordBatch], bootstrap: list[str], topic: str,
                 client_config: Mapping[str, Any]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: send every row, wait for all acknowledgements, yield the number sent."""
    producer = _producer(bootstrap, client_config)
    try:
        sent = _send_all(producer, topic, _batch_rows(batches))
    finally:
        producer.close()
    yield pa.RecordBatch.from_pydict({"messages": [sent]}, schema=pa.schema([("messages", pa.int64())]))


def _sink_target(encoded_df: DataFrame, url: str) -> tuple[list[str], str, list[str]]:
    kurl = parse_kafka_url(url, "--sink")
    if len(kurl.topics) != 1:
        raise UsageError(f"--sink: name exactly one topic to write to, got {', '.join(kurl.topics)}")
    missing = {"key", "value"} - set(encoded_df.columns)
    if missing:
        raise UsageError(f"write_kafka: the encoded frame lacks column(s) {', '.join(sorted(missing))}")
    return list(kurl.bootstrap), kurl.topics[0], [c for c in ("key", "value", "headers") if c in encoded_df.columns]


def write_kafka(encoded_df: DataFrame, url: str, client_config: Mapping[str, Any]) -> int:
    """Send ``encoded_df`` (key binary, value binary, headers array<struct<key string, value binary>>) to the one
    topic of ``url``, keeping each Spark partition's row order. Returns the number of messages acknowledged."""
    bootstrap, topic, cols = _sink_target(encoded_df, url)
    config = dict(client_config)
    counts = encoded_df.select(*cols).mapInArrow(
        lambda it: send_batches(it, bootstrap, topic, config), COUNT_SCHEMA)
    total = counts.agg(F.sum("messages").alias("n")).collect()[0]["n"]
    return int(total or 0)


# ------------------------------------------------------------------------------------------- transactional

def run_digest(out: str, since_ms: Optional[int], until_ms: Optional[int], topic: str) -> str:
    """What identifies a run for its transactional ids: the output it writes, its window and the topic. The
    same replay run again (or retried by a scheduler) gets the same ids; another window or output never does."""
    ident = json.dumps([os.path.abspath(out[len("file://"):] if out.startswith("file://") else out),
                        since_ms, until_ms, topic])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def transactional_id(run: str, partition: int) -> str:
    return f"cdc-replay-{run}-{partition}"


class _Digest:
    """Digest of a task's messages in send order (length-prefixed, so field boundaries count)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, key: Optional[bytes], value: Optional[bytes], headers: list) -> None:
        for part in (key, value, *(b for k, v in headers for b in (k.encode(), v))):
            if part is None:
                self.h.update(b"\xff\xff\xff\xff")
            else:
                self.h.update(len(part).to_bytes(4, "big"))
                self.h.update(part)

    def offset(self) -> int:
        """The digest as a non-negative number that fits a committed group offset (never 0 or -1)."""
        return int.from_bytes(self.h.digest()[:8], "big") >> (64 - DIGEST_BITS) | 1


def committed_digest(bootstrap: list[str], client_config: Mapping[str, Any], group: str, topic: str
                     ) -> Optional[int]:
    """The digest a previous attempt with this transactional id committed, or None."""
    from kafka import KafkaConsumer, TopicPartition

    from cdc_jobs.io.kafka_config import for_consumer

    settings = for_consumer(client_config)
    # read_committed makes the offset fetch require stable offsets: an offset committed by a transaction whose
    # commit marker the group coordinator has not applied yet is waited for (the broker answers
    # UNSTABLE_OFFSET_COMMIT, retried), not reported as "nothing committed". Without it, a re-run started right
    # after a commit saw no digest on Apache Kafka and committed the same messages a second time.
    settings.update(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                    isolation_level="read_committed")
    consumer = KafkaConsumer(**settings)
    try:
        return consumer.committed(TopicPartition(topic, 0))
    finally:
        consumer.close()


def send_transaction(rows: Iterable[tuple], bootstrap: list[str], topic: str, client_config: Mapping[str, Any],
                     txn_id: str, producer_factory=None) -> tuple[int, str]:
    """Send ``rows`` ((key, value, headers) in order) in one transaction with id ``txn_id``. Returns (messages,
    outcome): "committed", "already committed" (an earlier attempt committed identical messages: this
    transaction is aborted), or "empty" (no rows: no transaction)."""
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return 0, "empty"
    producer = (producer_factory or _producer)(bootstrap, client_config, txn_id)
    sent, digest, open_txn = 0, _Digest(), False
    try:
        # Fences every earlier attempt with this id and waits for (or aborts) what it left open, so the
        # digest read next is final: no other attempt can commit any more.
        producer.init_transactions()
        previous = committed_digest(bootstrap, client_config, txn_id, topic)
        producer.begin_transaction()
        open_txn = True
        sent = _send_all(producer, topic, _chain(first, rows), on_message=digest.add)
        if previous == digest.offset():
            producer.abort_transaction()
            open_txn = False
            return sent, "already committed"
        producer.send_offsets_to_transaction(
            {TopicPartition(topic, 0): OffsetAndMetadata(digest.offset(), "", -1)}, txn_id)
        producer.commit_transaction()
        open_txn = False
        return sent, "committed"
    except BaseException as exc:
        # a fenced producer's successor aborted it (Kafka 2.7+ answers a fenced produce with INVALID_PRODUCER_EPOCH)
        if open_txn and type(exc).__name__ not in ("ProducerFencedError", "InvalidProducerEpochError"):
            try:
                producer.abort_transaction()
            except Exception:  # noqa: BLE001 - the broker's transaction timeout ends it; report the first error
                pass
        raise
    finally:
        producer.close()


def _chain(first, rest):
    yield first
    yield from rest


def send_batches_transactional(batches: Iterable[pa.RecordBatch], bootstrap: list[str], topic: str,
                               client_config: Mapping[str, Any], run: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: this task's messages in one transaction named after the run and the task's partition."""
    from pyspark import TaskContext

    partition = TaskContext.get().partitionId()

    def rows() -> Iterator[tuple]:
        for batch in batches:
            keys = batch.column("key").to_pylist()
            values = batch.column("value").to_pylist()
            headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else [None] * len(keys)
            yield from zip(keys, values, headers)

    sent, outcome = send_transaction(rows(), bootstrap, topic, client_config, transactional_id(run, partition))
    yield pa.RecordBatch.from_pydict({"partition": [partition], "messages": [sent], "outcome": [outcome]},
                                     schema=pa.schema([("partition", pa.int32()), ("messages", pa.int64()),
                                                       ("outcome", pa.string())]))


def write_kafka_transactional(encoded_df: DataFrame, url: str, client_config: Mapping[str, Any], run: str
                              ) -> dict[str, Any]:
    """``write_kafka`` with one transaction per Spark task (see the module notes). Returns what counts.json
    records: messages sent, how many are newly committed, how many a previous run had already committed."""
    bootstrap, topic, cols = _sink_target(encoded_df, url)
    config = dict(client_config)
    tasks = encoded_df.select(*cols).mapInArrow(
        lambda it: send_batches_transactional(it, bootstrap, topic, config, run), TASK_SCHEMA).collect()
    committed = sum(t.messages for t in tasks if t.outcome == "committed")
    already = sum(t.messages for t in tasks if t.outcome == "already committed")
    return {"mode": "transactional", "written": committed + already, "committed": committed,
            "already_committed": already, "transactional_id_prefix": transactional_id(run, 0)[:-2],
            "transactions": sum(1 for t in tasks if t.outcome != "empty")}
