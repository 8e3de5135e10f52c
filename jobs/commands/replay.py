"""`cdc-replay replay`: archive (files or Kafka) -> canonical events (+ re-encoded messages), published atomically."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_codecs import Op, get_codec

from cdc_jobs.transforms.accounting import checkpoint, summarise, summarise_encoded, summarise_tallies
from cdc_jobs.io import codec_env
from cdc_jobs.io.atomic import resolve_output, staged_output
from cdc_jobs.transforms.dead_letters import (NONE, OPTION, TOP, DeadLetterBudgetExceeded, breakdown, evaluate,
                                              parse_budget, summary_lines, table_counts)
from cdc_jobs.transforms.decode import assemble
from cdc_jobs.transforms.encode import dead_letters as encode_dead_letters
from cdc_jobs.transforms.encode import encode, file_lines, in_key_order, task_count
from cdc_jobs.transforms.encode import messages as encoded_messages
from cdc_jobs.errors import UsageError
from cdc_jobs.progress import scratch_reads
from cdc_jobs.schemas import (DEAD_LETTER_COLUMNS, ENCODED_DEAD_LETTER_COLUMNS, ENCODED_KEYED_SPARK, EVENT_FIELDS,
                              EVENT_SPARK, MARKER_KINDS)
from cdc_jobs.spark import session
from cdc_jobs.transforms.window import parse_instant, parse_primary_keys, split_patterns, tables_filter, window_filter, with_primary_keys

if TYPE_CHECKING:
    from cdc_jobs.io.files import EventsHere


CACHE = StorageLevel.DISK_ONLY  # see run()


def read_source(spark: SparkSession, args: argparse.Namespace, since_ms: int | None, until_ms: int | None,
                ckpt: dict | None, events: "EventsHere | None" = None) -> tuple[DataFrame, list[dict]]:
    """DECODED rows of the archive, and the planned partitions (Kafka) that the checkpoint must list. With
    ``events`` (``events_here``), the file reader's tasks write events/ and the rows are COUNTED ones."""
    fmt = get_codec(args.format).name
    kafka = [s for s in args.source if s.startswith("kafka://")]
    if kafka and len(kafka) != len(args.source):
        raise UsageError("--source: give either Kafka URLs or archive files, not both in one replay")
    if not kafka:
        from cdc_jobs.io.files import counted_rows, read_files

        # Files are read and decoded in one step (the reader decodes); the checkpoint's skip is by position,
        # which every row of a record shares, so it drops whole records before their fragments are assembled.
        decoded = read_files(spark, args.source, fmt=fmt, events=events)
        if events is not None:
            decoded = counted_rows(spark, decoded, events.counted_dir)
        return assemble(skip_checkpointed(decoded, ckpt), fmt), []
    from cdc_jobs.durations import parse_duration
    from cdc_jobs.io.kafka_config import load_client_config
    from cdc_jobs.io.kafka_source import plan_kafka, read_plan

    config = load_client_config(args.kafka_config or os.environ.get("CDC_REPLAY_KAFKA_CONFIG"))
    frames, planned = [], []
    for url in kafka:
        plan = plan_kafka(url, since_ms, until_ms, parse_duration(args.lookback), config, checkpoint=ckpt)
        planned.extend(plan.checkpoint_sources())
        frames.append(read_plan(spark, plan, args.max_records_per_split, config, fmt=fmt))  # read and decoded
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return assemble(out, fmt), planned


