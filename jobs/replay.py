"""`cdc-replay replay`: archive (files or Kafka) -> canonical events (+ re-encoded messages), published atomically."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_codecs import Op, get_codec

from .accounting import checkpoint, summarise, summarise_encoded
from .atomic import staged_output
from .decode import decode
from .encode import encode
from .errors import UsageError
from .schemas import DEAD_LETTER_COLUMNS, EVENT_FIELDS
from .spark import session
from .window import parse_instant, split_patterns, tables_filter, window_filter


def read_source(spark: SparkSession, args: argparse.Namespace, since_ms: int | None,
                until_ms: int | None) -> DataFrame:
    kafka = [s for s in args.source if s.startswith("kafka://")]
    if kafka and len(kafka) != len(args.source):
        raise UsageError("--source: give either Kafka URLs or archive files, not both in one replay")
    if not kafka:
        from .sources_files import read_files

        return read_files(spark, args.source)
    from .durations import parse_duration
    from .kafka_config import load_client_config
    from .kafka_source import read_kafka

    ckpt = json.loads(Path(args.checkpoint).read_text()) if args.checkpoint else None
    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
    frames = [read_kafka(spark, url, since_ms, until_ms, parse_duration(args.lookback),
                         args.max_records_per_split, config, checkpoint=ckpt) for url in kafka]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def not_carried(summary: dict, carried: list[str]) -> dict[str, int]:
    """Events the target format has no way to express (e.g. heartbeats in Canal), per op: left out on purpose
    and reported, never dropped silently."""
    out: dict[str, int] = {}
    for ops in [*summary["events"].values(), summary["control"]]:
        for op, n in ops.items():
            if op not in carried:
                out[op] = out.get(op, 0) + n
    return dict(sorted(out.items()))


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def _name_encoded_files(directory: Path, binary: bool) -> None:
    """Spark names files part-NNNNN-<uuid>.txt; give them stable names replay recognises."""
    suffix = ".dump.jsonl" if binary else ".jsonl"
    for n, f in enumerate(sorted(directory.glob("part-*"))):
        f.rename(directory / f"part-{n:05d}{suffix}")
    for f in directory.glob(".*.crc"):
        f.unlink()


def run(args: argparse.Namespace) -> int:
    codec = get_codec(args.format)  # unknown format: clear error before Spark starts
    target = get_codec(args.to_format) if args.to_format else None
    since_ms = parse_instant(args.since, "--since")
    until_ms = parse_instant(args.until, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise UsageError(f"--since ({args.since}) must be before --until ({args.until})")
    if args.sink and not args.to_format:
        raise UsageError("--sink needs --to-format: the format to write to the topic")
    patterns = split_patterns(args.tables)

    spark = session("cdc-replay replay")
    decoded = decode(read_source(spark, args, since_ms, until_ms), codec.name)
    decoded = decoded.persist(StorageLevel.MEMORY_AND_DISK)
    in_window, in_tables = window_filter(since_ms, until_ms), tables_filter(patterns)
    try:
        with staged_output(args.out) as stage:
            is_event = F.col("dl_reason").isNull() & (F.col("op") != "FRAGMENT")
            kept = decoded.where(is_event & in_window & in_tables).select(*EVENT_FIELDS)
            kept.write.partitionBy("table_name").parquet(str(stage / "events"))
            decoded.where(F.col("dl_reason").isNotNull()).select(*DEAD_LETTER_COLUMNS).write.parquet(
                str(stage / "dead_letters"))
            summary = summarise(decoded, in_window, in_tables)
            counts = {"format": codec.name, "to_format": args.to_format,
                      "window": {"since_ms": since_ms, "until_ms": until_ms}, "tables": patterns, **summary}
            if target is not None:
                carried = [op.value for op in Op if target.capabilities.carries(op)]
                events = spark.read.parquet(str(stage / "events")).where(F.col("op").isin(carried))
                partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
                encoded = encode(events, target.name, partitions).persist(StorageLevel.MEMORY_AND_DISK)
                encoded.select("line").write.text(str(stage / "encoded"))
                _name_encoded_files(stage / "encoded", target.capabilities.binary)
                counts["encoded"] = {"format": target.name, **summarise_encoded(encoded),
                                     "not_carried": not_carried(summary, carried)}
                if args.sink:
                    from .kafka_config import load_client_config
                    from .kafka_sink import write_kafka

                    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
                    counts["encoded"]["sink"] = {"url": args.sink, "written": write_kafka(encoded, args.sink, config)}
                encoded.unpersist()
            _write_json(stage / "counts.json", counts)
            _write_json(stage / "checkpoint.json", checkpoint(summary))
            (stage / "_SUCCESS").write_text("")
    finally:
        decoded.unpersist()
    print_summary(args.out, counts)
    return 0


def print_summary(out: str, counts: dict) -> None:
    data = sum(sum(ops.values()) for ops in counts["events"].values())
    print(f"replayed {counts['records_read']} records from {len(counts['sources'])} source(s): {data} data events "
          f"in {len(counts['events'])} table(s), {sum(counts['control'].values())} control, "
          f"{counts['dead_letters']} dead letters, {sum(counts['filtered_out'].values())} outside window/tables "
          f"-> {out}")
    if counts.get("encoded"):
        enc = counts["encoded"]
        skipped = ", ".join(f"{n} {op}" for op, n in enc["not_carried"].items())
        print(f"re-encoded as {enc['format']}: {enc['messages']} messages"
              + (f" ({skipped} left out: {enc['format']} cannot carry them)" if skipped else ""))
