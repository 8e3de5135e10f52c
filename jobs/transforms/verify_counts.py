"""Pure transforms behind `cdc-replay verify`: what the events imply, computed independently of merge.

Merge applies events to rows; verify must not trust that code path, so it derives the expected row count per table
from the events alone, with Spark SQL window functions:

* every data event becomes one or two *facts* about a primary-key value: SNAPSHOT/INSERT/UPDATE say "the key of
  the after image is present", DELETE says "the key of the before image is absent", and an UPDATE whose before
  key differs from its after key also says "the old key is absent";
* the rows of the ``--base`` state are facts "present" that come before every event (phase 0), full-sync rows
  without a vendor sequence come next (phase 1: they cannot be placed among the changes), then the changes;
* per (table, key) the last fact in the canonical order (sequence, then archive position) wins, facts before the
  table's last TRUNCATE are dropped, and the table's expected row count is the number of keys whose last fact is
  "present".

Keys are compared as canonical text: a JSON array of the key columns' values (NULL stays distinguishable from
the text "null"). A table without a declared key is keyed by its whole image, so identical duplicate rows of a
key-less table count once (stated in the report notes).

Everything here returns DataFrames or small Python structures; the only collects are per-table aggregates.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .key_lookup import per_key_column
from .sequence import SEQUENCE_TYPE, sequence_or_empty

DATA_OPS = ("SNAPSHOT", "INSERT", "UPDATE", "DELETE")
PRESENT_OPS = ("SNAPSHOT", "INSERT", "UPDATE")
OP_COUNT_KEYS = {"SNAPSHOT": "snapshot", "INSERT": "insert", "UPDATE": "update", "DELETE": "delete",
                 "TRUNCATE": "truncate"}


def _has_table() -> Column:
    # Control events without a table (heartbeats, transaction markers) carry table_name NULL or "".
    return F.col("table_name").isNotNull() & (F.col("table_name") != "")


def image_key(image: str, pk: str = "primary_key", known: Sequence[Sequence[str]] = ()) -> Column:
    """Canonical key text of ``image`` (a map column): JSON array of the primary-key values (``pk``: an array
    column of key column names) in declared order, or, without a declared key, of the whole image's (column,
    value) pairs sorted by column. ``known``: the declared key lists, if known (only a speed-up)."""
    img = F.col(image)
    by_pk = F.to_json(per_key_column(F.col(pk), lambda k: F.try_element_at(img, k), known))
    # sort_array (compiled ordering), not array_sort (an interpreted lambda per comparison): the same order,
    # because the entries of one map are never NULL and their keys are unique (as merge's keys.py).
    whole = F.to_json(F.sort_array(F.map_entries(img)))
    return (F.when(img.isNull(), F.lit(None))
            .when(F.coalesce(F.size(F.col(pk)), F.lit(0)) > 0, by_pk)
            .otherwise(whole))


def after_key(known: Sequence[Sequence[str]] = ()) -> Column:
    """Key of the row an event leaves present. A key column absent from a partial after image (SharePlex
    updates, Mongo $set) did not change, so its value comes from the before image."""
    after, before = F.col("after"), F.col("before")
    filled = per_key_column(F.col("primary_key"),
                            lambda k: F.when(F.map_contains_key(after, k), F.try_element_at(after, k))
                            .otherwise(F.try_element_at(before, k)), known)
    return (F.when(after.isNull(), F.lit(None))
            .when(F.coalesce(F.size(F.col("primary_key")), F.lit(0)) > 0, F.to_json(filled))
            .otherwise(image_key("after", known=known)))


def _complete_key(image: str, known: Sequence[Sequence[str]] = ()) -> Column:
    """The key of ``image`` when the image holds every key column (a key-only or missing before image cannot
    say whether the key changed)."""
    img = F.col(image)
    has_all = F.array_min(per_key_column(F.col("primary_key"), lambda k: F.map_contains_key(img, k), known)) | \
        (F.size(F.col("primary_key")) == 0)
    return F.when(img.isNotNull() & has_all, image_key(image, known=known))


def order_struct(phase: Column | int) -> Column:
    """The canonical order (sequence, archive position) behind a leading phase."""
    return F.struct(
        (phase if isinstance(phase, Column) else F.lit(phase)).alias("phase"),
        sequence_or_empty().alias("sequence"),
        F.col("pos_source").alias("src"), F.col("pos_partition").alias("part"), F.col("pos_offset").alias("off"),
        F.col("pos_index").alias("idx"),
    )


def event_phase() -> Column:
    """0 is the --base state; 1 a full-sync row without a vendor sequence: it cannot be placed in the change
    stream, so it is the baseline every change of its key overrides; 2 every other event."""
    no_seq = F.coalesce(F.size(F.col("sequence")), F.lit(0)) <= 0
    return F.when((F.col("op") == "SNAPSHOT") & no_seq, F.lit(1)).otherwise(F.lit(2))


def cuts_table() -> Column:
    """Events after which the table is empty: TRUNCATE, and DDL that truncates or drops the table."""
    ddl = F.lower(F.trim(F.coalesce(F.col("ddl"), F.lit(""))))
    return (F.col("op") == "TRUNCATE") | ((F.col("op") == "DDL") & ddl.rlike(r"^(truncate|drop\s+table)\b"))


def event_facts(events: DataFrame, known: Sequence[Sequence[str]] = ()) -> DataFrame:
    """Events -> facts (table_name, key, present, ord, op, event_time_ms). TRUNCATE rows are kept with key NULL:
    they cut everything before them. ``known``: the tables' declared key lists, if known (only a speed-up)."""
    op = F.col("op")
    cut = cuts_table()
    fact = lambda present, key: F.struct(F.lit(present).alias("present"), key.alias("key"))  # noqa: E731
    # The keys as columns of their own first: written inside the facts' array, each use computed them again (the
    # present key up to three times an event). The facts of 1M events to a no-op sink: 4.4 s -> 2.2 s.
    keyed = events.where(_has_table() & (op.isin(*DATA_OPS) | cut)).select(
        "table_name", F.when(cut, F.lit("TRUNCATE")).otherwise(op).alias("op"), "event_time_ms",
        order_struct(event_phase()).alias("ord"),
        after_key(known).alias("_present"),
        # A DELETE names its row by the before image (some formats: key columns only, which is enough).
        F.when(op == "DELETE", image_key("before", known=known)).alias("_named"),
        F.when(op == "UPDATE", _complete_key("before", known)).alias("_before"))
    present, before = F.col("_present"), F.col("_before")
    facts = F.filter(
        F.array(
            F.when(op.isin(*PRESENT_OPS), fact(True, present)),
            F.when(op == "DELETE", fact(False, F.coalesce(F.col("_named"), present))),
            F.when((op == "UPDATE") & before.isNotNull() & (before != present), fact(False, before)),
            F.when(op == "TRUNCATE", fact(False, F.lit(None).cast("string"))),
        ),
        lambda x: x.isNotNull(),
    )
    return (
        keyed.select("table_name", "op", "event_time_ms", "ord", F.explode(facts).alias("f"))
        .select("table_name", "op", "event_time_ms", "ord", F.col("f.key").alias("key"),
                F.col("f.present").alias("present"))
    )


