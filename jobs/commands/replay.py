"""`cdc-replay replay`: archive (files or Kafka) -> canonical events (+ re-encoded messages), published atomically."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_codecs import Op, get_codec

from cdc_jobs.transforms.accounting import checkpoint, counted, encoded_counted, encoded_summary
from cdc_jobs.transforms.accounting import summary as accounting_summary
from cdc_jobs.io import codec_env, storage
from cdc_jobs.io.atomic import resolve_output, staged_output
from cdc_jobs.transforms.dead_letters import (NONE, OPTION, TOP, DeadLetterBudgetExceeded, breakdown, evaluate,
                                              parse_budget, summary_lines, table_counts)
from cdc_jobs.transforms.decode import assemble, may_fragment
from cdc_jobs.transforms.encode import dead_letters as encode_dead_letters
from cdc_jobs.transforms.encode import encode, file_lines, in_source_order, task_count
from cdc_jobs.transforms.encode import messages as encoded_messages
from cdc_jobs.errors import UsageError
from cdc_jobs.schemas import DEAD_LETTER_COLUMNS, ENCODED_DEAD_LETTER_COLUMNS, EVENT_FIELDS, MARKER_KINDS
from cdc_jobs.jvm.options import QUICK_JIT_BELOW
from cdc_jobs.spark import session
from cdc_jobs.transforms.window import parse_instant, parse_primary_keys, split_patterns, tables_filter, window_filter, with_primary_keys


CACHE = StorageLevel.DISK_ONLY  # see run()


def events_of(decoded: DataFrame, selected: Column, keys) -> DataFrame:
    """The events of the DECODED rows that ``selected`` keeps (window, tables), as events/ holds them: marker
    rows (fragments of multi-message events, Kafka tombstones) exist only for the accounting."""
    is_event = F.col("dl_reason").isNull() & ~F.col("op").isin(*MARKER_KINDS)
    return with_primary_keys(decoded.where(is_event & selected).select(*EVENT_FIELDS), keys)


# What reads some sources of a replay again: (source, partition) pairs as DECODED rows name them -> those rows.
ReadAgain = Callable[[set], DataFrame]


def archive_files(args: argparse.Namespace) -> list[str] | None:
    """The archive files of ``--source`` (listed once, before Spark starts: a missing source fails at once, and
    the session's JIT follows their size), or None for Kafka URLs."""
    kafka = [s for s in args.source if s.startswith("kafka://")]
    if kafka and len(kafka) != len(args.source):
        raise UsageError("--source: give either Kafka URLs or archive files, not both in one replay")
    if kafka:
        return None
    from cdc_jobs.io.files import list_archive_files

    return list_archive_files(args.source)


def input_bytes(args: argparse.Namespace) -> int | None:
    """The archive's size as far as the session's JIT needs it (``cdc_jobs.jvm.options``); None for Kafka."""
    return files_bytes(archive_files(args))


def files_bytes(files: list[str] | None) -> int | None:
    return None if files is None else storage.total_size(files, QUICK_JIT_BELOW["replay"])


def read_source(spark: SparkSession, args: argparse.Namespace, since_ms: int | None, until_ms: int | None,
                ckpt: dict | None, files: list[str] | None = None) -> tuple[DataFrame, list[dict], ReadAgain]:
    """DECODED rows of the archive (its ``files`` as ``archive_files`` listed them, else listed here), each task's
    in source order (a file or Kafka partition split read in offset order), the planned partitions (Kafka) that
    the checkpoint must list, and a function that reads some of the sources again as they were read here (the
    same files: ``files_again``; the same planned offsets)."""
    fmt = get_codec(args.format).name
    files = files if files is not None else archive_files(args)
    if files is not None:
        from cdc_jobs.io.files import read_listed

        # Files are read and decoded in one step (the reader decodes); the checkpoint's skip is by position,
        # which every row of a record shares, so it drops whole records before their fragments are assembled.
        def files_read(chosen: list[str]) -> DataFrame:
            return assemble(skip_checkpointed(read_listed(spark, chosen, fmt=fmt), ckpt), fmt)

        return files_read(files), [], lambda sources: files_read(files_again(files, sources))
    from cdc_jobs.durations import parse_duration
    from cdc_jobs.io.kafka_config import load_client_config
    from cdc_jobs.io.kafka_source import plan_kafka, read_plan

    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
    plans = [plan_kafka(url, since_ms, until_ms, parse_duration(args.lookback), config, checkpoint=ckpt)
             for url in args.source]

    def plans_read(chosen: list) -> DataFrame:
        frames = [read_plan(spark, plan, args.max_records_per_split, config, fmt=fmt) for plan in chosen]
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return assemble(out, fmt)  # read and decoded

    def again(sources: set) -> DataFrame:
        return plans_read([replace(plan, ranges=tuple(r for r in plan.ranges if (r.topic, r.partition) in sources))
                           for plan in plans])

    return plans_read(plans), [p for plan in plans for p in plan.checkpoint_sources()], again


def files_again(files: list[str], sources: set) -> list[str]:
    """The archive files that hold these sources: the files named, when every source is a file of the archive;
    all of them when a source is not (a Kafka dump's rows name the topic they were archived from)."""
    named = {source for source, _ in sources}
    chosen = [f for f in files if f in named]
    return chosen if len(chosen) == len(named) else files


# Where the encoders write the Avro schemas they made (no registry), until they join the messages in encoded/.
ENCODED_SCHEMAS = "encoded-schemas"


def codec_settings(args: argparse.Namespace, stage):
    """Where codecs find Avro schemas by id (``--schema-registry``, ``--schemas``, else the ``_schemas`` folders
    archived beside the files), and where an encoder without a registry writes the ones it makes."""
    folders = [args.schemas] if getattr(args, "schemas", None) else codec_env.schema_folders(args.source)
    out = str(stage / ENCODED_SCHEMAS) if args.to_format and isinstance(stage, Path) else None
    return codec_env.job_settings(getattr(args, "schema_registry", None), folders, out)


def dead_letter_rows(decoded: DataFrame, summary: dict, kept: bool, read_again: ReadAgain) -> DataFrame:
    """The dead letters of a replay whose events are written: none read when the counts have none; from the
    ``kept`` rows; else from the sources that had some, read again (``keeps_decoded``)."""
    dead = F.col("dl_reason").isNotNull()
    if not summary["dead_letters"]:
        return decoded.where(F.lit(False))
    if kept:
        return decoded.where(dead)
    sources = {(s["source"], s["partition"]) for s in summary["sources"] if s["dead_letters"]}
    return read_again(sources).where(dead)


def keeps_decoded(target, fmt: str) -> bool:
    """Whether the DECODED rows are kept (on disk) for a second read instead of decoded again: for the encoder,
    and for a format that assembles multi-message events, whose archives cut at a file or window edge usually end
    in an incomplete event (dead letters, read again by a second job) and whose assembly is a shuffle. Otherwise
    one pass writes the events and counts (``accounting.counted``), and the sources that had dead letters are read
    a second time for them (bench/RESULTS.md: a quarter less time; a file with a dead letter read twice)."""
    return target is not None or may_fragment(fmt)


def encodes_in_source_order(target, fmt: str, sink: bool) -> bool:
    """Whether the messages are encoded where the events were decoded, in source order (``in_source_order``), or
    shuffled and sorted (``encode``). A target that needs only per-key order writes each event's messages on
    their own, and the reader hands each key's events in order within a task; the shuffle stays where that order
    is lost (the fragments of multi-message events are assembled after a shuffle), where a target packs rows or
    groups transactions (it needs a table's events together), and for ``--sink``: its tasks write to the topic
    at once, so a key read by two tasks (two files, two splits of a partition) must go to one."""
    return target.capabilities.order_scope == "key" and not may_fragment(fmt) and not sink


def encoded_rows(to_encode: DataFrame, target, fmt: str, sink: bool, events: int, shuffle_partitions: int
                 ) -> DataFrame:
    """ENCODED rows of the events to encode: in source order where that order is the one needed
    (``encodes_in_source_order``), else shuffled into tasks sized by the ``events`` count."""
    if encodes_in_source_order(target, fmt, sink):
        return in_source_order(to_encode, target.name)
    return encode(to_encode, target.name, task_count(events, shuffle_partitions))


def carried_ops(target) -> list[str]:
    """The ops the target writes; events of other ops are reported as ``not_carried``, not encoded."""
    return [op.value for op in Op if target.capabilities.carries(op)]


def skip_checkpointed(rows: DataFrame, ckpt: dict | None) -> DataFrame:
    """Files: records before a source's checkpointed ``next_offset`` were handled by the earlier replay."""
    if not ckpt:
        return rows
    done = F.lit(False)
    for s in ckpt.get("sources", []):
        done = done | ((F.col("pos_source") == s["source"]) & (F.col("pos_partition") == s["partition"])
                       & (F.col("pos_offset") < s["next_offset"]))
    return rows.where(~done)


def load_checkpoint(path: str | None) -> dict | None:
    if not path:
        return None
    try:
        file = resolve_output(path, "--checkpoint")  # an output directory (also on an object store) ...
        file = file / "checkpoint.json" if file.is_dir() else file  # ... or the checkpoint file itself
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
    if getattr(args, "sink_mode", None) not in (None, "transactional", "idempotent"):
        raise UsageError(f"--sink-mode: '{args.sink_mode}' is not transactional or idempotent")
    patterns = split_patterns(args.tables)
    keys = parse_primary_keys(getattr(args, "primary_key", None))
    budget = parse_budget(getattr(args, "max_dead_letters", None))  # a bad spec fails before Spark starts

    files = archive_files(args)
    spark = session("cdc-replay replay", files_bytes(files))
    in_window, in_tables = window_filter(since_ms, until_ms), tables_filter(patterns)
    decoded = encoded = None
    try:
        with staged_output(args.out, "replay") as stage, codec_settings(args, stage):
            decoded, planned, read_again = read_source(spark, args, since_ms, until_ms, ckpt, files)
            kept = keeps_decoded(target, codec.name)
            if kept:
                # Decoded once and kept, on disk only: a memory-first cache builds each task's block in the heap
                # before it can spill, which with two large tasks and the events write's sort ran the default
                # 1 GiB heap out of memory at 1M dts-avro records.
                decoded = decoded.persist(CACHE)
            # One pass writes the events and counts every row read (``accounting.counted``).
            rows, tally = counted(decoded, in_window, in_tables, until_ms)
            selected = in_window & in_tables
            events_of(rows, selected, keys).write.partitionBy("table_name").parquet(str(stage / "events"))
            summary = accounting_summary(tally)
            dead_letter_rows(decoded, summary, kept, read_again) \
                .select(*DEAD_LETTER_COLUMNS).write.parquet(str(stage / "dead_letters"))
            counts = {"format": codec.name, "to_format": args.to_format,
                      "window": {"since_ms": since_ms, "until_ms": until_ms}, "tables": patterns, **summary}
            # Before anything is encoded or sent: over budget, nothing is published (see dead_letters.py).
            written = spark.read.parquet(str(stage / "dead_letters")) if summary["dead_letters"] else None
            check_dead_letter_budget(budget, written, counts, stage, args.out)
            if target is not None:
                carried = carried_ops(target)
                to_encode = events_of(decoded, selected, keys).where(F.col("op").isin(carried))
                events = sum(n for ops in [*summary["events"].values(), summary["control"]]
                             for op, n in ops.items() if op in carried)
                encoded = encoded_rows(to_encode, target, codec.name, bool(args.sink), events,
                                       int(spark.conf.get("spark.sql.shuffle.partitions")))
                if args.sink:  # the sink sends the messages encoded/ holds: encoded once and kept (on disk)
                    encoded = encoded.persist(CACHE)
                # One pass writes the messages and counts them (``accounting.encoded_counted``).
                lines, encoded_tally = encoded_counted(encoded)
                file_lines(lines).write.text(str(stage / "encoded"))
                encoded_counts = encoded_summary(encoded_tally)
                _name_encoded_files(stage / "encoded", target.capabilities.binary)
                if isinstance(stage, Path) and (stage / ENCODED_SCHEMAS).is_dir():  # beside the messages, as
                    (stage / ENCODED_SCHEMAS).rename(stage / "encoded" / codec_env.SCHEMAS_DIR)  # archive lays them
                # Events that cannot be encoded are the exception: only a re-encode that has some encodes again.
                failed = encode_dead_letters(encoded if encoded_counts["dead_letters"] else encoded.where(F.lit(False)))
                failed.select(F.lit(target.name).alias("to_format"), *ENCODED_DEAD_LETTER_COLUMNS).write.parquet(
                    str(stage / "encoded_dead_letters"))
                counts["encoded"] = {"format": target.name, **encoded_counts,
                                     "not_carried": not_carried(summary, carried)}
                if args.sink:
                    counts["encoded"]["sink"] = write_sink(encoded_messages(encoded), args, since_ms, until_ms)
            _write_json(stage / "counts.json", counts)
            _write_json(stage / "checkpoint.json", checkpoint(summary, since_ms, until_ms, planned))
            (stage / "_SUCCESS").write_text("")
    finally:  # a failed step (a refused --sink, a full disk) must not leave the caches to the session
        for cached in (encoded, decoded):
            if cached is not None:
                cached.unpersist()
    clear_rejected(args.out)
    print_summary(args.out, counts)
    return 0


def write_sink(encoded: DataFrame, args: argparse.Namespace, since_ms: int | None, until_ms: int | None) -> dict:
    """--sink: exactly-once (one Kafka transaction per task, ids from output + window + partition) unless
    --sink-mode idempotent."""
    from cdc_jobs.io.kafka_config import load_client_config, parse_kafka_url
    from cdc_jobs.io.kafka_sink import run_digest, write_kafka, write_kafka_transactional

    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
    mode = getattr(args, "sink_mode", None) or "transactional"
    if mode == "idempotent":
        return {"url": args.sink, "mode": mode, "written": write_kafka(encoded, args.sink, config)}
    topic = parse_kafka_url(args.sink, "--sink").topics[0]
    return {"url": args.sink, **write_kafka_transactional(encoded, args.sink, config,
                                                          run_digest(args.out, since_ms, until_ms, topic))}


def rejected_path(out: str) -> str:
    """Where a replay over its dead-letter budget leaves its dead letters and counts for inspection."""
    return out.rstrip("/") + ".rejected"


def check_dead_letter_budget(budget, dead_letters: DataFrame | None, counts: dict, stage: Path, out: str) -> None:
    """Add the breakdown of the ``dead_letters`` written (None: there are none) and the budget verdict to
    ``counts``. Over budget: publish the dead letters and counts (no events) to OUT.rejected/, leave OUT as it was,
    and raise (exit code 1) naming the top reasons and sources, so a scheduler stops before merge and a user can
    see what broke."""
    dead = breakdown(dead_letters) if dead_letters is not None else dict(NONE)
    if dead["total"] != counts["dead_letters"]:  # read again (``dead_letter_rows``): the archive changed meanwhile
        raise RuntimeError(f"{counts['dead_letters']} dead letters counted but {dead['total']} written: a source "
                           f"changed while it was replayed; nothing published, {out} is unchanged")
    verdict = evaluate(budget, counts["records_read"], counts["dead_letters"],
                       table_counts(dead["by_table"], counts["events"]))
    counts["dead_letter_breakdown"], counts["dead_letter_budget"] = dead, verdict
    if verdict["ok"]:
        return
    rejected = rejected_path(out)
    with staged_output(rejected) as rej:
        os.rename(stage / "dead_letters", rej / "dead_letters")
        _write_json(rej / "counts.json", counts)
        (rej / "REJECTED").write_text("\n".join(summary_lines(verdict, dead, top=TOP)) + "\n")
    raise DeadLetterBudgetExceeded(
        f"dead-letter budget exceeded ({OPTION} {budget.spec}); nothing published, {out} is unchanged:\n  "
        + "\n  ".join(summary_lines(verdict, dead))
        + f"\n  the dead letters and counts are in {rejected}/ for inspection; fix the archive or raise the budget")


def clear_rejected(out: str) -> None:
    """A successful run removes the rejected dead letters an earlier run of the same output left (only a
    directory ``check_dead_letter_budget`` wrote: it has REJECTED and no events/)."""
    rejected = Path(rejected_path(out)[len("file://"):] if out.startswith("file://") else rejected_path(out))
    if (rejected / "REJECTED").is_file() and not (rejected / "events").exists():
        shutil.rmtree(rejected, ignore_errors=True)


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
              + (f" ({skipped} left out: {enc['format']} cannot carry them)" if skipped else "")
              + (f", {enc['dead_letters']} events that cannot be encoded -> encoded_dead_letters/"
                 if enc.get("dead_letters") else ""))
