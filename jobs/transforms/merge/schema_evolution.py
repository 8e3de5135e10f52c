"""The table's columns through the run: declared column lists and DDL applied at their positions (driver side,
on small collected aggregates), and the two Spark aggregates that feed it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .ddl_parse import DdlAction
from .keys import event_hash
from .order import OrderKey, rank_column
from ..sequence import sequence_or_empty

SCHEMA_OPS = ("DDL", "TRUNCATE")


@dataclass
class ColumnDecl:
    name: str
    type_name: Optional[str] = None
    jdbc_type: Optional[int] = None

    def as_dict(self) -> dict:
        return {"name": self.name, "type_name": self.type_name, "jdbc_type": self.jdbc_type}


@dataclass(frozen=True)
class DdlEvent:
    order: OrderKey
    op: str
    ddl: Optional[str]
    event_time_ms: Optional[int]
    hash: str
    actions: tuple[DdlAction, ...]

    def history_entry(self) -> dict:
        rank, seq, src, part, off, idx = self.order
        return {"op": self.op, "ddl": self.ddl, "event_time_ms": self.event_time_ms,
                "sequence": [str(s) for s in seq], "rank": rank,
                "position": {"source": src, "partition": part, "offset": off, "index": idx},
                "hash": self.hash,
                "applied": [a.__dict__ for a in self.actions] if self.actions else "ignored"}


def find_column(cols: list[ColumnDecl], name: str) -> Optional[int]:
    for i, c in enumerate(cols):
        if c.name == name:
            return i
    lowered = name.lower()
    for i, c in enumerate(cols):
        if c.name.lower() == lowered:
            return i
    return None


def evolve_columns(base: Sequence[ColumnDecl], lists: Iterable[tuple[OrderKey, OrderKey, Sequence[ColumnDecl]]],
                   ddls: Iterable[DdlEvent]) -> list[ColumnDecl]:
    """The table's columns after the run. ``lists`` are the distinct column lists the events declared, with the
    first and last order key each was seen at: a column appears (in list order) at the first sighting, takes
    the type of the latest declaration, and DDL adds/drops/renames/retypes at its own position. Ordering columns
    by first sighting makes ``--base`` + today give the same column order as merging everything at once. A table's
    only list, with no DDL, may come without order keys (None): nothing is placed against it."""
    cols = [ColumnDecl(c.name, c.type_name, c.jdbc_type) for c in base]
    steps: list[tuple[OrderKey, int, Any]] = []
    # At one order key the DDL goes first: a DDL event's own column list (Canal mysqlType, CloudCanal
    # tableChanges) already describes the table after the statement.
    for d in ddls:
        steps.append((d.order, 0, ("ddl", d.actions)))
    for first, last, decl in lists:
        steps.append((first, 1, ("appear", decl)))
        steps.append((last, 2, ("declare", decl)))
    steps.sort(key=lambda s: (s[0], s[1]))
    for _, _, (what, payload) in steps:
        if what in ("appear", "declare"):
            for c in payload:
                i = find_column(cols, c.name)
                if i is None:
                    cols.append(ColumnDecl(c.name, c.type_name, c.jdbc_type))
                elif what == "declare" and (c.type_name or c.jdbc_type is not None):
                    cols[i] = ColumnDecl(cols[i].name, c.type_name, c.jdbc_type)
            continue
        for a in payload:
            i = find_column(cols, a.column) if a.column else None
            if a.kind == "add" and i is None:
                cols.append(ColumnDecl(a.column, a.type_name))
            elif a.kind == "drop" and i is not None:
                cols.pop(i)
            elif a.kind == "rename" and i is not None and find_column(cols, a.new_name) is not None:
                cols.pop(i)  # the new name is already known (declared earlier): keep that one
            elif a.kind == "rename" and i is not None:
                cols[i] = ColumnDecl(a.new_name, a.type_name or cols[i].type_name,
                                     None if a.type_name else cols[i].jdbc_type)
            elif a.kind == "modify" and i is not None and a.type_name:
                cols[i] = ColumnDecl(cols[i].name, a.type_name, None)
    return cols


def _declared(events: DataFrame) -> tuple[DataFrame, list]:
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    return (events.filter(F.size(F.coalesce("columns", F.array())) > 0),
            ["table_name", F.col("columns.name").alias("names"), F.col("columns.type_name").alias("types"),
             F.col("columns.jdbc_type").alias("jdbc"), pk.alias("pk"), F.col("row_id_column").alias("row_id")])


def declarations(events: DataFrame, *also: SparkColumn) -> DataFrame:
    """Small aggregate: per table, each distinct declared column list (with key and row-id column). A hash
    aggregate: cheap, unlike the order keys of ``column_lists``, which only some tables need.

    Events that declare no columns form groups of their own; the column ``declares`` tells the declared lists
    from those. ``also``: more aggregates over every event, computed in the same pass (a second pass over the
    events costs as much as this one)."""
    # Grouped by the declared list as stored, its fields taken apart only in the few rows of the result: taking
    # them apart for every event (three new arrays an event) and hashing those cost more than reading the lists
    # (1M events: 0.88 s -> 0.72). A list that differs only in a column's ``number`` flag is a group of its own.
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    grouped = events.groupBy("table_name", F.col("columns").alias("_columns"), pk.alias("pk"),
                             F.col("row_id_column").alias("row_id")).agg(F.count(F.lit(1)).alias("events"), *also)
    return grouped.select(
        "*", F.col("_columns.name").alias("names"), F.col("_columns.type_name").alias("types"),
        F.col("_columns.jdbc_type").alias("jdbc"),
        (F.size(F.coalesce("_columns", F.array())) > 0).alias("declares")).drop("_columns")


def column_lists(events: DataFrame, tables: Optional[Sequence[str]] = None) -> DataFrame:
    """Small aggregate: per table (of ``tables``, default all), each distinct declared column list with its first
    and last order key. The minimum and maximum of a struct are a sort-based aggregate: several times the cost
    of ``declarations`` over the same events."""
    order = F.struct(rank_column().alias("rank"), sequence_or_empty().alias("sequence"), "pos_source",
                     "pos_partition", "pos_offset", "pos_index")
    declaring, grouping = _declared(events)
    if tables is not None:
        declaring = declaring.filter(F.col("table_name").isin(*tables))
    return declaring.groupBy(*grouping).agg(F.min(order).alias("first"), F.max(order).alias("last"))


def schema_events(events: DataFrame) -> DataFrame:
    """DDL / TRUNCATE events of named tables, deduplicated by content + sequence (first position wins)."""
    ddl = (events.filter(F.col("op").isin(*SCHEMA_OPS) & F.col("table_name").isNotNull())
           .withColumn("hash", event_hash()).withColumn("rank", F.lit(1)))
    first = F.min(F.struct("rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index",
                           "event_time_ms", "op", "ddl"))
    return ddl.groupBy("table_name", "hash").agg(first.alias("e")).select("table_name", "hash", "e.*")