def base_facts(base_keys: DataFrame) -> DataFrame:
    """(table_name, key) rows of the --base state -> facts "present" ordered before every event."""
    ord_ = F.struct(F.lit(0).alias("phase"), F.lit(None).cast(SEQUENCE_TYPE).alias("sequence"),
                    F.lit(None).cast("string").alias("src"), F.lit(None).cast("int").alias("part"),
                    F.lit(None).cast("long").alias("off"), F.lit(None).cast("int").alias("idx"))
    return base_keys.select("table_name", F.lit("BASE").alias("op"), F.lit(None).cast("long").alias("event_time_ms"),
                            ord_.alias("ord"), "key", F.lit(True).alias("present"))


def as_of(facts: DataFrame, taken_at_ms: Optional[int]) -> DataFrame:
    """Facts known at ``taken_at_ms``: base rows and full-sync rows always (a snapshot pictures the table as of
    the sync, whatever the read time), changes only when their source time is not later. Changes without a
    source time cannot be placed and are kept."""
    if taken_at_ms is None:
        return facts
    t = F.col("event_time_ms")
    return facts.where(F.col("op").isin("BASE", "SNAPSHOT") | t.isNull() | (t <= F.lit(taken_at_ms)))


def implied_rows(facts: DataFrame) -> DataFrame:
    """(table_name, expected_rows): per key the last fact after the table's last TRUNCATE, counted if present."""
    by_key = Window.partitionBy("table_name", "key").orderBy(F.col("ord").desc())
    # Each table's last TRUNCATE as a small aggregate joined back, not a window over the table: such a window put
    # every fact of a table in one task, and the key window after it too (it reuses that partitioning).
    truncates = facts.where(F.col("op") == "TRUNCATE").groupBy("table_name").agg(F.max("ord").alias("last_truncate"))
    cut = facts.join(F.broadcast(truncates), "table_name", "left")
    live = cut.where(F.col("key").isNotNull()
                     & (F.col("last_truncate").isNull() | (F.col("ord") > F.col("last_truncate"))))
    last = live.withColumn("rn", F.row_number().over(by_key)).where(F.col("rn") == 1)
    tables = facts.select("table_name").distinct()
    counted = last.groupBy("table_name").agg(F.sum(F.col("present").cast("long")).alias("expected_rows"))
    return tables.join(counted, "table_name", "left").select(
        "table_name", F.coalesce("expected_rows", F.lit(0)).cast("long").alias("expected_rows"))


