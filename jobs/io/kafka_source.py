"""Kafka topics as a bounded Spark source: planned on the driver, read by Spark's own Kafka source.

The driver asks the brokers once for offsets (``kafka_plan``: the window's edges by timestamp, widened by the
lookback, or a checkpoint's next offsets) and fixes every partition's end, so a replay reads the same records
however often it runs. Spark's Kafka source (spark-sql-kafka-0-10: the Java consumer in the executors) then reads
exactly those offset ranges, ``read_committed``, cut into bounded Spark partitions; the rows keep their positions
(topic, partition, offset, timestamp, key, headers). With a format they are decoded by the same Arrow path as
archived files (``cdc_jobs.transforms.decode``), or, where the format declares its keys' roles and the plan holds
enough records, by the declared decode in the JVM (``cdc_jobs.transforms.jvm_decode.decode_records``): the same rows.

Tombstones (records with a null value) are passed on as rows with ``value`` null: they are not CDC messages,
and the replay counts them as ``tombstones`` (``is_tombstone()``) instead of dropping them silently.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Optional

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_jobs.errors import UsageError
from cdc_jobs.io import codec_env
from cdc_jobs.io.kafka_config import KafkaUrl, describe, for_consumer, parse_kafka_url
from cdc_jobs.io.kafka_java import spark_source_options
from cdc_jobs.io.kafka_plan import OffsetRange, PartitionState, checkpoint_offsets, offset_answer, plan_ranges
from cdc_jobs.schemas import DECODED_SPARK, RAW_SPARK

log = logging.getLogger(__name__)


def is_tombstone() -> Column:
    """RAW rows that are Kafka tombstones (null value; an empty but non-null value is a malformed message)."""
    return F.col("value").isNull()


class KafkaReadError(RuntimeError):
    user_facing = True


@dataclass(frozen=True)
class KafkaPlan:
    """A bounded read: per partition the offsets ``[start, end)`` fixed at planning time."""

    bootstrap: tuple[str, ...]
    ranges: tuple[OffsetRange, ...]
    since_ms: Optional[int] = None
    until_ms: Optional[int] = None
    read_from_ms: Optional[int] = None  # since - lookback, the time asked of offsets_for_times
    read_until_ms: Optional[int] = None  # until + lookahead
    states: tuple[PartitionState, ...] = field(default=(), compare=False)

    def checkpoint_sources(self) -> list[dict[str, Any]]:
        """Every planned partition with ``next_offset`` = its planned end, including partitions that had
        nothing to read, so a continuation never falls back to their beginning."""
        return [{"source": r.topic, "partition": r.partition, "next_offset": r.end} for r in self.ranges]

    def as_dict(self) -> dict[str, Any]:
        return {
            "bootstrap": list(self.bootstrap),
            "since_ms": self.since_ms, "until_ms": self.until_ms,
            "read_from_ms": self.read_from_ms, "read_until_ms": self.read_until_ms,
            "ranges": [{"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end}
                       for r in self.ranges],
        }


# ---------------------------------------------------------------------------------------------------------
# Planning (driver)

def _consumer(bootstrap: tuple[str, ...], client_config: Mapping[str, Any], **extra: Any):
    from kafka import KafkaConsumer

    settings = for_consumer(client_config)
    # Records of aborted transactions are not part of the archive; the user may still choose otherwise.
    settings.setdefault("isolation_level", "read_committed")
    settings.update(bootstrap_servers=list(bootstrap), group_id=None, enable_auto_commit=False,
                    auto_offset_reset="none", **extra)
    try:
        return KafkaConsumer(**settings)
    except Exception as exc:  # the message may not hold settings values, only what went wrong
        raise KafkaReadError(f"Kafka {','.join(bootstrap)}: cannot connect ({type(exc).__name__}: {exc}); "
                             f"client settings in use: {describe(client_config)}") from None


def fetch_states(url: KafkaUrl, client_config: Mapping[str, Any], read_from_ms: Optional[int],
                 read_until_ms: Optional[int]) -> list[PartitionState]:
    """Ask the brokers for every partition's beginning/end offsets and the two ``offsets_for_times``."""
    from kafka import TopicPartition

    consumer = _consumer(url.bootstrap, client_config)
    try:
        tps = []
        for topic in url.topics:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                raise UsageError(f"--source: topic '{topic}' does not exist on {','.join(url.bootstrap)}")
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        beginning = consumer.beginning_offsets(tps)
        end = consumer.end_offsets(tps)
        since = _answers(consumer, tps, read_from_ms)
        until = _answers(consumer, tps, read_until_ms)
    finally:
        consumer.close()
    return [PartitionState(tp.topic, tp.partition, beginning[tp], end[tp], since.get(tp), until.get(tp))
            for tp in tps]


def _answers(consumer, tps, query_ms: Optional[int]) -> dict:
    if query_ms is None:
        return {}
    query = max(0, query_ms)  # offsets_for_times rejects negative times; 0 means "from the first record"
    found = consumer.offsets_for_times({tp: query for tp in tps})
    return {tp: (None if a is None else offset_answer(a.offset, a.timestamp, query)) for tp, a in found.items()}


