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
from .window import parse_instant, parse_primary_keys, split_patterns, tables_filter, window_filter, with_primary_keys


def read_source(spark: SparkSession, args: argparse.Namespace, since_ms: int | None, until_ms: int | None,
                ckpt: dict | None) -> tuple[DataFrame, list[dict]]:
    """RAW rows of the archive, and the planned partitions (Kafka) that the checkpoint must list."""
    kafka = [s for s in args.source if s.startswith("kafka://")]
    if kafka and len(kafka) != len(args.source):
        raise UsageError("--source: give either Kafka URLs or archive files, not both in one replay")
    if not kafka:
        from .sources_files import read_files

        return skip_checkpointed(read_files(spark, args.source), ckpt), []
    from .durations import parse_duration
    from .kafka_config import load_client_config
    from .kafka_source import plan_kafka, read_plan

    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
    frames, planned = [], []
    for url in kafka:
        plan = plan_kafka(url, since_ms, until_ms, parse_duration(args.lookback), config, checkpoint=ckpt)
        planned.extend(plan.checkpoint_sources())
        frames.append(read_plan(spark, plan, args.max_records_per_split, config))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out, planned


def skip_checkpointed(raw: DataFrame, ckpt: dict | None) -> DataFrame:
    """Files: records before a source's checkpointed ``next_offset`` were handled by the earlier replay."""
    if not ckpt:
        return raw
    done = F.lit(False)
    for s in ckpt.get("sources", []):
        done = done | ((F.col("pos_source") == s["source"]) & (F.col("pos_partition") == s["partition"])
                       & (F.col("pos_offset") < s["next_offset"]))
    return raw.where(~done)


def load_checkpoint(path: str | None) -> dict | None:
    if not path:
        return None
    file = Path(path) / "checkpoint.json" if Path(path).is_dir() else Path(path)
    try:
        return json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--checkpoint: cannot read '{path}': {exc}") from exc


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
    ckpt = load_checkpoint(args.checkpoint)
    # A continuation starts where the earlier replay's window ended, so a record read by both is emitted once.
    since_ms = parse_instant(args.since, "--since") if args.since or not ckpt else ckpt.get("until_ms")
    until_ms = parse_instant(args.until, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise UsageError(f"--since ({args.since}) must be before --until ({args.until})")
    if args.sink and not args.to_format:
        raise UsageError("--sink needs --to-format: the format to write to the topic")
    patterns = split_patterns(args.tables)
    keys = parse_primary_keys(getattr(args, "primary_key", None))

    spark = session("cdc-replay replay")
    raw, planned = read_source(spark, args, since_ms, until_ms, ckpt)
    decoded = decode(raw, codec.name)
    decoded = decoded.persist(StorageLevel.MEMORY_AND_DISK)
    in_window, in_tables = window_filter(since_ms, until_ms), tables_filter(patterns)
    try:
        with staged_output(args.out) as stage:
            # Marker rows (fragments of multi-message events, Kafka tombstones) exist only for the accounting.
            is_event = F.col("dl_reason").isNull() & ~F.col("op").isin("FRAGMENT", "TOMBSTONE")
            kept = with_primary_keys(decoded.where(is_event & in_window & in_tables).select(*EVENT_FIELDS), keys)
            kept.write.partitionBy("table_name").parquet(str(stage / "events"))
            decoded.where(F.col("dl_reason").isNotNull()).select(*DEAD_LETTER_COLUMNS).write.parquet(
                str(stage / "dead_letters"))
            summary = summarise(decoded, in_window, in_tables, until_ms)
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
            _write_json(stage / "checkpoint.json", checkpoint(summary, since_ms, until_ms, planned))
            (stage / "_SUCCESS").write_text("")
    finally:
        decoded.unpersist()
    print_summary(args.out, counts)
    return 0


def print_summary(out: str, counts: dict) -> None:
    data = sum(sum(ops.values()) for ops in counts["events"].values())
    print(f"replayed {counts['records_read']} records from {len(counts['sources'])} source(s): {data} data events "
          f"in {len(counts['events'])} table(s), {sum(counts['control'].values())} control, "
          f"{counts['dead_letters']} dead letters, {counts['tombstones']} tombstones, "
          f"{sum(counts['filtered_out'].values())} outside window/tables "
          f"-> {out}")
    if counts.get("encoded"):
        enc = counts["encoded"]
        skipped = ", ".join(f"{n} {op}" for op, n in enc["not_carried"].items())
        print(f"re-encoded as {enc['format']}: {enc['messages']} messages"
              + (f" ({skipped} left out: {enc['format']} cannot carry them)" if skipped else ""))