def collect_int_map(df: DataFrame, key: str, value: str) -> dict[str, int]:
    return {r[key]: int(r[value]) for r in df.collect()}


def op_counts(events: DataFrame) -> DataFrame:
    """(table_name, op, n) for every event with a table."""
    return events.where(_has_table()).groupBy("table_name", "op").agg(F.count(F.lit(1)).alias("n"))


def nested_counts(rows: Iterable) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["table_name"], {})[r["op"]] = int(r["n"])
    return out


def per_source_counts(events: DataFrame, dead_letters: Optional[DataFrame]) -> dict[tuple, dict[str, int]]:
    """Per source partition, counted from the replay's files (not from counts.json):
    ``event_rows``/``control_rows``: rows in events/; ``event_messages``: distinct archive records those rows came
    from, not counting assembled multi-message events (their records are accounted as fragments);
    ``dead_letter_rows``/``dead_letter_messages``: rows and distinct records in dead_letters/."""
    is_data = F.col("op").isin(*DATA_OPS)
    single = F.col("fragment_key").isNull()
    msg = F.when(single, F.col("pos_offset"))  # NULL (not counted) for assembled events
    ev = events.groupBy("pos_source", "pos_partition").agg(
        F.sum(is_data.cast("long")).alias("event_rows"),
        F.sum((~is_data).cast("long")).alias("control_rows"),
        F.count_distinct(msg).alias("event_messages"),
    ).collect()
    out: dict[tuple, dict[str, int]] = {}
    for r in ev:
        out.setdefault((r.pos_source, r.pos_partition), {}).update(
            event_rows=int(r.event_rows or 0), control_rows=int(r.control_rows or 0),
            event_messages=int(r.event_messages or 0))
    if dead_letters is not None:
        for r in dead_letters.groupBy("pos_source", "pos_partition").agg(
                F.count(F.lit(1)).alias("rows"), F.count_distinct("pos_offset").alias("messages")).collect():
            out.setdefault((r.pos_source, r.pos_partition), {}).update(
                dead_letter_rows=int(r.rows), dead_letter_messages=int(r.messages))
    return out


# ------------------------------------------------------------------------------------------ pure accounting

