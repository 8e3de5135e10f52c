"""`cdc-replay verify`: rows the events imply vs rows in the merged state, record accounting, reference counts.

Exit code 0 when every table and every replay's accounting is right, 1 otherwise (the failing tables and their
numbers go to stderr, which is the error Airflow shows), 2 for usage errors. The counting itself is in
``verify_counts`` (Spark transforms and pure accounting), the output in ``reports``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_jobs.transforms import dead_letters as dl
from cdc_jobs.transforms import verify_counts as vc
from cdc_jobs.transforms.dead_letters import Budget
from cdc_jobs.transforms.merge.canonical import CANONICAL_SPARK
from cdc_jobs.errors import UsageError
from cdc_jobs.io import delta_tables, driver_threads, storage
from cdc_jobs.io.atomic import check_spark_reaches, committed_bytes, committed_location, resolve_output
from cdc_jobs.jvm.options import QUICK_JIT_BELOW
from cdc_jobs.io.remote_dir import RemoteDir
from cdc_jobs.io.untrusted import check_events, readable
from cdc_jobs.io.reports import failure_message, terminal_report, write_reports
from cdc_jobs.schemas import EVENT_SPARK

META_PREFIX = "_cdc_"
NOTES = [
    "expected rows: per primary key the last data event in (sequence, archive position) order decides; "
    "SNAPSHOT/INSERT/UPDATE make the after-image key present, DELETE makes the before-image key absent, an "
    "UPDATE that changes the key also removes the old key, TRUNCATE removes every earlier row; --base state rows "
    "come first. Computed from events/ with Spark window functions, independently of merge.",
    "state rows: rows of STATE/<table>/ (merge writes live rows only); --base keys come from the base's "
    "canonical copy (_canonical/, live rows). A merge run with --tables restricts verify to those tables.",
    "accounting is in records (archived messages): a multi-row message (Canal data[]) is one record with several "
    "events; records read = records with kept events + dead letters + fragment records of assembled "
    "multi-message events + records filtered out by window/tables.",
    "re-encoding: events in = events carried by the messages out, per table and op; formats that write one "
    "update as k messages (DataWorks: before and after halves) must show k messages per update, others 1..n "
    "events per message (Canal packs the rows of one statement into one message).",
    "dead letters: each replay is held to the dead-letter budget (--max-dead-letters, default 1% of the records "
    "read; 'table:' limits per table for dead letters whose table is known), counted from dead_letters/; they "
    "are listed by reason (positions and numbers blanked), table and source file/partition.",
    "reference counts from a database are taken in one REPEATABLE READ transaction and compared with the state; "
    "counts from a file with taken_at are compared with the rows implied as of that time (full-sync rows always "
    "count, so a count taken at snapshot time checks the full sync).",
]


def _replay_info(path: str) -> dict:
    d = resolve_output(path, "--replay")
    counts_file = d / "counts.json"
    if not counts_file.is_file():
        raise UsageError(f"--replay {path}: no counts.json (not a finished replay output directory)")
    if not (d / "events").is_dir():
        raise UsageError(f"--replay {path}: no events/ directory")
    try:
        counts = json.loads(counts_file.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"--replay {path}: counts.json is not JSON: {exc.msg}") from None
    if not isinstance(counts, dict):
        raise UsageError(f"--replay {path}: counts.json does not hold replay counts (a JSON object)")
    return {"dir": d, "arg": path, "counts": counts}


def _dir_arg(value: Optional[str], option: str) -> Optional[Path]:
    if value is None:
        return None
    p = resolve_output(value, option)
    if not p.is_dir():
        raise UsageError(f"{option} {value}: no such directory")
    return p


def _has_parquet(d: Path) -> bool:
    return any(p.suffix == ".parquet" for p in d.rglob("*.parquet"))


def read_events(spark: SparkSession, d: Path) -> DataFrame:
    if not _has_parquet(d / "events"):
        return spark.createDataFrame([], EVENT_SPARK)
    return spark.read.schema(EVENT_SPARK).parquet(str(d / "events"))


# --------------------------------------------------------------------------------------------- state layout

def state_tables(state: Path) -> dict[str, Path]:
    """Table name -> directory: every STATE/<db.table>/ holding a Delta table or Parquet (names starting '_' or
    '.' are merge's own files, e.g. _state.json, history)."""
    out = {}
    for child in sorted(state.iterdir()):
        if child.is_dir() and not child.name.startswith(("_", ".")) and delta_tables.has_table(child):
            out[child.name] = child
    return out


def state_info(state: Path) -> dict:
    f = state / "_state.json"
    if f.is_file():
        try:
            info = json.loads(f.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {}
        return info if isinstance(info, dict) else {}
    return {}


def table_key_columns(info: dict, table: str, fallback: dict[str, list[str]]) -> list[str]:
    entry = (info.get("tables") or {}).get(table)
    if isinstance(entry, dict) and isinstance(entry.get("primary_key"), list) and entry["primary_key"]:
        return list(entry["primary_key"])
    return fallback.get(table, [])


def base_keys(spark: SparkSession, base: Path, pks: dict[str, list[str]]) -> Optional[DataFrame]:
    """(table_name, key) of the live rows of the --base state, keyed exactly like the events: from merge's
    canonical text copy (``_canonical/``, kind=state, not deleted), so no typing stands between the two."""
    canonical = base / "_canonical"
    if not delta_tables.has_table(canonical):
        return None
    info = state_info(base)
    rows = (delta_tables.read_partitioned(spark, canonical, CANONICAL_SPARK)
            .where((F.col("kind") == "state") & ~F.coalesce(F.col("deleted"), F.lit(False)))
            .select("table_name", "image"))
    names = sorted({*(info.get("tables") or {}), *pks})
    keys = spark.createDataFrame([(t, table_key_columns(info, t, pks)) for t in names],
                                 "table_name string, primary_key array<string>")
    return rows.join(keys, "table_name", "left").select("table_name", vc.image_key("image").alias("key"))


def count_state(spark: SparkSession, state: Path) -> dict[str, int]:
    """Rows per STATE/<table>/: merge writes live rows only (deleted keys live on as tombstones in _canonical/).
    A Delta table is read through its log (its current version), never as the Parquet files in its folder."""
    tables = state_tables(state)
    counts = driver_threads.run_all([functools.partial(_count, spark, d) for d in tables.values()])
    return dict(zip(tables, counts))


def _count(spark: SparkSession, table: Path) -> int:
    return delta_tables.read_table(spark, table).count()


# ------------------------------------------------------------------------------------------------- verify

def primary_keys(events: DataFrame) -> dict[str, list[str]]:
    rows = (events.where(F.col("table_name").isNotNull() & (F.size("primary_key") > 0))
            .groupBy("table_name").agg(F.max("primary_key").alias("pk")).collect())
    return {r.table_name: list(r.pk) for r in rows}


def encoded_lines(spark: SparkSession, d: Path) -> Optional[int]:
    enc = d / "encoded"
    if not enc.is_dir():
        return None
    files = [p for p in enc.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    if not files:
        return 0
    return spark.read.text([str(p) for p in files]).where(F.length("value") > 0).count()


def account_replay(spark: SparkSession, info: dict, budget: Optional[Budget] = None) -> dict:
    d, counts = info["dir"], info["counts"]
    events = read_events(spark, d)
    dl_dir = d / "dead_letters"
    dead = spark.read.parquet(str(dl_dir)) if dl_dir.is_dir() and _has_parquet(dl_dir) else None
    observed = vc.per_source_counts(events, dead)
    conservation = vc.conservation(counts, observed)
    found = vc.nested_counts(vc.op_counts(events).collect())
    problems = list(conservation["problems"]) + vc.event_count_problems(counts, found)
    # The dead-letter budget, on what the files hold (not on what counts.json claims).
    any_dead = any(o.get("dead_letter_rows") for o in observed.values())
    dead_letters = dl.breakdown(dead) if dead is not None and any_dead else dict(dl.NONE)
    dead_letters["budget"] = dl.evaluate(budget or dl.parse_budget(None), conservation["records_read"],
                                         dead_letters["total"], dl.table_counts(dead_letters["by_table"], found))
    problems += [f"dead-letter budget {dead_letters['budget']['spec']}: {p}"
                 for p in dl.summary_lines(dead_letters["budget"], dead_letters)
                 if not dead_letters["budget"]["ok"]]
    encoding = None
    if counts.get("encoded"):
        from cdc_codecs import get_codec

        target = get_codec(counts["encoded"]["format"])
        ops = [o.value for o in target.capabilities.ops]
        # control events without a table are encoded under table "" by replay
        with_table = dict(found)
        nulls = events.where(F.col("table_name").isNull()).groupBy("op").count().collect()
        if nulls:
            with_table[""] = {r["op"]: int(r["count"]) for r in nulls}
        encoding = vc.encoding_check(counts, with_table, ops, target.capabilities.messages_per_update,
                                     encoded_lines(spark, d))
        problems += encoding["problems"]
    return {"replay": str(info["arg"]), "format": counts.get("format"), "to_format": counts.get("to_format"),
            "window": counts.get("window"), "conservation": conservation, "encoding": encoding,
            "dead_letters": dead_letters, "charts": chart_data(events, dead),
            "problems": problems, "ok": not problems}


HOUR_MS = 3_600_000


def chart_data(events: DataFrame, dead: Optional[DataFrame]) -> dict:
    """Small aggregates for the report's charts (jobs/io/charts.py): events per table and hour, and dead
    letters by reason (numbers in the reason text folded, so 'offset 17' and 'offset 18' are one reason)."""
    hourly = (events.where(F.col("table_name").isNotNull() & F.col("event_time_ms").isNotNull())
              .groupBy("table_name", (F.floor(F.col("event_time_ms") / HOUR_MS) * HOUR_MS).alias("hour_ms"))
              .count().orderBy("table_name", "hour_ms").collect())
    reasons = []
    if dead is not None:
        reason = F.concat_ws(": ", F.coalesce(F.col("dl_field"), F.lit("record")),
                             F.regexp_replace(F.substring(F.coalesce(F.col("dl_reason"), F.lit("")), 1, 200),
                                              r"\d+", "#"))
        reasons = [{"reason": r["reason"], "dead_letters": int(r["count"])}
                   for r in dead.groupBy(reason.alias("reason")).count().orderBy(F.desc("count")).limit(12).collect()]
    return {"events_per_hour": [{"table": r["table_name"], "hour_ms": int(r["hour_ms"]), "events": int(r["count"])}
                                for r in hourly],
            "dead_letters_by_reason": reasons}


def verify(spark: SparkSession, replays: list[dict], state: Path, base: Optional[Path],
           reference_spec: Optional[str], budget: Optional[Budget] = None) -> tuple[list[dict], dict]:
    events = None
    for info in replays:
        e = read_events(spark, info["dir"])
        check_events(e, f"--replay {info['arg']}")  # an output damaged by hand: one clear line, no traceback
        events = e if events is None else events.unionByName(e)
    merged_tables = ((state_info(state).get("inputs") or {}).get("tables")) or []
    if merged_tables:  # merge kept only these tables: the others are not expected in this state
        from cdc_jobs.transforms.window import split_patterns, tables_filter

        events = events.where(tables_filter(split_patterns(merged_tables)))
    pks = primary_keys(events)
    facts = vc.event_facts(events, sorted({tuple(k) for k in pks.values()}))
    base_rows: dict[str, int] = {}
    if base is not None:
        keys = base_keys(spark, base, pks)
        if keys is not None:
            facts = facts.unionByName(vc.base_facts(keys))
            base_rows = vc.collect_int_map(keys.groupBy("table_name").count(), "table_name", "count")
    facts = facts.persist()
    try:
        # The events' side, the state's tables and each replay's accounting read different files: submitted
        # from driver threads at once. In a fresh process (every Airflow task) most of each is driver work on a
        # cold JVM (planning, code generation, the Delta tables' first snapshots), which one thread leaves the
        # second core idle through.
        def implied() -> tuple[dict[str, int], dict[str, dict[str, int]]]:
            return (vc.collect_int_map(vc.implied_rows(facts), "table_name", "expected_rows"),
                    vc.nested_counts(vc.op_counts(events).collect()))

        (expected, ops), actual, *replay_reports = driver_threads.run_all(
            [implied, functools.partial(count_state, spark, state),
             *[functools.partial(account_replay, spark, info, budget) for info in replays]])
        tables = set(expected) | set(ops) | set(actual)
        reference = None
        if reference_spec:
            from cdc_jobs.io.reference import load

            reference = load(reference_spec, sorted(tables))
            tables |= set(reference.counts) | set(reference.errors)
            as_of_expected = {}
            for at in sorted({reference.as_of(t) for t in reference.counts} - {None}):
                as_of_expected[at] = vc.collect_int_map(vc.implied_rows(vc.as_of(facts, at)), "table_name",
                                                        "expected_rows")
    finally:
        facts.unpersist()

    rows = []
    for table in sorted(tables):
        row: dict[str, Any] = {"table": table, "expected_rows": expected.get(table, 0),
                               "actual_rows": actual.get(table, 0), "base_rows": base_rows.get(table, 0),
                               "in_state": table in actual}
        for op, key in vc.OP_COUNT_KEYS.items():
            row[key] = ops.get(table, {}).get(op, 0)
        problems = []
        if row["expected_rows"] != row["actual_rows"]:
            diff = row["actual_rows"] - row["expected_rows"]
            missing = "" if table in actual else ", no such table in the state"
            problems.append(f"expected {row['expected_rows']} rows (implied by the events), state has "
                            f"{row['actual_rows']} ({diff:+d}){missing}")
        row.update(reference_rows=None, reference_expected_rows=None, reference_taken_at=None, reference_ok=None)
        if reference is not None:
            if table in reference.errors:
                row["reference_ok"] = False
                problems.append(f"reference: {reference.errors[table]}")
            elif table in reference.counts:
                n = reference.counts[table]
                at = reference.as_of(table)
                compare = as_of_expected[at].get(table, 0) if at is not None else row["actual_rows"]
                taken = reference.taken_at_ms.get(table)
                row.update(reference_rows=n, reference_expected_rows=compare,
                           reference_taken_at=_iso(taken) if taken is not None else None, reference_ok=n == compare)
                if n != compare:
                    what = (f"the events imply {compare} rows as of {_iso(at)}" if at is not None
                            else f"the state has {compare}")
                    problems.append(f"the source has {n} rows, {what} ({compare - n:+d})")
        row["problems"] = problems
        row["message"] = "; ".join(problems)  # one line per table, for task logs and the DAG's per-table checks
        row["ok"] = not problems
        rows.append(row)

    accounting = {
        "ok": all(r["ok"] for r in rows) and all(r["ok"] for r in replay_reports),
        "tables_ok": all(r["ok"] for r in rows),
        "failed_tables": [r["table"] for r in rows if not r["ok"]],
        "generated_at": _iso(int(time.time() * 1000)),
        "state": str(state), "base": str(base) if base else None,
        "replays": replay_reports,
        "reference": None if reference is None else {
            "source": reference.source, "kind": reference.kind,
            "compared_with": "rows implied as of taken_at" if reference.compare_as_of else "state rows"},
        "notes": NOTES,
    }
    return rows, accounting


def _iso(ms: Optional[int]) -> Optional[str]:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def input_bytes(args: argparse.Namespace) -> int | None:
    """What verify reads, as far as the session's JIT needs it (``cdc_jobs.jvm.options``): the replays' events,
    the state and the base."""
    parts = [(r, "events") for r in args.replay] + [(d, "") for d in (args.state, args.base) if d]
    return committed_bytes(parts, QUICK_JIT_BELOW["verify"])


def run(args: argparse.Namespace) -> int:
    replays = [_replay_info(r) for r in args.replay]
    state = _dir_arg(args.state, "--state")
    base = _dir_arg(args.base, "--base")
    if args.reference:
        from cdc_jobs.io.reference import resolve

        resolve(args.reference)  # a bad --reference (unset variable, password typed in) fails before Spark starts
    budget = dl.parse_budget(getattr(args, "max_dead_letters", None))
    report = args.report or storage.join(committed_location(args.state), "verification.json")
    from cdc_jobs.spark import session

    spark = session("cdc-replay verify", input_bytes(args), "verify")
    with readable("verify"):
        rows, accounting = verify(spark, replays, state, base, args.reference, budget)
    written = write_reports(rows, accounting, report, args.html)
    print(terminal_report(rows, accounting))
    print("reports: " + ", ".join(str(p) for p in written))
    if not accounting["ok"]:
        print(failure_message(rows, accounting), file=sys.stderr)
        if args.publish:
            print(f"not published to {args.publish}: the verification failed", file=sys.stderr)
        return 1
    if args.publish:
        publish(spark, state, args.state, args.publish)
    return 0


def publish(spark: SparkSession, state: Path, state_arg: str, root: str) -> None:
    """The verified state's tables become the latest versions of the stable tables under ``root``."""
    storage.check_uri(root, "--publish")
    if not storage.is_local(root):
        check_spark_reaches(root, "--publish")  # Spark writes the tables and their Delta log itself
    window = (state_info(state).get("inputs") or {}).get("window") or {}
    window = {**window, **{k[:-3]: _iso(v) for k, v in window.items() if k.endswith("_ms") and v is not None}}
    results = delta_tables.publish(spark, state, committed_location(state_arg), state_tables(state),
                                   storage.local_path(root) if storage.is_local(root) else RemoteDir(root), window)
    for r in results:
        print(f"published {r['table']}: {r['action']}, version {r['version']} of "
              f"{storage.join(root, r['table'])}")
