"""Kafka topics as a bounded Spark source: planned on the driver, read in the executors with kafka-python.

The driver asks the brokers once for offsets (``kafka_plan``) and fixes every partition's end, so a replay reads
the same records however often it runs. Each Spark partition is one offset range of one Kafka partition, read by
a Python Data Source (``pyspark.sql.datasource``) that assigns, seeks and polls until the planned end offset, and
yields RAW Arrow batches. Reading stops at the end *offset*, never after a count, so compacted gaps and
transaction markers cannot make it read past the plan.

Tombstones (records with a null value) are passed on as rows with ``value`` null: they are not CDC messages,
and the replay counts them as ``tombstones`` (``is_tombstone()``) instead of dropping them silently.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from cdc_jobs.errors import UsageError
from cdc_jobs.io import codec_env
from cdc_jobs.io.kafka_config import KafkaUrl, describe, for_consumer, parse_kafka_url
from cdc_jobs.io.kafka_plan import (OffsetRange, PartitionState, Split, checkpoint_offsets, offset_answer, plan_ranges,
                         split_ranges)
from cdc_jobs.schemas import DECODED_SPARK, RAW_ARROW, RAW_SPARK

log = logging.getLogger(__name__)

BATCH_ROWS = 8192
POLL_TIMEOUT_MS = 1000
# A split whose position does not move for this long fails instead of hanging the job.
STALL_TIMEOUT_S = 120.0



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
    states = fetch_states(kurl, client_config, read_from, read_until)
    ranges = plan_ranges(states, has_since=read_from is not None, has_until=read_until is not None,
                         checkpoint=offsets)
    log.info("Kafka plan for %s: %d partitions, %d offsets; client settings: %s", kurl, len(ranges),
             sum(r.size for r in ranges), describe(client_config))
    return KafkaPlan(kurl.bootstrap, tuple(ranges), since_ms, until_ms, read_from, read_until, tuple(states))


# ---------------------------------------------------------------------------------------------------------
# Reading (executors)

class _Columns:
    def __init__(self) -> None:
        self.cols: dict[str, list] = {name: [] for name in RAW_ARROW.names}

    def add(self, record) -> None:
        c = self.cols
        c["pos_source"].append(record.topic)
        c["pos_partition"].append(record.partition)
        c["pos_offset"].append(record.offset)
        c["pos_timestamp_ms"].append(record.timestamp if record.timestamp is not None and record.timestamp >= 0
                                     else None)
        c["pos_key"].append(record.key)
        c["pos_headers"].append([{"key": k, "value": v} for k, v in (record.headers or ())])
        c["value"].append(record.value)

    def __len__(self) -> int:
        return len(self.cols["pos_offset"])

    def take(self) -> dict[str, list]:
        cols, self.cols = self.cols, {name: [] for name in RAW_ARROW.names}
        return cols


def read_split(split: Split, bootstrap: tuple[str, ...], client_config: Mapping[str, Any],
               stall_timeout_s: float = STALL_TIMEOUT_S) -> Iterator[pa.RecordBatch]:
    """Every record with ``split.start <= offset < split.end``, in offset order, as RAW batches."""
    for cols in split_columns(split, bootstrap, client_config, stall_timeout_s):
        yield pa.RecordBatch.from_pydict(cols, schema=RAW_ARROW)


def split_columns(split: Split, bootstrap: tuple[str, ...], client_config: Mapping[str, Any],
                  stall_timeout_s: float = STALL_TIMEOUT_S) -> Iterator[dict[str, list]]:
    """``read_split`` as RAW columns (one Python list per field), for a reader that decodes them itself."""
    from kafka import TopicPartition
    from kafka.errors import OffsetOutOfRangeError

    where = f"Kafka {split.topic} partition {split.partition}"
    consumer = _consumer(bootstrap, client_config)
    tp = TopicPartition(split.topic, split.partition)
    out = _Columns()
    try:
        consumer.assign([tp])
        consumer.seek(tp, split.start)
        last_progress, last_position = time.monotonic(), split.start
        while True:
            try:
                records = consumer.poll(timeout_ms=POLL_TIMEOUT_MS).get(tp, [])
            except OffsetOutOfRangeError:
                raise KafkaReadError(
                    f"{where}: offset {last_position} is no longer available (deleted by retention after the "
                    f"plan was made); the planned range {split.start}..{split.end - 1} cannot be read "
                    f"completely") from None
            done = False
            for record in records:
                if record.offset >= split.end:
                    done = True
                    break
                if record.offset >= split.start:
                    out.add(record)
                    if len(out) >= BATCH_ROWS:
                        yield out.take()
            # The position passes compacted-away offsets and transaction markers too, so this ends a range
            # whose last offsets hold no record.
            position = consumer.position(tp)
            if done or position >= split.end:
                break
            if position != last_position or records:
                last_progress, last_position = time.monotonic(), position
            elif time.monotonic() - last_progress > stall_timeout_s:
                raise KafkaReadError(f"{where}: no progress at offset {position} for {stall_timeout_s:.0f}s "
                                     f"before the planned end {split.end}")
        if len(out):
            yield out.take()
    finally:
        consumer.close()


class _SplitPartition(InputPartition):
    def __init__(self, split: dict):
        super().__init__(split)
        self.split = split


class _KafkaReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]):
        plan = json.loads(options["plan"])
        self.bootstrap = tuple(plan["bootstrap"])
        self.splits = plan["splits"]
        self.client_config = json.loads(options.get("client_settings_secret") or "{}")
        self.fmt = options.get("format") or None
        self.codec_env = options.get(codec_env.OPTION)

    def partitions(self):
        return [_SplitPartition(s) for s in self.splits]

    def read(self, partition):
        codec_env.apply(self.codec_env)
        split = Split.from_dict(partition.split)
        if self.fmt is None:
            yield from read_split(split, self.bootstrap, self.client_config)
            return
        # Read and decode in one Python step: the message bytes do not travel to the JVM and back first.
        from cdc_jobs.transforms.decode import decode_columns

        yield from decode_columns(self.fmt, split_columns(split, self.bootstrap, self.client_config))


class KafkaRanges(DataSource):
    """``spark.read.format("cdc_kafka")``: option ``plan`` = {"bootstrap": [...], "splits": [...]}. The client
    settings travel in an option whose name Spark's default ``spark.redaction.regex`` (secret|password|token)
    redacts from plans and logs. With option ``format`` the rows are DECODED (``cdc_jobs.transforms.decode``)."""

    @classmethod
    def name(cls) -> str:
        return "cdc_kafka"

    def schema(self):
        return DECODED_SPARK if self.options.get("format") else RAW_SPARK

    def reader(self, schema):
        return _KafkaReader(self.options)


def read_plan(spark: SparkSession, plan: KafkaPlan, max_records_per_split: int,
              client_config: Mapping[str, Any], fmt: Optional[str] = None) -> DataFrame:
    """RAW rows of the planned ranges, or with ``fmt`` the DECODED rows of that format (before fragments are
    assembled: ``cdc_jobs.transforms.decode.assemble``)."""
    splits = split_ranges(plan.ranges, max_records_per_split)
    if not splits:  # nothing in the window: an empty frame of the right shape
        return spark.createDataFrame([], DECODED_SPARK if fmt else RAW_SPARK)
    spark.dataSource.register(KafkaRanges)
    options = {
        "plan": json.dumps({"bootstrap": list(plan.bootstrap), "splits": [s.as_dict() for s in splits]}),
        "client_settings_secret": json.dumps(dict(client_config)),
        **codec_env.option(),
    }
    if fmt:
        options["format"] = fmt
    return spark.read.format(KafkaRanges.name()).options(**options).load()


def read_kafka(spark: SparkSession, url: str, since_ms: Optional[int], until_ms: Optional[int], lookback_ms: int,
               max_records_per_split: int, client_config: Mapping[str, Any],
               checkpoint: Optional[Mapping[str, Any]] = None, *, lookahead_ms: Optional[int] = None
               ) -> DataFrame:
    """RAW rows (``cdc_jobs.schemas.RAW_SPARK``) of the planned window; see ``plan_kafka``. Use ``plan_kafka``
    and ``read_plan`` directly to also keep the plan (e.g. for ``KafkaPlan.checkpoint_sources``)."""
    plan = plan_kafka(url, since_ms, until_ms, lookback_ms, client_config, checkpoint, lookahead_ms)
    return read_plan(spark, plan, max_records_per_split, client_config)
