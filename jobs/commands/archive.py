"""`cdc-replay archive`: dump a Kafka topic window to files in the dump format, published atomically.

Layout: ``OUT/<topic>/partition=<p>/part-00000.jsonl``, one JSON line per record in offset order::

    {"topic", "partition", "offset", "timestamp", "key": base64|null, "value": base64|null,
     "headers": [{"key", "value": base64|null}]}

plus ``OUT/_manifest.json`` (the plan: window, per partition the offset range and what was written) and
``OUT/_SUCCESS``. With a Schema Registry (``--schema-registry URL`` or ``CDC_REPLAY_SCHEMA_REGISTRY``), every
writer schema named by a key or value in Confluent's wire format (magic byte 0, schema id) is archived as
``OUT/_schemas/<id>.avsc``, so the archive replays without the registry. Every planned partition gets a file, empty when nothing was in its range, so the archive shows
the topic's whole layout. The replay's file source reads these files back with their Kafka positions.

The window is planned exactly as a Kafka replay plans it (``kafka_source.plan_kafka``), so an archive holds the
same records a replay of the topic with the same options reads. Each Spark task reads one Kafka partition's whole
range and writes its file directly: no shuffle, and one file per partition by construction. The output directory
must be reachable at the same path from the executors (local mode, or a shared file system).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson
import pyarrow as pa

from cdc_codecs.shared import schema_registry
from cdc_jobs.io import codec_env
from cdc_jobs.io.atomic import staged_output
from cdc_jobs.durations import parse_duration
from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_config import load_client_config, parse_kafka_url
from cdc_jobs.io.kafka_source import KafkaPlan, plan_kafka, read_plan
from cdc_jobs.transforms.window import parse_instant

PART_NAME = "part-00000.jsonl"
STATS_ARROW = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int64()),
                         ("tombstones", pa.int64()), ("first_offset", pa.int64()), ("last_offset", pa.int64())])
STATS_SCHEMA = "topic string, partition int, records long, tombstones long, first_offset long, last_offset long"


def partition_file(root: Path | str, topic: str, partition: int) -> Path:
    return Path(root) / topic / f"partition={partition}" / PART_NAME


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def dump_line(topic: str, partition: int, offset: int, timestamp: int | None, key: bytes | None,
              value: bytes | None, headers: Iterable[dict] | None) -> bytes:
    return orjson.dumps({
        "topic": topic, "partition": partition, "offset": offset, "timestamp": timestamp,
        "key": _b64(key), "value": _b64(value),
        "headers": [{"key": h["key"], "value": _b64(h["value"])} for h in headers or ()],
    }) + b"\n"


class _PartitionFile:
    """Writes one partition's lines to a hidden temporary name and renames it into place when complete, so a
    retried or speculative task attempt never leaves a half-written file."""

    def __init__(self, root: str, topic: str, partition: int):
        self.final = partition_file(root, topic, partition)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.final.parent / f".{PART_NAME}.{uuid.uuid4().hex}.tmp"
        self.fh = open(self.tmp, "wb")  # noqa: SIM115
        self.topic, self.partition = topic, partition
        self.records = self.tombstones = 0
        self.first = self.last = None

    def write(self, offset: int, timestamp, key, value, headers) -> None:
        if self.last is not None and offset <= self.last:
            raise RuntimeError(f"archive: {self.topic} partition {self.partition} offset {offset} came after "
                               f"{self.last}; offsets must increase")
        self.fh.write(dump_line(self.topic, self.partition, offset, timestamp, key, value, headers))
        self.records += 1
        self.tombstones += value is None
        self.first = offset if self.first is None else self.first
        self.last = offset

    def close(self) -> dict[str, Any]:
        self.fh.close()
        os.replace(self.tmp, self.final)
        return {"topic": self.topic, "partition": self.partition, "records": self.records,
                "tombstones": self.tombstones, "first_offset": self.first, "last_offset": self.last}


def write_batches(batches: Iterable[pa.RecordBatch], root: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: one task = one Kafka partition's range in offset order (read_plan gives one split per
    partition here); yields one stats row per partition written."""
    current: _PartitionFile | None = None
    seen: set[tuple[str, int]] = set()
    stats = []
    schema_ids: set[int] = set()
    for batch in batches:
        c = batch.to_pydict()
        for i in range(batch.num_rows):
            for data in (c["value"][i], c["pos_key"][i]):
                schema_id = wire_schema_id(data)
                if schema_id is not None:
                    schema_ids.add(schema_id)
            ident = (c["pos_source"][i], c["pos_partition"][i])
            if current is None or (current.topic, current.partition) != ident:
                if current is not None:
                    stats.append(current.close())
                if ident in seen:  # would truncate what this task already wrote for that partition
                    raise RuntimeError(f"archive: {ident[0]} partition {ident[1]} arrived in two runs")
                seen.add(ident)
                current = _PartitionFile(root, *ident)
            current.write(c["pos_offset"][i], c["pos_timestamp_ms"][i], c["pos_key"][i], c["value"][i],
                          c["pos_headers"][i])
    if current is not None:
        stats.append(current.close())
    archive_schemas(root, schema_ids)
    if stats:
        yield pa.RecordBatch.from_pylist(stats, schema=STATS_ARROW)


