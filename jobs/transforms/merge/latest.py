"""The set-based part of the merge: for most keys the state is decided by one event, found with window functions
over the key's rows in order, without replaying the key's events one by one.

Work rows arrive hash-partitioned by (table, key) and are sorted once by ``SORT_COLUMNS`` (base row first, then
the order key); every window below shares that one sort. A key is *decided* when, of the rules in
``cdc_jobs.transforms.merge`` (the package docstring), only the last applied event matters:

- the key's last *run* (its rows with the highest ``(rank, sequence)``) is one event, possibly re-sent: every row
  of it has the same (identity, role), so the first copy is the one applied and the others are duplicates. A run
  of different events sharing a sequence goes to the ordered apply, which skips copies by identity;
- that event L is ordered after the ``--base`` row of the key and is not a late copy of the base's last event; or
  no event is after the base row: the base row is the state, unchanged;
- L decides the row by itself: a DELETE (tombstone), an INSERT / SNAPSHOT (its image), an UPDATE whose image
  replaces the row, or an UPDATE whose
  after image has every column any image of the key (base row included) ever had - then overlaying it on any
  earlier state gives exactly that after image, and the last *present* value of every column is L's;
- nothing else can change the key between its first row and L: no column is removed by any event of the key,
  the table's DDL in this run (if any) is ordered before the key's first row, the table has a primary key or a
  row-id column (key-less tables count identical rows, which needs the ordered apply), and no history is asked
  for (history needs every version).

Decided keys leave the window step as one row carrying the final image; the other keys keep all their rows, in
order, for the per-key ordered apply (``apply``). Both go through one ``mapInArrow`` pass, where decided rows are
copied column-wise (no Python object per row).
"""

from __future__ import annotations

from typing import Optional

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .keys import IMAGE_TYPE, ROW_HASH, SORT_COLUMNS, WORK_COLUMNS, content, identity
from .order import OrderKey
from ..sequence import SEQUENCE_TYPE, sequence_or_empty

DECIDED = "_decided"  # this row is the whole state of its key (the ordered apply passes it through)
DECIDED_IMAGE = "_decided_image"


def order_struct(rank: SparkColumn | None = None) -> SparkColumn:
    """The order key as a Spark struct, NULL positions read as ``order.order_key`` reads them. ``rank``: the
    column that holds it (default: a work row's ``rank``; an event's is ``order.rank_column()``)."""
    return F.struct((F.col("rank") if rank is None else rank).alias("rank"), sequence_or_empty().alias("sequence"),
                    F.coalesce("pos_source", F.lit("")).alias("pos_source"),
                    F.coalesce("pos_partition", F.lit(-1)).alias("pos_partition"),
                    F.coalesce("pos_offset", F.lit(0).cast("bigint")).alias("pos_offset"),
                    F.coalesce("pos_index", F.lit(0)).alias("pos_index"))


def order_literal(order: OrderKey) -> SparkColumn:
    rank, seq, src, part, off, idx = order
    return F.struct(F.lit(rank).alias("rank"),
                    F.array(*[F.lit(s) for s in seq]).cast(SEQUENCE_TYPE).alias("sequence"),
                    F.lit(src).alias("pos_source"), F.lit(part).alias("pos_partition"),
                    F.lit(off).cast("bigint").alias("pos_offset"), F.lit(idx).alias("pos_index"))


def _last_ddl(ddl_orders: dict[str, OrderKey]) -> SparkColumn:
    """Per table, the order key of its last column-changing DDL in this run (NULL: none)."""
    expr: Optional[SparkColumn] = None
    for table, order in sorted(ddl_orders.items()):
        cond = F.col("table_name") == F.lit(table)
        expr = F.when(cond, order_literal(order)) if expr is None else expr.when(cond, order_literal(order))
    return expr if expr is not None else F.lit(None)