def conservation(counts: Mapping, observed: Mapping[tuple, Mapping[str, int]]) -> dict:
    """Records read = records that decoded to kept events + dead letters + fragments + records filtered out, per
    source partition and for the replay, in *records* (archived messages), not rows: a Canal message with three
    rows is one record with three events.

    Two quantities are not in the replay's files and are bounded when counts.json does not give them exactly:
    * records filtered out by --since/--until/--tables (counts.json counts filtered *rows*; the rows of one
      record share table and time, so 1 <= records <= rows when any row was filtered; exact with
      ``filtered_records``);
    * the overlap of fragment records (multi-message events: DataWorks update halves, OMS Avro shards) with
      events/ and dead_letters/: an assembled event keeps the position of one of its fragments, and a failed
      assembly dead-letters every fragment, so between 0 and ``fragments`` records are seen twice (exact with
      ``assembled_events`` + ``fragment_dead_letters``).
    Returns {"ok", "sources": [...], "problems": [...], "records_read"}."""
    problems: list[str] = []
    sources = []
    for s in counts.get("sources", []):
        key = (s["source"], s["partition"])
        where = f"source {s['source']} partition {s['partition']}"
        o = observed.get(key, {})
        records = int(s.get("records", 0))
        event_messages = int(o.get("event_messages", 0))
        dead = int(o.get("dead_letter_messages", 0))
        fragments = int(s.get("fragments", 0))
        filtered_rows = int(s.get("filtered_out", 0))
        tombstones = int(s.get("tombstones", 0))  # Kafka tombstones: read, not CDC messages, no output row
        residual = records - event_messages - dead - fragments - tombstones  # = filtered - fragments seen twice
        if "filtered_records" in s:
            f_lo = f_hi = int(s["filtered_records"])
        else:
            f_lo, f_hi = (0, 0) if filtered_rows == 0 else (1, filtered_rows)
        if "assembled_events" in s:
            o_lo = o_hi = int(s["assembled_events"]) + int(s.get("fragment_dead_letters", 0))
        else:
            o_lo, o_hi = 0, fragments
        lo, hi = f_lo - o_hi, f_hi - o_lo
        ok = lo <= residual <= hi
        unaccounted = 0 if ok else (residual - hi if residual > hi else residual - lo)
        exact = f_lo == f_hi and o_lo == o_hi
        entry = {
            "source": s["source"], "partition": s["partition"], "records_read": records,
            "messages_with_events": event_messages, "dead_letters": dead, "fragments": fragments,
            "filtered_out_rows": filtered_rows,
            # derived where the other unknown is fixed, else None (only bounds are known)
            "filtered_out_records": residual + o_lo if o_lo == o_hi else (f_lo if f_lo == f_hi else None),
            "unaccounted": unaccounted,
            "event_rows": int(o.get("event_rows", 0)), "control_rows": int(o.get("control_rows", 0)),
            "ok": ok,
            "rule": "records read = records with events + dead letters + fragment records + records filtered "
                    "out - fragment records seen twice" + ("" if exact else
                                                          f" (checked within bounds: {lo} <= {residual} <= {hi})"),
        }
        # Rows counted by replay vs rows found in the files: a lost or extra part file shows here.
        rows_counted = int(s.get("events", 0)) + int(s.get("control", 0))
        rows_found = entry["event_rows"] + entry["control_rows"]
        if rows_counted != rows_found:
            entry["ok"] = False
            problems.append(f"{where}: counts.json has {rows_counted} event rows, events/ holds {rows_found}")
        if int(s.get("dead_letters", 0)) != int(o.get("dead_letter_rows", 0)):
            entry["ok"] = False
            problems.append(f"{where}: counts.json has {s.get('dead_letters', 0)} dead letters, dead_letters/ "
                            f"holds {o.get('dead_letter_rows', 0)}")
        if not ok:
            problems.append(f"{where}: {records} records read, {event_messages} with events + {dead} dead letters + "
                            f"{fragments} fragments + {filtered_rows} filtered rows do not add up "
                            f"({unaccounted:+d} unaccounted)")
        sources.append(entry)
    known = {(s["source"], s["partition"]) for s in counts.get("sources", [])}
    for key in sorted(observed, key=lambda k: (str(k[0]), k[1] if k[1] is not None else -1)):
        if key not in known:
            problems.append(f"source {key[0]} partition {key[1]}: rows in the replay output but no read count "
                            f"in counts.json")
    total_read = sum(e["records_read"] for e in sources)
    if counts.get("records_read") is not None and int(counts["records_read"]) != total_read:
        problems.append(f"counts.json records_read {counts['records_read']} != sum over sources {total_read}")
    return {"ok": not problems and all(e["ok"] for e in sources), "sources": sources, "problems": problems,
            "records_read": total_read}


def event_count_problems(counts: Mapping, found: Mapping[str, Mapping[str, int]]) -> list[str]:
    """counts.json ``events``/``control`` vs the events the files hold, per table and op."""
    problems = []
    claimed = {t: dict(ops) for t, ops in (counts.get("events") or {}).items()}
    for table in sorted(set(claimed) | {t for t, ops in found.items() if any(o in DATA_OPS for o in ops)}):
        for op in DATA_OPS:
            a = int(claimed.get(table, {}).get(op, 0))
            b = int(found.get(table, {}).get(op, 0))
            if a != b:
                problems.append(f"{table}: counts.json says {a} {op} events, events/ holds {b}")
    return problems