def events_here(spark: SparkSession, args: argparse.Namespace, stage, since_ms: int | None, until_ms: int | None,
                patterns: list[str], keys: list, ckpt: dict | None, target=None) -> "EventsHere | None":
    """Whether the decode tasks write events/ themselves (``cdc_jobs.io.event_files``: pyarrow's Parquet writer,
    and no full-width event in the JVM or the cache), and where: for archive files of a format whose events
    need no assembly, a stage the executors reach as a local directory (local Spark), and no ``--primary-key``
    (applied by Spark). Otherwise None: Spark writes events/ from the decoded rows. When they do and the
    ``target`` of ``--to-format`` needs only per-key order, they also encode (``encodes_where_decoded``)."""
    from cdc_jobs.io.files import EventsHere
    from cdc_jobs.transforms.decode import may_fragment

    if (any(s.startswith("kafka://") for s in args.source) or may_fragment(get_codec(args.format).name) or keys
            or not isinstance(stage, Path) or not spark.sparkContext.master.startswith("local")):
        return None
    skip = [[s["source"], s["partition"], s["next_offset"]] for s in (ckpt or {}).get("sources", [])]
    (stage / COUNTING).mkdir()
    (stage / TALLYING).mkdir()
    here = EventsHere(str(stage / "events"), str(uuid.uuid4()), since_ms, until_ms, patterns, skip,
                      str(stage / COUNTING), str(stage / TALLYING))
    if target is not None and encodes_where_decoded(target):
        (stage / ENCODING).mkdir()
        here = here._replace(encode=target.name, carried=carried_ops(target), encoded_dir=str(stage / ENCODING))
    return here


# Where the decode tasks leave the messages they encoded, inside the stage, until the re-encode has read them.
# Not "_encoding": Spark takes a path whose name starts with "_" or "." for a hidden file and warned "All paths were
# ignored" on every re-encode (it reads it all the same).
ENCODING = "encoding-scratch"
# Where they leave the COUNTED rows of their dead letters and markers (``EventsHere.counted_dir``), and the counts
# of all their rows (``EventsHere.tally_dir``), until the accounting has read them.
COUNTING = "counted-scratch"
TALLYING = "tally-scratch"


# Where the encoders write the Avro schemas they made (no registry), until they join the messages in encoded/.
ENCODED_SCHEMAS = "encoded-schemas"


def codec_settings(spark: SparkSession, args: argparse.Namespace, stage):
    """Where codecs find Avro schemas by id (``--schema-registry``, ``--schemas``, else the ``_schemas`` folders
    archived beside the files), and where an encoder without a registry writes the ones it makes."""
    folders = [args.schemas] if getattr(args, "schemas", None) else codec_env.schema_folders(args.source)
    out = str(stage / ENCODED_SCHEMAS) if args.to_format and isinstance(stage, Path) else None
    return codec_env.job_settings(spark, getattr(args, "schema_registry", None), folders, out)