def wire_schema_id(data: bytes | None) -> int | None:
    """The schema id of a key or value in Confluent's wire format (magic byte 0, 4-byte id), else None."""
    return int.from_bytes(data[1:5], "big") if data and len(data) > 5 and data[0] == 0 else None


def archive_schemas(root: str, ids: set[int]) -> None:
    """Each id's schema from the configured registry to ``root/_schemas/<id>.avsc`` (an id the registry does not
    know is a value that only looks like the wire format: nothing to archive)."""
    url, _, _ = schema_registry.settings()
    if not ids or not url:
        return
    store = schema_registry.store()
    for schema_id in sorted(ids):
        try:
            schema = store.get(schema_id)
        except schema_registry.SchemaNotFound:
            continue
        schema_registry.write_schema(Path(root) / codec_env.SCHEMAS_DIR, schema_id, schema)


def archive(spark, plan: KafkaPlan, client_config: dict, out: str) -> dict[str, Any]:
    """Write the plan's records under ``out`` (replaced atomically); returns the manifest."""
    with staged_output(out, "archive") as stage:
        largest = max((r.size for r in plan.ranges), default=0)
        raw = read_plan(spark, plan, max(1, largest), client_config)  # one split per Kafka partition
        root = str(stage)
        rows = raw.mapInArrow(codec_env.carried(lambda it: write_batches(it, root)), STATS_SCHEMA).collect()
        written = {(r.topic, r.partition): r.asDict() for r in rows}
        partitions = []
        for r in plan.ranges:
            w = written.pop((r.topic, r.partition), None)
            if w is None:  # nothing in the range (or the partition was empty): still one file, empty
                path = partition_file(stage, r.topic, r.partition)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"")
                w = {"records": 0, "tombstones": 0, "first_offset": None, "last_offset": None}
            partitions.append({"topic": r.topic, "partition": r.partition, "start_offset": r.start,
                               "end_offset": r.end, "records": w["records"], "tombstones": w["tombstones"],
                               "first_offset": w["first_offset"], "last_offset": w["last_offset"],
                               "file": str(partition_file("", r.topic, r.partition))})
        if written:
            raise RuntimeError(f"archive: records of unplanned partitions {sorted(written)}")
        manifest = {
            "topics": sorted({r.topic for r in plan.ranges}),
            "window": {"since_ms": plan.since_ms, "until_ms": plan.until_ms, "read_from_ms": plan.read_from_ms,
                       "read_until_ms": plan.read_until_ms},
            "records": sum(p["records"] for p in partitions),
            "tombstones": sum(p["tombstones"] for p in partitions),
            "partitions": partitions,
        }
        (stage / "_manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        (stage / "_SUCCESS").write_text("")
    return manifest


def run(args: argparse.Namespace) -> int:
    url = parse_kafka_url(args.source)
    since_ms = parse_instant(args.since, "--since")
    until_ms = parse_instant(args.until, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise UsageError(f"--since ({args.since}) must be before --until ({args.until})")
    lookback_ms = parse_duration(getattr(args, "lookback", None) or "0")
    config = load_client_config(getattr(args, "kafka_config", None))
    plan = plan_kafka(url, since_ms, until_ms, lookback_ms, config)  # before Spark: a bad topic fails fast

    from cdc_jobs.spark import session

    spark = session("cdc-replay archive")
    with codec_env.job_settings(getattr(args, "schema_registry", None), [], None):
        manifest = archive(spark, plan, config, args.out)
    print(f"archived {manifest['records']} records ({manifest['tombstones']} tombstones) from "
          f"{len(manifest['partitions'])} partition(s) of {', '.join(manifest['topics'])} -> {args.out}")
    return 0
