"""The replay's counts: one aggregate over the decoded rows, collected as a small summary (never event data).

The aggregate (``GroupTally`` in ``jobs/transforms/jvm/``, grouped by ``TALLY_KEYS``) is an observed metric of
the first job that reads the rows (``counted``: replay's events write; ``encoded_counted``: the encoded/ write),
so the counts cost no pass of their own and the rows need not be kept for one.

Every record read lands in exactly one bucket, per source partition:
  records = records with kept events + dead letters + control-only records + filtered records + tombstones
            + fragment records (multi-message events) - overlap (assembled events and failed assemblies keep the
            position of one of their fragments: ``assembled_events`` + ``fragment_dead_letters``)
A record counts as filtered when its first row was filtered: the rows of one message share table and time.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Optional

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from cdc_codecs.event_schema import DATA_OP_NAMES, FRAGMENT, MARKER_KINDS, TOMBSTONE

DATA = list(DATA_OP_NAMES)


# The groups the counts are kept in.
TALLY_KEYS = ["pos_source", "pos_partition", "table_name", "op", "kind", "kept", "assembled"]
# The aggregate's result column in an observation.
TALLY = "tally"


def tallied(rows: DataFrame, name: str, keys: dict[str, Column], summed: Column, ranged: Column, latest: Column
            ) -> tuple[DataFrame, Observation]:
    """``rows``, tallied as they pass by the aggregate ``name`` (``GroupTally``): per group of the ``keys``, the
    rows, the sum of ``summed``, the least and greatest ``ranged`` and the greatest ``latest``. The first action
    over the returned frame (or a frame built on it) fills the observation (``groups`` reads it); later actions
    leave it as it is."""
    from cdc_jobs.jvm import group_tally

    key = F.struct(*[c.alias(n) for n, c in keys.items()])
    function = group_tally(rows.sparkSession, name, rows.select(key).schema[0].dataType)
    observation = Observation()  # a name of its own: two replays in one session never share one
    tally = F.call_function(function, key, summed.cast("long"), ranged.cast("long"), latest.cast("long"))
    return rows.observe(observation, tally.alias(TALLY)), observation


def groups(observation: Observation, keys: list[str]) -> list[dict[str, Any]]:
    """The groups of a ``tallied`` frame whose first action has run: the keys by name, and rows, sum, least,
    greatest, latest."""
    return [{**dict(zip(keys, g.pop("keys"))), **g} for g in json.loads(observation.get[TALLY])]


def counted(decoded: DataFrame, in_window: Column, in_tables: Column, until_ms: Optional[int] = None
            ) -> tuple[DataFrame, Observation]:
    """The DECODED rows, tallied as they pass by ``TALLY_KEYS`` for ``summary``."""
    is_dead = F.col("dl_reason").isNotNull()
    kind = (F.when(is_dead, "dead").when(F.col("op") == FRAGMENT, "fragment")
            .when(F.col("op") == TOMBSTONE, "tombstone")
            .when(F.col("op").isin(DATA), "data").otherwise("control"))
    keys = dict(zip(TALLY_KEYS, [F.col("pos_source"), F.col("pos_partition"), F.col("table_name"), F.col("op"),
                                 kind, kept_column(in_window, in_tables, until_ms),
                                 F.col("first_of_record").isNull()], strict=True))
    return tallied(decoded, "cdc_replay_counts", keys, F.col("first_of_record"), F.col("pos_offset"),
                   F.col("event_time_ms"))


def summary(observation: Observation) -> dict[str, Any]:
    """The counts of a ``counted`` frame whose first action has run."""
    return summary_of([{**g, "records": g["sum"], "first_offset": g["least"], "last_offset": g["greatest"],
                        "max_event_time_ms": g["latest"]} for g in groups(observation, TALLY_KEYS)])


def summarise(decoded: DataFrame, in_window: Column, in_tables: Column,
              until_ms: Optional[int] = None) -> dict[str, Any]:
    """The counts alone (one pass that writes nothing), where no job of their own reads the rows."""
    rows, observation = counted(decoded, in_window, in_tables, until_ms)
    rows.write.format("noop").mode("overwrite").save()
    return summary(observation)


def summary_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of the aggregated rows (one per ``TALLY_KEYS`` group, in any order: each with rows, records,
    first_offset, last_offset, max_event_time_ms)."""
    events: dict = defaultdict(lambda: defaultdict(int))
    control: dict = defaultdict(int)
    filtered = {"window": 0, "tables": 0}
    sources: dict = {}
    total = {"records_read": 0, "dead_letters": 0, "fragments": 0, "tombstones": 0}
    for r in rows:
        s = sources.setdefault((r["pos_source"], r["pos_partition"]), {
            "source": r["pos_source"], "partition": r["pos_partition"], "records": 0, "events": 0, "control": 0,
            "dead_letters": 0, "fragments": 0, "tombstones": 0, "filtered_out": 0, "filtered_records": 0,
            "assembled_events": 0, "fragment_dead_letters": 0, "first_offset": r["first_offset"],
            "last_offset": r["last_offset"], "max_event_time_ms": None, "held_back_from": None})
        n, records, kind, kept = r["rows"], r["records"] or 0, r["kind"], r["kept"]
        s["records"] += records
        total["records_read"] += records
        s["first_offset"] = min(s["first_offset"], r["first_offset"])
        s["last_offset"] = max(s["last_offset"], r["last_offset"])
        if r["max_event_time_ms"] is not None:
            s["max_event_time_ms"] = max(s["max_event_time_ms"] or 0, r["max_event_time_ms"])
        if kind == "dead":
            s["dead_letters"] += n
            total["dead_letters"] += n
            if r["assembled"]:
                s["fragment_dead_letters"] += n
        elif kind in ("fragment", "tombstone"):
            s[f"{kind}s"] += n
            total[f"{kind}s"] += n
        elif kept != "kept":
            s["filtered_out"] += n
            s["filtered_records"] += records
            filtered["window" if kept == "after_window" else kept] += n
            if kept == "after_window":  # read but belongs to a later window: the checkpoint must not skip it
                held = s["held_back_from"]
                s["held_back_from"] = r["first_offset"] if held is None else min(held, r["first_offset"])
        else:
            s["events" if kind == "data" else "control"] += n
            (events[r["table_name"]] if kind == "data" else control)[r["op"]] += n
            if r["assembled"]:
                s["assembled_events"] += n
    return {
        **total,
        "events": {t: dict(sorted(ops.items())) for t, ops in sorted(events.items(), key=lambda kv: kv[0] or "")},
        "control": dict(sorted(control.items())),
        "filtered_out": filtered,
        "sources": sorted(sources.values(), key=lambda s: (s["source"], s["partition"])),
    }