def encoding_check(counts: Mapping, found: Mapping[str, Mapping[str, int]], target_ops: Iterable[str],
                   messages_per_update: int, lines_written: Optional[int]) -> Optional[dict]:
    """Events in = messages out, per table and op, for a replay with --to-format.

    ``found``: events per table and op in events/ (the encoder's input). Ops the target cannot carry are folded
    the way encoders do (SNAPSHOT is written as INSERT) or listed as not carried. Message types named like a
    canonical op are matched op by op; vendor-specific types (DataWorks UPDATE_BEFOR/UPDATE_AFTER) are matched
    as a group against the remaining ops of the table. Message counts: a format that writes one update as k
    messages must show exactly k messages per update event; otherwise 1 <= messages <= events (Canal packs the
    rows of one source statement back into one message)."""
    enc = counts.get("encoded")
    if not enc:
        return None
    carried = set(target_ops)
    canonical = set(OP_COUNT_KEYS) | {"DDL", "HEARTBEAT", "BEGIN", "COMMIT"}
    k = max(1, int(messages_per_update))
    problems: list[str] = []
    rows = []
    out_by_table = enc.get("by_table") or {}

    def check(table: str, ops_in: dict[str, int], label_out: str, n_ev: int, n_msg: int) -> None:
        n_in = sum(ops_in.values())
        updates = ops_in.get("UPDATE", 0)
        if set(ops_in) == {"UPDATE"} and k > 1:
            msg_ok, rule = n_msg == k * n_in, f"{k} messages per update event"
        else:
            msg_ok = n_msg == 0 if n_in == 0 else 1 <= n_msg <= n_in + (k - 1) * updates
            rule = "1 to n events per message" + (f", {k} messages per update" if k > 1 and updates else "")
        ok = n_ev == n_in and msg_ok
        label_in = "+".join(sorted(ops_in)) or "-"
        rows.append({"table": table, "op": label_in if label_in == label_out else f"{label_in} -> {label_out}",
                     "events_in": n_in, "events_out": n_ev, "messages": n_msg, "ok": ok, "rule": rule})
        if not ok:
            problems.append(f"{table or '(no table)'} {label_in}: {n_in} events in, {n_ev} events / {n_msg} "
                            f"messages out as {label_out} ({rule})")

    for table in sorted(set(found) | set(out_by_table)):
        ins: dict[str, int] = {}
        for op, n in (found.get(table) or {}).items():
            tgt = "INSERT" if op == "SNAPSHOT" and "SNAPSHOT" not in carried else op
            if tgt in carried:
                ins[tgt] = ins.get(tgt, 0) + n
            else:
                rows.append({"table": table, "op": op, "events_in": n, "events_out": 0, "messages": 0, "ok": True,
                             "rule": f"{enc.get('format')} cannot carry {op}: not written"})
        # Events the target could not encode went to encoded_dead_letters/ (counted per canonical op): they
        # are accounted for there, not in the messages.
        for op, n in ((enc.get("dead_letters_by_table") or {}).get(table) or {}).items():
            tgt = "INSERT" if op == "SNAPSHOT" and "SNAPSHOT" not in carried else op
            if tgt in ins:
                ins[tgt] -= int(n)
                rows.append({"table": table, "op": op, "events_in": int(n), "events_out": 0, "messages": 0,
                             "ok": True, "rule": "cannot be encoded: in encoded_dead_letters/"})
        outs = {op: (int(v.get("events", 0)), int(v.get("messages", 0)))
                for op, v in (out_by_table.get(table) or {}).items()}
        for op in sorted(o for o in outs if o in canonical):
            check(table, {op: ins.pop(op, 0)}, op, *outs[op])
        vendor = sorted(o for o in outs if o not in canonical)
        if vendor or ins:
            check(table, ins, "+".join(vendor) or "-", sum(outs[o][0] for o in vendor),
                  sum(outs[o][1] for o in vendor))
    total = sum(int(o.get("messages", 0)) for ops in out_by_table.values() for o in ops.values())
    if int(enc.get("messages", total)) != total:
        problems.append(f"encoded.messages {enc.get('messages')} != sum over tables {total}")
    if lines_written is not None and lines_written != int(enc.get("messages", total)):
        problems.append(f"encoded/ holds {lines_written} messages, counts.json says {enc.get('messages')}")
    return {"format": enc.get("format"), "messages": int(enc.get("messages", total)),
            "messages_written": lines_written, "rows": rows, "problems": problems, "ok": not problems}