def plan_kafka(url: str | KafkaUrl, since_ms: Optional[int], until_ms: Optional[int], lookback_ms: int,
               client_config: Mapping[str, Any], checkpoint: Optional[Mapping[str, Any]] = None,
               lookahead_ms: Optional[int] = None) -> KafkaPlan:
    """Plan a bounded read. The window edges are widened by ``lookback_ms`` before ``since`` and by
    ``lookahead_ms`` (default: the same) after ``until``: Kafka timestamps are not event times (a record is
    appended after its event happened, producers batch and retry), so the records of the event-time window
    ``[since, until)`` sit in a wider Kafka-time window; the replay's event-time filter drops the extra ones."""
    kurl = url if isinstance(url, KafkaUrl) else parse_kafka_url(url)
    if lookback_ms < 0 or (lookahead_ms is not None and lookahead_ms < 0):
        raise UsageError("--lookback must not be negative")
    lookahead_ms = lookback_ms if lookahead_ms is None else lookahead_ms
    read_from = None if since_ms is None else since_ms - lookback_ms
    read_until = None if until_ms is None else until_ms + lookahead_ms
    offsets = checkpoint_offsets(checkpoint)
    spark_source_options(client_config)  # settings the reader cannot honour fail before the brokers are asked
    states = fetch_states(kurl, client_config, read_from, read_until)
    ranges = plan_ranges(states, has_since=read_from is not None, has_until=read_until is not None,
                         checkpoint=offsets)
    log.info("Kafka plan for %s: %d partitions, %d offsets; client settings: %s", kurl, len(ranges),
             sum(r.size for r in ranges), describe(client_config))
    return KafkaPlan(kurl.bootstrap, tuple(ranges), since_ms, until_ms, read_from, read_until, tuple(states))


# ---------------------------------------------------------------------------------------------------------
# Reading (Spark's Kafka source, in the executors' JVMs)

def _offsets_json(ranges: Iterable[OffsetRange], edge: str) -> str:
    out: dict[str, dict[str, int]] = {}
    for r in ranges:
        out.setdefault(r.topic, {})[str(r.partition)] = getattr(r, edge)
    return json.dumps(out)


def raw_frame(spark: SparkSession, plan: KafkaPlan, max_records_per_split: int,
              client_config: Mapping[str, Any]) -> DataFrame:
    """RAW rows of the planned ranges, read by Spark's Kafka source: exactly the offsets ``[start, end)`` of
    each range (``startingOffsets``/``endingOffsets``), each range cut into Spark partitions of at most
    ``max_records_per_split`` offsets (``maxRecordsPerPartition``)."""
    if max_records_per_split < 1:
        raise UsageError(f"--max-records-per-split must be at least 1, got {max_records_per_split}")
    ranges = [r for r in plan.ranges if r.size > 0]
    if not ranges:  # nothing in the window: an empty frame of the right shape
        return spark.createDataFrame([], RAW_SPARK)
    assign: dict[str, list[int]] = {}
    for r in ranges:
        assign.setdefault(r.topic, []).append(r.partition)
    source = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", ",".join(plan.bootstrap))
              .option("assign", json.dumps(assign))
              .option("startingOffsets", _offsets_json(ranges, "start"))
              .option("endingOffsets", _offsets_json(ranges, "end"))
              .option("maxRecordsPerPartition", str(max_records_per_split))
              .option("includeHeaders", "true")
              # An offset of the plan that retention deleted meanwhile is an error, never a silent gap; offsets
              # that hold no visible record (compaction, transaction markers, aborted records) are skipped.
              .option("failOnDataLoss", "true")
              # The client settings (SASL/SSL) as kafka.* options. Spark's plan strings show the relation as
              # KafkaRelation(strategy, start, end) without options; the Java client logs the Password-typed ones
              # (sasl.jaas.config, ssl.keystore.key, ssl.key.password) as [hidden].
              .options(**spark_source_options(client_config))
              .load())
    millis = F.unix_millis(F.col("timestamp"))
    return source.select(
        F.col("topic").alias("pos_source"), F.col("partition").alias("pos_partition"),
        F.col("offset").alias("pos_offset"),
        F.when(millis >= 0, millis).alias("pos_timestamp_ms"),  # -1: a record without a timestamp
        F.col("key").alias("pos_key"),
        F.when(F.col("headers").isNotNull(), F.col("headers")).otherwise(F.array()).alias("pos_headers"),
        F.col("value"),
    ).select([F.col(f.name).cast(f.dataType) for f in RAW_SPARK.fields])  # RAW's nullability, nested too


def read_plan(spark: SparkSession, plan: KafkaPlan, max_records_per_split: int,
              client_config: Mapping[str, Any], fmt: Optional[str] = None) -> DataFrame:
    """RAW rows of the planned ranges, or with ``fmt`` the DECODED rows of that format (before fragments are
    assembled: ``cdc_jobs.transforms.decode.assemble``), decoded by the same Arrow path as archived files."""
    raw = raw_frame(spark, plan, max_records_per_split, client_config)
    if not fmt:
        return raw
    from cdc_jobs.transforms import jvm_decode

    if jvm_decode.runs_records(spark, fmt, sum(r.size for r in plan.ranges)):
        return jvm_decode.decode_records(raw, fmt)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from cdc_jobs.transforms.decode import decode_batches

        yield from decode_batches(fmt, batches)

    return raw.mapInArrow(codec_env.carried(decode), DECODED_SPARK)


def read_kafka(spark: SparkSession, url: str, since_ms: Optional[int], until_ms: Optional[int], lookback_ms: int,
               max_records_per_split: int, client_config: Mapping[str, Any],
               checkpoint: Optional[Mapping[str, Any]] = None, *, lookahead_ms: Optional[int] = None
               ) -> DataFrame:
    """RAW rows (``cdc_jobs.schemas.RAW_SPARK``) of the planned window; see ``plan_kafka``. Use ``plan_kafka``
    and ``read_plan`` directly to also keep the plan (e.g. for ``KafkaPlan.checkpoint_sources``)."""
    plan = plan_kafka(url, since_ms, until_ms, lookback_ms, client_config, checkpoint, lookahead_ms)
    return read_plan(spark, plan, max_records_per_split, client_config)