def decide(work: DataFrame, ddl_orders: dict[str, OrderKey], history: bool) -> DataFrame:
    """Work rows, hash-partitioned by (table, key) -> rows for the ordered apply: one ``DECIDED`` row per decided
    key, all rows of the others, in ``SORT_COLUMNS`` order within each partition."""
    rows = work.select(*WORK_COLUMNS)
    if history:  # every version of every key is asked for: nothing to decide set-wise
        return (rows.withColumn("hash", identity()).withColumn(DECIDED, F.lit(False))
                .withColumn(DECIDED_IMAGE, F.lit(None).cast(IMAGE_TYPE)).sortWithinPartitions(*SORT_COLUMNS))

    in_order = SORT_COLUMNS[2:]
    by_key = Window.partitionBy("table_name", "_key").orderBy(*in_order)
    whole_key = by_key.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    # Every window uses this one spec, so one sort serves them all (a window partitioned by run would sort
    # again). A *run* = the consecutive rows of one (base, rank, sequence): copies of an event share it.
    is_base = F.col("_base") == 0
    run = F.struct("_base", "rank", "sequence")
    empty = F.create_map().cast(IMAGE_TYPE)
    step1 = rows.select(
        "*",
        order_struct().alias("_order"),
        F.coalesce(F.lag(run).over(by_key) != run, F.lit(True)).alias("_run_first"),
        # The previous row's content, to tell copies of one event apart from different events of one sequence
        # without hashing every row (``keys.content``).
        F.lag(content()).over(by_key).alias("_prev_content"),
        # Rows are in run order: the last row's run is the key's greatest.
        F.last(run).over(whole_key).alias("_last_run"),
        F.last("after").over(whole_key).alias("_last_after"),
        F.last("role").over(whole_key).alias("_last_role"),
        F.last("replaces_row").over(whole_key).alias("_last_replaces"),
        F.max(F.when(is_base, F.col("hash"))).over(whole_key).alias("_base_hash"),
    )
    in_last_run = run == F.col("_last_run")
    # A row of a run that is not the event its predecessor is: the run holds different events.
    differs = ~F.col("_run_first") & (F.col("_prev_content") != content())
    columns_seen = F.concat(F.map_keys(F.coalesce("after", empty)), F.map_keys(F.coalesce("before", empty)))
    step2 = step1.select(
        "*",
        # Asked only when the last event is a partial update (the one case it decides).
        F.max(F.when((F.col("_last_role") == "upd") & ~F.coalesce("_last_replaces", F.lit(False)),
                     F.size(F.array_except(columns_seen, F.map_keys(F.coalesce("_last_after", empty)))))
              ).over(whole_key).alias("_uncovered"),
        F.max(F.when(is_base, F.col("_order"))).over(whole_key).alias("_base_order"),
        F.max(F.coalesce(F.size("removed_columns") > 0, F.lit(False))).over(whole_key).alias("_removes"),
        F.first("_order").over(whole_key).alias("_first_order"),
        (~F.max(in_last_run & differs).over(whole_key)).alias("_last_uniform"),
        # Only a key with a base row needs its last event's identity here (is it a late copy of the base's?).
        F.last(F.when(F.col("_base_hash").isNotNull(), identity())).over(whole_key).alias("_last_hash"),
        F.last("_order").over(whole_key).alias("_last_order"),
    )
    last_ddl = _last_ddl(ddl_orders)
    eligible = F.coalesce(F.try_element_at("_key", F.lit(1)) != F.lit(ROW_HASH), F.lit(True)) & ~F.col("_removes") & \
        (last_ddl.isNull() | (F.col("_first_order") > last_ddl)) & F.col("_last_uniform")
    no_event_after_base = F.col("_base_order").isNotNull() & (F.col("_last_order") <= F.col("_base_order"))
    role = F.col("_last_role")
    by_last = (F.col("_base_order").isNull() | (F.col("_last_order") > F.col("_base_order"))) & \
        (F.col("_base_hash").isNull() | (F.col("_last_hash") != F.col("_base_hash"))) & \
        (role.isin("put", "del") | F.coalesce("_last_replaces", F.lit(False)) |
         ((role == "upd") & (F.col("_uncovered") == 0)))
    decided_key = eligible & (no_event_after_base | by_last)
    # The row that is the state: the base row when no event is after it, else the first copy of the last event.
    state_row = F.when(no_event_after_base, is_base).otherwise(in_last_run & F.col("_run_first"))
    after = F.coalesce("after", empty)
    image = (F.when(is_base, F.when(F.col("deleted"), F.lit(None).cast(IMAGE_TYPE)).otherwise(after))
             .when(F.col("role") == "del", F.lit(None).cast(IMAGE_TYPE))
             .otherwise(after))
    decided = step2.select("*", decided_key.alias("_decided_key"), state_row.alias("_state_row"))
    return (decided.filter(~F.col("_decided_key") | F.col("_state_row"))
            .select(*[F.when(F.col("_decided_key"), F.lit(None)).otherwise(F.col(c)).alias(c)
                      if c in ("before", "after") else identity().alias(c) if c == "hash" else F.col(c)
                      for c in WORK_COLUMNS],
                    F.col("_decided_key").alias(DECIDED),
                    F.when(F.col("_decided_key"), image).alias(DECIDED_IMAGE)))
    # No sortWithinPartitions here: the windows' one sort (by table, key, then SORT_COLUMNS' order) is the
    # output order, and filter / select keep it. Spark would not see a repeated sort as redundant when the
    # constant ``_base`` (no --base) is folded differently in the two, and would sort everything twice.
