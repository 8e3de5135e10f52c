"""Write re-encoded messages to a Kafka topic from the executors, with an idempotent producer.

Each Spark task sends its rows in order with ``acks=all`` and idempotence on, so a broker-side retry can neither
lose nor duplicate a message and per-partition order holds; messages are keyed (the encoder computed the key from
table and primary key), so all changes of one row land in one Kafka partition in the order the task sends them.
Only a per-task count comes back to the driver.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .errors import UsageError
from .kafka_config import describe, for_producer, parse_kafka_url

COUNT_SCHEMA = "messages long"
_FLUSH_EVERY = 10_000  # bounds the memory of pending delivery futures


class KafkaWriteError(RuntimeError):
    user_facing = True


def _producer(bootstrap: list[str], client_config: Mapping[str, Any]):
    from kafka import KafkaProducer

    settings = for_producer(client_config)
    settings.update(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    try:
        return KafkaProducer(**settings)
    except Exception as exc:
        raise KafkaWriteError(f"Kafka {','.join(bootstrap)}: cannot connect ({type(exc).__name__}: {exc}); "
                              f"client settings in use: {describe(client_config)}") from None


def _check(futures: list, topic: str) -> None:
    for f in futures:
        if f.failed():
            raise KafkaWriteError(f"Kafka {topic}: a message was not acknowledged: {f.exception!r}")


def send_batches(batches: Iterable[pa.RecordBatch], bootstrap: list[str], topic: str,
                 client_config: Mapping[str, Any]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: send every row, wait for all acknowledgements, yield the number sent."""
    producer = _producer(bootstrap, client_config)
    sent = 0
    try:
        futures: list = []
        for batch in batches:
            keys = batch.column("key").to_pylist()
            values = batch.column("value").to_pylist()
            headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else [None] * len(keys)
            for key, value, hdrs in zip(keys, values, headers):
                futures.append(producer.send(topic, key=key, value=value,
                                             headers=[(h["key"], h["value"]) for h in hdrs or ()]))
                if len(futures) >= _FLUSH_EVERY:
                    producer.flush()
                    _check(futures, topic)
                    sent += len(futures)
                    futures = []
        producer.flush()
        _check(futures, topic)
        sent += len(futures)
    finally:
        producer.close()
    yield pa.RecordBatch.from_pydict({"messages": [sent]}, schema=pa.schema([("messages", pa.int64())]))


def write_kafka(encoded_df: DataFrame, url: str, client_config: Mapping[str, Any]) -> int:
    """Send ``encoded_df`` (key binary, value binary, headers array<struct<key string, value binary>>) to the one
    topic of ``url``, keeping each Spark partition's row order. Returns the number of messages acknowledged."""
    kurl = parse_kafka_url(url, "--sink")
    if len(kurl.topics) != 1:
        raise UsageError(f"--sink: name exactly one topic to write to, got {', '.join(kurl.topics)}")
    missing = {"key", "value"} - set(encoded_df.columns)
    if missing:
        raise UsageError(f"write_kafka: the encoded frame lacks column(s) {', '.join(sorted(missing))}")
    bootstrap, topic, config = list(kurl.bootstrap), kurl.topics[0], dict(client_config)
    cols = [c for c in ("key", "value", "headers") if c in encoded_df.columns]
    counts = encoded_df.select(*cols).mapInArrow(
        lambda it: send_batches(it, bootstrap, topic, config), COUNT_SCHEMA)
    total = counts.agg(F.sum("messages").alias("n")).collect()[0]["n"]
    return int(total or 0)
