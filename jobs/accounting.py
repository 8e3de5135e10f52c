"""The replay's counts: one aggregation over the decoded rows, collected as a small summary (never event data).

Every record read lands in exactly one bucket: data events, control records, dead letters (or, for formats that
split events over messages, fragments that were assembled). ``counts.json`` states each.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_codecs.event import DATA_OPS

DATA = [o.value for o in DATA_OPS]


def summarise(decoded: DataFrame, in_window: Column, in_tables: Column) -> dict[str, Any]:
    is_dead = F.col("dl_reason").isNotNull()
    kind = (F.when(is_dead, "dead").when(F.col("op") == "FRAGMENT", "fragment")
            .when(F.col("op").isin(DATA), "data").otherwise("control"))
    kept = F.when(is_dead | (F.col("op") == "FRAGMENT"), F.lit(None)).when(~in_window, "window") \
        .when(~in_tables, "tables").otherwise("kept")
    rows = (
        decoded.select(
            "pos_source", "pos_partition", "table_name", "op", kind.alias("kind"), kept.alias("kept"),
            "first_of_record", "pos_offset", "event_time_ms",
        )
        .groupBy("pos_source", "pos_partition", "table_name", "op", "kind", "kept")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum(F.col("first_of_record").cast("long")).alias("records"),
            F.min("pos_offset").alias("first_offset"),
            F.max("pos_offset").alias("last_offset"),
            F.max("event_time_ms").alias("max_event_time_ms"),
        )
        .collect()
    )
    events: dict = defaultdict(lambda: defaultdict(int))
    control: dict = defaultdict(int)
    filtered = {"window": 0, "tables": 0}
    sources: dict = {}
    total = {"records_read": 0, "dead_letters": 0, "fragments": 0}
    for r in rows:
        key = (r.pos_source, r.pos_partition)
        s = sources.setdefault(key, {"source": r.pos_source, "partition": r.pos_partition, "records": 0,
                                     "events": 0, "control": 0, "dead_letters": 0, "fragments": 0,
                                     "filtered_out": 0, "first_offset": r.first_offset,
                                     "last_offset": r.last_offset, "max_event_time_ms": None})
        s["records"] += r.records or 0
        s["first_offset"] = min(s["first_offset"], r.first_offset)
        s["last_offset"] = max(s["last_offset"], r.last_offset)
        if r.max_event_time_ms is not None:
            s["max_event_time_ms"] = max(s["max_event_time_ms"] or 0, r.max_event_time_ms)
        total["records_read"] += r.records or 0
        if r.kind == "dead":
            s["dead_letters"] += r.rows
            total["dead_letters"] += r.rows
        elif r.kind == "fragment":
            s["fragments"] += r.rows
            total["fragments"] += r.rows
        elif r.kept != "kept":
            s["filtered_out"] += r.rows
            filtered[r.kept] += r.rows
        elif r.kind == "data":
            s["events"] += r.rows
            events[r.table_name][r.op] += r.rows
        else:
            s["control"] += r.rows
            control[r.op] += r.rows
    return {
        **total,
        "events": {t: dict(sorted(ops.items())) for t, ops in sorted(events.items(), key=lambda kv: kv[0] or "")},
        "control": dict(sorted(control.items())),
        "filtered_out": filtered,
        "sources": sorted(sources.values(), key=lambda s: (s["source"], s["partition"])),
    }


def summarise_encoded(encoded: DataFrame) -> dict[str, Any]:
    rows = encoded.groupBy("table_name", "op").agg(F.count(F.lit(1)).alias("messages"),
                                                  F.sum("events").alias("events")).collect()
    by_table: dict = defaultdict(dict)
    for r in rows:
        by_table[r.table_name or ""][r.op] = {"events": int(r.events or 0), "messages": int(r.messages)}
    return {"messages": sum(r.messages for r in rows),
            "by_table": {t: dict(sorted(v.items())) for t, v in sorted(by_table.items())}}


def checkpoint(summary: dict[str, Any]) -> dict[str, Any]:
    """How far this replay got per source partition; a later replay can start at ``next_offset``."""
    return {"sources": [
        {"source": s["source"], "partition": s["partition"], "next_offset": s["last_offset"] + 1,
         "max_event_time_ms": s["max_event_time_ms"]}
        for s in summary["sources"]
    ]}