def kept_column(in_window: Column, in_tables: Column, until_ms: Optional[int]) -> Column:
    """What happens to a decoded row: "kept" (an event written to events/), "window" / "after_window" (outside
    the window; after it: a later replay's) or "tables" (not a replayed table); NULL for dead letters and
    markers, which are counted by their own kinds."""
    after = F.lit(False) if until_ms is None else F.col("event_time_ms") >= F.lit(until_ms)
    return (F.when(F.col("dl_reason").isNotNull() | F.col("op").isin(*MARKER_KINDS), F.lit(None))
            .when(~in_window & after, "after_window").when(~in_window, "window")
            .when(~in_tables, "tables").otherwise("kept"))


ENCODED_KEYS = ["table_name", "op", "dead"]


def encoded_counted(encoded: DataFrame) -> tuple[DataFrame, Observation]:
    """The ENCODED rows, tallied as they pass for ``encoded_summary``: messages and the events in them per table
    and op, and the events that could not be encoded."""
    keys = dict(zip(ENCODED_KEYS, [F.col("table_name"), F.col("op"), F.col("el_reason").isNotNull()], strict=True))
    return tallied(encoded, "cdc_encoded_counts", keys, F.col("events"), F.lit(None), F.lit(None))


def encoded_summary(observation: Observation) -> dict[str, Any]:
    """Messages written per table and op, and the events that could not be encoded (``encoded_dead_letters/``)
    per table and canonical op, so that events in = events in messages + encode dead letters closes."""
    rows = groups(observation, ENCODED_KEYS)
    by_table: dict = defaultdict(dict)
    dead: dict = defaultdict(dict)
    for r in rows:
        if r["dead"]:
            dead[r["table_name"] or ""][r["op"]] = r["rows"]
        else:
            by_table[r["table_name"] or ""][r["op"]] = {"events": r["sum"] or 0, "messages": r["rows"]}
    return {"messages": sum(r["rows"] for r in rows if not r["dead"]),
            "by_table": {t: dict(sorted(v.items())) for t, v in sorted(by_table.items())},
            "dead_letters": sum(r["rows"] for r in rows if r["dead"]),
            "dead_letters_by_table": {t: dict(sorted(v.items())) for t, v in sorted(dead.items())}}


def checkpoint(summary: dict[str, Any], since_ms: Optional[int], until_ms: Optional[int],
               planned: Optional[list[dict]] = None) -> dict[str, Any]:
    """Where a following replay starts, per source partition: the first record this replay read but held back
    as later than ``until``, else the planned end (Kafka) or the record after the last one read (files).
    Planned partitions that had no records are included, so a continuation never restarts them from the
    beginning. A continuation's window starts at this ``until_ms``, so records read twice are emitted once."""
    out: dict[tuple, dict] = {}
    for p in planned or ():
        out[(p["source"], p["partition"])] = {"source": p["source"], "partition": p["partition"],
                                              "next_offset": p["next_offset"], "max_event_time_ms": None}
    for s in summary["sources"]:
        key = (s["source"], s["partition"])
        default = out[key]["next_offset"] if key in out else s["last_offset"] + 1
        nxt = s["held_back_from"] if s["held_back_from"] is not None else default
        out[key] = {"source": s["source"], "partition": s["partition"], "next_offset": nxt,
                    "max_event_time_ms": s["max_event_time_ms"]}
    return {"since_ms": since_ms, "until_ms": until_ms,
            "sources": sorted(out.values(), key=lambda s: (s["source"], s["partition"]))}