def encodes_where_decoded(target) -> bool:
    """A target that needs only per-key order writes each event's messages on their own, so the decode tasks
    can encode them (``encode.encode_each``); one that packs rows or groups transactions needs the events of a
    table together, in order, and is encoded after the shuffle (``encode.encode``)."""
    return target.capabilities.order_scope == "key"


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

    spark = session("cdc-replay replay")
    in_window, in_tables = window_filter(since_ms, until_ms), tables_filter(patterns)
    decoded = None
    scratch_jobs = ExitStack()
    try:
        with staged_output(args.out, "replay") as stage, codec_settings(spark, args, stage):
            events = events_here(spark, args, stage, since_ms, until_ms, patterns, keys, ckpt, target)
            decoded, planned = read_source(spark, args, since_ms, until_ms, ckpt, events)
            if events is not None:  # the jobs below read the decode tasks' scratch tables, not the archive
                scratch_jobs.enter_context(scratch_reads(spark.sparkContext))
            # Read by several jobs (dead letters, counts, re-encode), so decoded once and kept, on disk only: a
            # memory-first cache builds each task's block in the heap before it can spill, which with two large
            # tasks and the events write's sort ran the default 1 GiB heap out of memory at 1M dts-avro records.
            # Where the decode tasks wrote their rows to a scratch table (``EventsHere.counted_dir``), that is
            # the copy.
            if events is None:
                decoded = decoded.persist(CACHE)
                # Marker rows (fragments of multi-message events, Kafka tombstones) exist only for the accounting.
                is_event = F.col("dl_reason").isNull() & ~F.col("op").isin(*MARKER_KINDS)
                kept = with_primary_keys(decoded.where(is_event & in_window & in_tables).select(*EVENT_FIELDS),
                                         keys)
                kept.write.partitionBy("table_name").parquet(str(stage / "events"))
            decoded.where(F.col("dl_reason").isNotNull()).select(*DEAD_LETTER_COLUMNS).write.parquet(
                str(stage / "dead_letters"))
            if events is not None:  # the decode tasks wrote events/ in the decode job (``counted_rows``)
                (stage / "events").mkdir(exist_ok=True)
                (stage / "events" / "_SUCCESS").write_text("")
                kept = spark.read.schema(EVENT_SPARK).parquet(str(stage / "events"))
            if events is not None:  # the decode tasks counted their rows (``accounting.Tally``)
                summary = summarise_tallies(events.tally_dir)
            else:
                summary = summarise(decoded, in_window, in_tables, until_ms)
            counts = {"format": codec.name, "to_format": args.to_format,
                      "window": {"since_ms": since_ms, "until_ms": until_ms}, "tables": patterns, **summary}
            # Before anything is encoded or sent: over budget, nothing is published (see dead_letters.py).
            check_dead_letter_budget(budget, decoded, counts, stage, args.out)
            if target is not None:
                carried = carried_ops(target)
                to_encode = sum(n for ops in [*summary["events"].values(), summary["control"]]
                                for op, n in ops.items() if op in carried)
                partitions = task_count(to_encode, int(spark.conf.get("spark.sql.shuffle.partitions")))
                if events is not None and events.encode is not None:
                    # The decode tasks encoded as they decoded: their messages are shuffled and sorted into the
                    # order ``encode`` gives; each output reads them again (a flat scan) rather than a cache.
                    keyed = spark.read.schema(ENCODED_KEYED_SPARK).parquet(events.encoded_dir)
                    encoded = in_key_order(keyed, partitions)
                    dead = in_key_order(keyed.where(F.col("el_reason").isNotNull()), partitions)
                    tally = keyed
                    if args.sink:  # the file lines and the sink take the same shuffled messages
                        encoded = encoded.persist(CACHE)
                else:
                    # One pass: the events are encoded from the same decoded frame (persisted above).
                    encoded = encode(kept.where(F.col("op").isin(carried)), target.name, partitions).persist(CACHE)
                    dead = encode_dead_letters(encoded)
                    tally = encoded
                file_lines(encoded).write.text(str(stage / "encoded"))
                _name_encoded_files(stage / "encoded", target.capabilities.binary)
                if isinstance(stage, Path) and (stage / ENCODED_SCHEMAS).is_dir():  # beside the messages, as
                    (stage / ENCODED_SCHEMAS).rename(stage / "encoded" / codec_env.SCHEMAS_DIR)  # archive lays them
                dead.select(F.lit(target.name).alias("to_format"), *ENCODED_DEAD_LETTER_COLUMNS).write.parquet(
                    str(stage / "encoded_dead_letters"))
                counts["encoded"] = {"format": target.name, **summarise_encoded(tally),
                                     "not_carried": not_carried(summary, carried)}
                if args.sink:
                    counts["encoded"]["sink"] = write_sink(encoded_messages(encoded), args, since_ms, until_ms)
                encoded.unpersist()
            if events is not None:  # scratch, read by the jobs above: never published
                for directory in (events.counted_dir, events.tally_dir, events.encoded_dir):
                    if directory is not None:
                        shutil.rmtree(directory)
            _write_json(stage / "counts.json", counts)
            _write_json(stage / "checkpoint.json", checkpoint(summary, since_ms, until_ms, planned))
            (stage / "_SUCCESS").write_text("")
    finally:
        scratch_jobs.close()
        if decoded is not None:
            decoded.unpersist()
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


def check_dead_letter_budget(budget, decoded: DataFrame, counts: dict, stage: Path, out: str) -> None:
    """Add the dead-letter breakdown and budget verdict to ``counts``. Over budget: publish the dead letters and
    counts (no events) to OUT.rejected/, leave OUT as it was, and raise (exit code 1) naming the top reasons and
    sources, so a scheduler stops before merge and a user can see what broke."""
    dead = breakdown(decoded.where(F.col("dl_reason").isNotNull())) if counts["dead_letters"] else dict(NONE)
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
