"""`cdc-replay merge`: replayed events (+ an optional ``--base`` state) -> exact table state, published atomically.

State directory layout (STATE):
  STATE/<table_name>/        one Delta table per source table (``db.table`` or ``db.schema.table``): source
                             columns typed by ``cdc_jobs.transforms.state_types`` + ``_cdc_op``, ``_cdc_sequence``,
                             ``_cdc_event_time_ms``, ``_cdc_source``, ``_cdc_partition``, ``_cdc_offset``,
                             ``_cdc_index``, ``_cdc_format`` (the event that last wrote the row). One version whose
                             commit's userMetadata names the replay window (``cdc_jobs.io.delta_tables``). Rows
                             ordered by key: same inputs -> the same rows in the same order. With
                             ``--state-format parquet`` plain Parquet files named ``part-NNNNN.snappy.parquet``
                             (identical bytes on a re-run).
  STATE/_history/<table>/    with ``--history``, in the same format: SCD type 2 rows (source columns +
                             ``_cdc_valid_from_sequence``, ``_cdc_valid_from_event_time_ms``,
                             ``_cdc_valid_to_sequence``,
                             ``_cdc_valid_to_event_time_ms``, ``_cdc_is_current``, ``_cdc_op``). Versions of
                             a ``--base`` written with ``--history`` are carried on; without it history starts
                             at this run (and a run without ``--history`` drops it).
  STATE/_canonical/          the exact state as canonical text (``cdc_jobs.transforms.merge.canonical``), a Delta
                             table (Parquet files with ``--state-format parquet``) partitioned
                             by ``kind`` (state | version) and ``table_name``: rows, tombstones of deleted keys
                             and the last applied event per key. It is what ``--base`` reads, so typing never
                             loses a value between days.
  STATE/_state.json          tables, row counts, canonical column declarations and Spark types, primary key /
                             identity, last sequence and position, DDL history per table.
The whole directory is written to a staging sibling and swapped in at the end (``cdc_jobs.io.atomic``).
``--tables`` limits which replayed events are merged; tables of the ``--base`` are always carried over.
Semantics (ordering, duplicates, unknown keys, key changes, tables without key, DDL, documents) are described in
``cdc_jobs.transforms.merge``.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import os
import posixpath
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_jobs.transforms import merge as mt
from cdc_jobs.transforms.merge.latest import order_literal, order_struct
from cdc_jobs.transforms import state_types as st
from cdc_jobs.io import delta_tables, driver_threads
from cdc_jobs.io.atomic import committed_bytes, resolve_output, staged_output
from cdc_jobs.jvm.options import QUICK_JIT_BELOW
from cdc_jobs.errors import UsageError
from cdc_jobs.io.untrusted import check_events, damaged, problem_counts, readable
from cdc_jobs.schemas import EVENT_SPARK
from cdc_jobs.spark import settings

STATE_FILE = "_state.json"
CANONICAL = "_canonical"
HISTORY = "_history"
FORMAT_VERSION = 1
ROWS_PER_FILE = 1_000_000
# Share of copies above which a merge drops later copies of events before the shuffle (``many_copies``): the
# aggregate and its exchange cost about as much as the shuffle, sort and windows of the rows they save.
COPY_SHARE_WORTH_DROPPING = 0.25
META_COLUMNS = [("op", "_cdc_op"), ("sequence", "_cdc_sequence"), ("event_time_ms", "_cdc_event_time_ms"),
                ("pos_source", "_cdc_source"), ("pos_partition", "_cdc_partition"), ("pos_offset", "_cdc_offset"),
                ("pos_index", "_cdc_index"), ("format", "_cdc_format")]


# ---------------------------------------------------------------------------------------------------------------
# Inputs


def _local(path: str, option: str = "--replay") -> Path:
    """The committed directory of an output (plain path or URI; ``cdc_jobs.io.atomic.resolve_output``)."""
    return resolve_output(path, option)


def table_patterns(values: Sequence[str]) -> list[str]:
    return [p.strip() for v in values or () for p in v.split(",") if p.strip()]


def read_events(spark: SparkSession, replays: Sequence[str], patterns: Sequence[str]) -> DataFrame:
    paths = []
    for r in replays:
        events = _local(r) / "events"
        if not events.is_dir():
            raise UsageError(f"--replay {r}: no events/ directory (is it the --out of `cdc-replay replay`?)")
        paths.append(str(events))
    # One read per replay: each is its own partitioned table (Spark refuses several roots in one read). Not
    # checked here: ``check_replays`` (an output damaged by hand stops the merge with one line naming it).
    df = functools.reduce(DataFrame.unionByName, [spark.read.schema(EVENT_SPARK).parquet(p) for p in paths])
    if patterns:
        cond = F.lit(False)
        for p in patterns:
            cond = cond | F.col("table_name").rlike("^" + fnmatch.translate(p))  # rlike searches: anchor it
        df = df.filter(cond)
    return df


def check_replays(spark: SparkSession, replays: Sequence[str]) -> None:
    """Stop with one line naming the replay whose ``events/`` holds rows `replay` never writes (damaged by hand),
    with their count and an example position (``check_events``: a pass over each replay's events)."""
    for r in replays:
        check_events(read_events(spark, [r], ()), f"--replay {r}")


def read_base(spark: SparkSession, base: str) -> tuple[dict, DataFrame]:
    root = _local(base, "--base")
    state_file = root / STATE_FILE
    if not state_file.is_file():
        raise UsageError(f"--base {base}: no {STATE_FILE} (is it the --out of an earlier `cdc-replay merge`?)")
    try:
        state = json.loads(state_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--base {base}: {STATE_FILE} is not JSON ({exc}): was it edited by hand?") from None
    if not isinstance(state, dict) or not isinstance(state.get("tables", {}), dict):
        raise UsageError(f"--base {base}: {STATE_FILE} does not hold a merge state (an object with 'tables')")
    if state.get("format_version") != FORMAT_VERSION:
        raise UsageError(f"--base {base}: {STATE_FILE} format_version {state.get('format_version')!r}, "
                         f"this merge reads {FORMAT_VERSION}")
    return state, read_canonical(spark, root / CANONICAL)


def read_canonical(spark: SparkSession, directory: Path) -> DataFrame:
    """The canonical copy: a Delta table partitioned by ``kind`` and ``table_name`` (plain Parquet in a
    ``--state-format parquet`` state)."""
    return delta_tables.read_partitioned(spark, directory, mt.CANONICAL_SPARK)


# ---------------------------------------------------------------------------------------------------------------
# Small aggregates collected to the driver (DDL, column declarations, per-table statistics)


def _order(r: Any) -> mt.OrderKey:
    return mt.order_key(r["rank"], r["sequence"], r["pos_source"], r["pos_partition"], r["pos_offset"],
                        r["pos_index"])


def collect_ddls(events: DataFrame, known: set[str]) -> dict[str, list[mt.DdlEvent]]:
    out: dict[str, list[mt.DdlEvent]] = {}
    for r in mt.schema_events(events).collect():
        if r["hash"] in known:
            continue  # re-sent DDL already applied by the base state
        out.setdefault(r["table_name"], []).append(mt.DdlEvent(
            _order(r), r["op"], r["ddl"], r["event_time_ms"], r["hash"], tuple(mt.parse_ddl(r["ddl"], r["op"]))))
    for v in out.values():
        v.sort(key=lambda d: d.order)
    return out


def _one_declaration(rows: Sequence[Any]) -> Optional[list[tuple]]:
    """The declarations of a table as one, when their order cannot matter: the same column names in the same
    order, key and row-id column, and no column declared with two different types. Formats that declare a type
    only where the event has a value (DTS Avro's per-field unions) send many such lists of one table. None when
    they differ."""
    first = rows[0]
    if any(list(r["names"]) != list(first["names"]) or list(r["pk"]) != list(first["pk"])
           or r["row_id"] != first["row_id"] for r in rows):
        return None
    columns = []
    for i, name in enumerate(first["names"]):
        declared = {(r["types"][i], r["jdbc"][i]) for r in rows if r["types"][i] or r["jdbc"][i] is not None}
        if len(declared) > 1:
            return None
        columns.append((name, *(declared.pop() if declared else (None, None))))
    return columns


def _with_marks(events: DataFrame, marks: dict[str, mt.OrderKey]) -> DataFrame:
    """``events`` with ``_after_mark``: whether the event is ordered after its table's ``--base`` watermark (true
    for a table without one). The watermarks join as a broadcast table: a CASE over the tables tests each event
    against every table before its own (1M events: +1.7 s at 32 tables, +3 s at 128)."""
    table = _local_rows(events.sparkSession, [(t, order_literal(mark)) for t, mark in marks.items()],
                        ["table_name", "_mark"])
    after = F.col("_mark").isNull() | (order_struct(mt.rank_column()) > F.col("_mark"))
    return events.join(F.broadcast(table), "table_name", "left").withColumn("_after_mark", after).drop("_mark")


def survey(events: DataFrame, marks: Optional[dict[str, mt.OrderKey]] = None
           ) -> tuple[dict[str, list[Any]], tuple[int, int], bool]:
    """Each table's distinct declared column lists (``declarations``, one pass that also counts the data events
    and the damaged rows ``check_events`` names), the copy estimate for ``many_copies`` (``copy_counts``: a
    sampled pass over the light columns), and whether any row is damaged. ``marks``: the ``--base`` watermark
    per table; a list none of whose events is after its table's is left out (late copies of events the base
    holds no longer describe the table: a re-sent pre-RENAME event must not revive the old name), so a table
    of the base needs no ordered aggregate to tell (``collect_column_lists``)."""
    declared: dict[str, list[Any]] = {}
    data_events = 0
    after = [F.count_if("_after_mark").alias("after_base")] if marks else []
    surveyed = _with_marks(events, marks) if marks else events
    rows = mt.declarations(surveyed, F.count_if(mt.is_data_event()).alias("data_events"), *problem_counts(),
                           *after).collect()
    for r in rows:
        data_events += r["data_events"]
        if r["declares"] and (not after or r["after_base"]):
            declared.setdefault(r["table_name"], []).append(r)
    if damaged(rows):
        return declared, (0, 0), True
    return declared, mt.copy_counts(events, data_events), False


def collect_column_lists(events: DataFrame, declared: dict[str, list[Any]],
                         need_order: Callable[[str], bool]) -> dict[str, list[tuple]]:
    """Per table, its declared column lists (``survey``) as (first order, last order, columns, primary key,
    row-id column). The order keys place declarations against each other and against the run's DDL: a table
    whose declarations are one (``_one_declaration``) and that has no DDL (``need_order`` false) gets None for
    both, which spares the sort-based aggregate over all of its events (1M events: 1.4 s). The survey has
    already left out the lists of late copies from before a ``--base`` watermark."""
    single = {t: _one_declaration(rows) for t, rows in declared.items() if not need_order(t)}
    ordered = sorted(t for t in declared if single.get(t) is None)
    out: dict[str, list[tuple]] = {}
    if ordered:
        for r in mt.column_lists(events, ordered).collect():
            decl = [mt.ColumnDecl(n, t, j) for n, t, j in zip(r["names"], r["types"], r["jdbc"])]
            out.setdefault(r["table_name"], []).append((_order(r["first"]), _order(r["last"]), decl, list(r["pk"]),
                                                        r["row_id"]))
    for table, rows in declared.items():
        if table not in ordered:
            decl = [mt.ColumnDecl(n, t, j) for n, t, j in single[table]]
            out[table] = [(None, None, decl, list(rows[0]["pk"]), rows[0]["row_id"])]
    return out


def table_stats(canonical: DataFrame) -> dict[str, dict]:
    state = canonical.filter(F.col("kind") == "state")
    order = F.struct(*mt.ORDER_FIELDS, "event_time_ms")
    rows = state.groupBy("table_name").agg(
        F.sum(F.when(~F.col("deleted"), 1).otherwise(0)).alias("rows"),
        F.sum(F.when(F.col("deleted"), 1).otherwise(0)).alias("tombstones"),
        F.max(order).alias("last")).collect()
    stats = {}
    for r in rows:
        last = r["last"]
        stats[r["table_name"]] = {
            "rows": int(r["rows"]), "tombstones": int(r["tombstones"]),
            "last_sequence": [str(s) for s in (last["sequence"] or [])],
            "last_position": {"source": last["pos_source"], "partition": last["pos_partition"],
                              "offset": last["pos_offset"], "index": last["pos_index"]},
            "last_event_time_ms": last["event_time_ms"],
            "_order": _order(last),
        }
    return stats


def _watermark_out(order: Optional[mt.OrderKey]) -> Optional[list]:
    if order is None:
        return None
    rank, seq, src, part, off, idx = order
    return [rank, [str(x) for x in seq], src, part, off, idx]


def _watermark_in(value: Optional[list]) -> Optional[mt.OrderKey]:
    if not value:
        return None
    rank, seq, src, part, off, idx = value
    return mt.order_key(rank, [Decimal(x) for x in seq], src, part, off, idx)


# ---------------------------------------------------------------------------------------------------------------
# Typed output


def plan_typings(spark: SparkSession, rows: DataFrame, columns: dict[str, list[mt.ColumnDecl]],
                 lineage: Optional[dict[str, dict[str, list[str]]]] = None
                 ) -> dict[str, list[tuple[mt.ColumnDecl, st.Typing, str]]]:
    """Declared typing per table and column, downgraded to string where some value would not survive exactly.
    One Spark job for all tables: image entries joined with the (small) plan, checked by typing."""
    planned = {t: [(c, st.typing_for(c.type_name, c.jdbc_type)) for c in cols] for t, cols in columns.items()}
    kinds = sorted({t for cols in planned.values() for _, t in cols if not t.is_string},
                   key=lambda t: (t.family, t.spark_type))
    lineage = lineage or {}
    spec = [(table, name, c.name, kinds.index(t)) for table, cols in planned.items() for c, t in cols
            if not t.is_string for name in dict.fromkeys([c.name, *lineage.get(table, {}).get(c.name, [])])]
    bad: dict[tuple[str, str], int] = {}
    if spec:
        plan = _local_rows(spark, spec, ["table_name", "column", "target", "t"])
        entries = rows.select("table_name", F.explode("image").alias("column", "text"))
        text = F.col("text")
        ok = F.lit(True)
        for i in reversed(range(len(kinds))):
            ok = F.when(F.col("t") == i, st.exact(text, st.typed(text, kinds[i]), kinds[i])).otherwise(ok)
        for r in (entries.join(F.broadcast(plan), ["table_name", "column"])
                  .groupBy("table_name", "target").agg(F.sum(F.when(ok, 0).otherwise(1)).alias("bad"))
                  .filter("bad > 0").collect()):
            bad[(r["table_name"], r["target"])] = int(r["bad"])
    result = {}
    for table, cols in planned.items():
        result[table] = []
        for c, t in cols:
            n = bad.get((table, c.name), 0)
            if n:
                result[table].append((c, st.Typing(t.family, st.STRING),
                                      f"{n} value(s) not exactly representable as {t.spark_type}: kept as text"))
            else:
                result[table].append((c, t, ""))
    return result


def _local_rows(spark: SparkSession, rows: Sequence[tuple], names: Sequence[str]) -> DataFrame:
    """A small driver-side table as literals: ``createDataFrame`` of a Python list runs a job whose tasks
    start Python workers to convert the rows (seconds on a busy machine); literals stay in the JVM."""
    structs = [F.struct(*[F.lit(v).alias(n) for v, n in zip(row, names)]) for row in rows]
    return spark.range(1).select(F.inline(F.array(*structs)))


def rename_lineage(ddl_history: Sequence[dict]) -> dict[str, list[str]]:
    """Current column name -> the names it had, newest first (from RENAME/CHANGE COLUMN in the DDL history)."""
    names: dict[str, list[str]] = {}
    for entry in ddl_history:
        for a in entry["applied"] if isinstance(entry.get("applied"), list) else ():
            if a["kind"] == "rename" and a.get("new_name"):
                names[a["new_name"]] = [a["new_name"]] + names.pop(a["column"], [a["column"]])
            elif a["kind"] == "drop":
                names.pop(a["column"], None)
    return names


def _text(name: str, aliases: Sequence[str] = ()) -> Any:
    """The text of a column in an image; a version written before a rename holds it under an older name."""
    image = F.col("image")
    expr = F.try_element_at(image, F.lit(name))
    for old in aliases:
        if old != name:
            expr = F.when(F.map_contains_key(image, F.lit(name)), expr).otherwise(F.try_element_at(image, F.lit(old)))
    return expr


def _source_columns(typings, lineage: Optional[dict[str, list[str]]] = None) -> list:
    lineage = lineage or {}
    return [st.typed(_text(c.name, lineage.get(c.name, ())), t).alias(c.name) for c, t, _ in typings]


def _finish_files(directory) -> None:
    """Deterministic file names (Spark's carry a random UUID) and no checksum side files, on a local directory
    or one on an object store that Spark wrote directly (s3a)."""
    if isinstance(directory, Path):
        for dirpath, _, files in os.walk(directory):
            d = Path(dirpath)
            for f in files:
                if f.endswith(".crc"):
                    (d / f).unlink()
            for old, new in _final_names(files):
                (d / old).rename(d / new)
        return
    from cdc_jobs.io import storage

    uri = getattr(directory, "uri", str(directory))
    fs, root = storage.filesystem(uri)
    by_dir: dict[str, list[str]] = {}
    for rel, _ in storage.walk_files(uri):
        by_dir.setdefault(posixpath.dirname(rel), []).append(posixpath.basename(rel))
    for rel_dir, files in by_dir.items():
        d = posixpath.join(root, rel_dir) if rel_dir else root
        for f in files:
            if f.endswith(".crc"):
                fs.delete_file(posixpath.join(d, f))
        for old, new in _final_names(files):
            fs.move(posixpath.join(d, old), posixpath.join(d, new))


def _final_names(files: Sequence[str]) -> list[tuple[str, str]]:
    parts = sorted(f for f in files if f.startswith("part-") and not f.endswith(".crc"))
    return [(f, f"part-{i:05d}{'.snappy.parquet' if f.endswith('.snappy.parquet') else '.parquet'}")
            for i, f in enumerate(parts)]


def _save(df: DataFrame, out: Path, state_format: str, metadata: Optional[dict]) -> None:
    delta_tables.write_table(df, out, state_format, metadata)
    if state_format == "parquet":
        _finish_files(out)  # a Delta table's log names its files: they keep Spark's names


def write_table(rows: DataFrame, typings, n_rows: int, out: Path, state_format: str = "delta",
                metadata: Optional[dict] = None) -> None:
    parts = max(1, math.ceil(n_rows / ROWS_PER_FILE))
    # One file: coalesce reads the table's canonical files in one task, without a shuffle; the sort below
    # alone fixes the row order ((_key, _dup) is unique), so the bytes are those of repartition(1).
    spread = rows.coalesce(1) if parts == 1 else rows.repartition(parts, "_key")
    _save(spread.sortWithinPartitions("_key", "_dup")
          .select(*_source_columns(typings), *[F.col(a).alias(b) for a, b in META_COLUMNS]),
          out, state_format, metadata)


def write_history(versions: DataFrame, typings, lineage: dict[str, list[str]], out: Path,
                  state_format: str = "delta", metadata: Optional[dict] = None) -> None:
    h = mt.history_versions(versions)
    _save(h.repartition(1).sortWithinPartitions("_key", "_dup", *mt.ORDER_FIELDS)
          .select(*_source_columns(typings, lineage),
                  F.col("sequence").alias("_cdc_valid_from_sequence"),
                  F.col("event_time_ms").alias("_cdc_valid_from_event_time_ms"),
                  F.col("_to_sequence").alias("_cdc_valid_to_sequence"),
                  F.col("_to_event_time_ms").alias("_cdc_valid_to_event_time_ms"),
                  F.col("_to_rank").isNull().alias("_cdc_is_current"),
                  F.col("op").alias("_cdc_op")),
          out, state_format, metadata)


@contextmanager
def persisted(df: DataFrame) -> Iterator[DataFrame]:
    """``df`` cached (memory, spilling to disk) for the reads inside the block, and released after it."""
    kept = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        yield kept
    finally:
        kept.unpersist()


def replay_window(replays: Sequence[str]) -> dict:
    """The event-time window the replays cover, from their counts.json: [earliest since, latest until); a bound
    is None when some replay has none (all events before/after it were kept)."""
    windows = []
    for r in replays:
        counts = _local(r) / "counts.json"
        windows.append(json.loads(counts.read_text()).get("window") or {} if counts.is_file() else {})
    since = [w.get("since_ms") for w in windows]
    until = [w.get("until_ms") for w in windows]
    return {"since_ms": None if None in since or not since else min(since),
            "until_ms": None if None in until or not until else max(until)}


# ---------------------------------------------------------------------------------------------------------------
# The job


def _table_plan(previous: dict, lists: list[tuple], ddls: list[mt.DdlEvent]) -> dict:
    """Columns, primary key, DDL history and rename lineage of one table after this run (driver side)."""
    base_cols = [mt.ColumnDecl(c["name"], c.get("type_name"), c.get("jdbc_type")) for c in previous.get("columns", [])]
    # Column lists last seen at or before the base's watermark come from late copies of events the base already
    # holds: they no longer describe the table (a re-sent pre-RENAME event must not revive the old name).
    mark = _watermark_in(previous.get("watermark"))
    lists = [x for x in lists if mark is None or x[1] is None or x[1] > mark]  # None: the survey checked it
    ddl_history = previous.get("ddl_history", []) + [d.history_entry() for d in ddls]
    marks = [m for m in (mark, *(d.order for d in ddls)) if m is not None]
    return {
        "columns": mt.evolve_columns(base_cols, [(f, l, d) for f, l, d, _, _ in lists], ddls),
        "primary_key": max(lists, key=lambda x: x[1])[3] if lists else previous.get("primary_key", []),
        # A codec-declared row-id column (tables without primary key); the base remembers it between days.
        "row_id": max(lists, key=lambda x: x[1])[4] if lists else previous.get("row_id"),
        "ddl_history": ddl_history,
        "lineage": rename_lineage(ddl_history),
        "watermark": max(marks) if marks else None,
    }


def many_copies(counts: tuple[int, int]) -> bool:
    """Whether the data events repeat enough (re-sent messages, overlapping replays) that dropping later copies
    before the shuffle (``copies.first_copies``) pays for its aggregate; ``counts``: (data events, estimated
    distinct events, both of one sample) from ``survey``."""
    events, distinct = counts
    return bool(events) and distinct <= events * (1 - COPY_SHARE_WORTH_DROPPING)


def merge(spark: SparkSession, replays: Sequence[str], out: Path, base: Optional[str] = None,
          tables: Sequence[str] = (), history: bool = False, state_format: str = "delta") -> dict:
    """Write the merged state into ``out`` (a staging directory); returns the ``_state.json`` content."""
    if state_format not in delta_tables.FORMATS:
        raise UsageError(f"--state-format {state_format!r}: one of {', '.join(delta_tables.FORMATS)}")
    window = replay_window(replays)
    # Each table's commit names what it holds (DESCRIBE HISTORY shows it); no time in it, so re-runs write it equal.
    commit = {"window": window, "replay": list(replays), "base": base}
    patterns = table_patterns(tables)
    if patterns:  # the survey below checks the events merged; rows of the other tables are checked here
        check_replays(spark, replays)
    events = read_events(spark, replays, patterns)
    base_state, base_canonical = read_base(spark, base) if base else ({"tables": {}}, None)
    base_tables: dict = base_state.get("tables", {})
    marks = {t: _watermark_in(v.get("watermark")) for t, v in base_tables.items() if v.get("watermark")}
    declared, copies, damage = survey(events, marks)
    if damage:
        check_replays(spark, replays)  # names the replay, the count and an example position

    known_ddl = {d["hash"] for t in base_tables.values() for d in t.get("ddl_history", [])}
    ddls = collect_ddls(events, known_ddl)
    lists = collect_column_lists(events, declared, lambda table: table in ddls)

    declared_keys = [pk for table_lists in lists.values() for _, _, _, pk, _ in table_lists]
    data = events.filter(mt.is_data_event())
    if many_copies(copies):  # before keying: Spark aggregates each input task's copies before they are shuffled
        data = mt.first_copies(data)
    work = mt.prepare_events(data, declared_keys)
    if base_canonical is not None:
        work = work.unionByName(mt.prepare_base(base_canonical.filter(F.col("kind") == "state")))
    canonical = mt.apply_events(work, ddls, history)
    if history and base_canonical is not None:
        canonical = canonical.unionByName(base_canonical.filter(F.col("kind") == "version")
                                          .select(*mt.CANONICAL_ARROW.names))
    canonical_dir = out / CANONICAL
    # Kept, in the written order, while the statistics, typings and tables are made from it (the state is what is
    # left of the events, a fraction of them): a read of the written table plans a Delta scan each time (snapshot,
    # file listing), about a second of driver work whatever the size. Sorted by table, the cache's per-batch
    # bounds let each table's read skip the other tables' batches.
    in_order = canonical.sortWithinPartitions("kind", "table_name", "_key", "_dup", *mt.ORDER_FIELDS)
    with persisted(in_order) as stored:
        delta_tables.write_partitioned(stored, canonical_dir, state_format, ["kind", "table_name"], commit,
                                       column_stats=False)  # read whole or by partition (--base)
        if state_format == "parquet":
            _finish_files(canonical_dir)

        stats = table_stats(stored)
        names = sorted(set(stats) | set(ddls) | set(lists) | set(base_tables))
        plans = {name: _table_plan(base_tables.get(name, {}), lists.get(name, []), ddls.get(name, []))
                 for name in names}
        # Typed values must hold for every row written: the state, and with --history every version too.
        live = stored.filter(~F.col("deleted"))
        typings = plan_typings(spark, live if history else live.filter(F.col("kind") == "state"),
                               {n: p["columns"] for n, p in plans.items()},
                               {n: p["lineage"] for n, p in plans.items()} if history else None)
        result_tables = {}
        writes: list[Callable[[], None]] = []
        for name in names:
            plan = plans[name]
            s = dict(stats.get(name, {"rows": 0, "tombstones": 0, "last_sequence": [], "last_position": None,
                                      "last_event_time_ms": None}))
            marks = [m for m in (s.pop("_order", None), plan["watermark"]) if m is not None]
            state_rows = stored.filter((F.col("table_name") == name) & ~F.col("deleted") & (F.col("kind") == "state"))
            writes.append(functools.partial(write_table, state_rows, typings[name], s["rows"], out / name,
                                            state_format, commit))
            if history:
                writes.append(functools.partial(
                    write_history, stored.filter((F.col("table_name") == name) & (F.col("kind") == "version")),
                    typings[name], plan["lineage"], out / HISTORY / name, state_format, commit))
            pk = plan["primary_key"]
            row_id = plan["row_id"] if any(c.name == plan["row_id"] for c in plan["columns"]) else None
            result_tables[name] = {
                **s,
                "primary_key": pk,
                "identity": ("primary key" if pk and pk != [row_id] else
                             row_id if row_id else "row hash (SHA-256 of the non-NULL column values)"),
                "row_id": row_id,
                "columns": [{**c.as_dict(), "family": t.family, "spark_type": t.spark_type,
                             **({"note": note} if note else {})} for c, t, note in typings[name]],
                "ddl_history": plan["ddl_history"],
                # Highest order key applied to this table (data or DDL): [rank, sequence, source, partition,
                # offset, index]. The next --base run ignores column declarations of events at or before it.
                "watermark": _watermark_out(max(marks) if marks else None),
            }
        # A table under ROWS_PER_FILE is one single-task job. Adaptive execution has nothing to adapt in these
        # writes (no shuffle, or one of a partition count chosen here), but it made every one of them a query
        # stage over the whole cached canonical first: one table write 1.3-2.2 s, about a quarter of it that.
        with settings(spark, {"spark.sql.adaptive.enabled": "false"}):
            driver_threads.run_all(writes)
    state = {"format_version": FORMAT_VERSION, "history": history, "state_format": state_format,
             "inputs": {"replay": list(replays), "base": base, "tables": list(tables), "window": window},
             "tables": result_tables}
    (out / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True, default=_json_default) + "\n")
    return state


def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return str(v)
    raise TypeError(type(v))


def input_bytes(args: Any) -> int | None:
    """What merge reads, as far as the session's JIT needs it (``cdc_jobs.jvm.options``): the replays' events and
    the base state."""
    parts = [(r, "events") for r in args.replay] + ([(args.base, "")] if args.base else [])
    return committed_bytes(parts, QUICK_JIT_BELOW["merge"])


def run(args: Any) -> int:
    from cdc_jobs.spark import session

    spark = session("cdc-replay merge", input_bytes(args), "merge")
    with readable("merge"), staged_output(args.out, "state") as stage:
        state = merge(spark, args.replay, stage, base=args.base, tables=args.tables, history=args.history,
                      state_format=args.state_format)
    for name, t in state["tables"].items():
        print(f"{name}: {t['rows']} rows ({t['tombstones']} deleted keys kept as tombstones), "
              f"{len(t['ddl_history'])} DDL, last sequence {t['last_sequence'] or '-'}")
    print(f"merged {len(state['tables'])} table(s) into {args.out}")
    return 0
