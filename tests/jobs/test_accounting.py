"""The replay's counts come from one aggregate observed on the events write (``accounting.counted``); it must give
what a GROUP BY of the same rows gives, NULL keys and NULL sums included, however the rows are split into tasks."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_jobs.transforms.accounting import TALLY_KEYS, counted, groups, summarise, summary_of

pytestmark = pytest.mark.spark

SCHEMA = T.StructType([
    T.StructField("pos_source", T.StringType()), T.StructField("pos_partition", T.IntegerType()),
    T.StructField("table_name", T.StringType()), T.StructField("op", T.StringType()),
    T.StructField("dl_reason", T.StringType()), T.StructField("first_of_record", T.BooleanType()),
    T.StructField("pos_offset", T.LongType()), T.StructField("event_time_ms", T.LongType()),
])


def _rows(n: int, seed: int) -> list[tuple]:
    rnd = random.Random(seed)
    pick = rnd.choice
    return [(pick(["a.jsonl", "b.jsonl", None]), pick([0, 1, None]), pick(["shop.orders", "shop.items", None]),
             pick(["INSERT", "DELETE", "HEARTBEAT", "FRAGMENT", "TOMBSTONE", None]), pick([None, None, "bad"]),
             pick([True, False, None]), pick([i, None]) if i % 7 else None,
             pick([1_700_000_000_000 + i, None, 2**62])) for i in range(n)]


def _grouped(frame) -> list[dict]:
    """The former accounting: a GROUP BY of the same derived columns."""
    derived = frame.select(*[F.col(c) for c in TALLY_KEYS[:4]],
                           F.when(F.col("dl_reason").isNotNull(), "dead").when(F.col("op") == "FRAGMENT", "fragment")
                           .when(F.col("op") == "TOMBSTONE", "tombstone")
                           .when(F.col("op").isin("INSERT", "DELETE"), "data").otherwise("control").alias("kind"),
                           F.col("first_of_record"), F.col("pos_offset"), F.col("event_time_ms"))
    return [r.asDict() for r in derived.groupBy(*TALLY_KEYS[:5]).agg(
        F.count(F.lit(1)).alias("rows"), F.sum(F.col("first_of_record").cast("long")).alias("records"),
        F.min("pos_offset").alias("first_offset"), F.max("pos_offset").alias("last_offset"),
        F.max("event_time_ms").alias("max_event_time_ms")).collect()]


def _key(r: dict) -> tuple:
    return tuple("" if r[k] is None else str(r[k]) for k in TALLY_KEYS[:5])


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_the_tally_is_the_group_by_of_the_rows(spark, tmp_path, partitions):
    frame = spark.createDataFrame(_rows(2_000, partitions), SCHEMA).repartition(partitions)
    rows, observation = counted(frame, F.lit(True), F.col("table_name") != "shop.items", None)
    rows.where(F.col("op") == "INSERT").write.parquet(str(tmp_path / "written"))  # the action that counts
    tally = [{**g, "records": g["sum"], "first_offset": g["least"], "last_offset": g["greatest"],
              "max_event_time_ms": g["latest"]} for g in groups(observation, TALLY_KEYS)]
    assert sum(r["rows"] for r in tally) == 2_000
    assert {r["kept"] for r in tally} == {None, "kept", "tables"}
    merged: dict[tuple, dict] = {}
    for r in tally:  # the GROUP BY below has no "kept"/"assembled" keys: add those groups up
        m = merged.setdefault(_key(r), {**{k: r[k] for k in TALLY_KEYS[:5]}, "rows": 0, "records": None,
                                        "first_offset": None, "last_offset": None, "max_event_time_ms": None})
        m["rows"] += r["rows"]
        for field, fold in (("records", lambda a, b: a + b), ("first_offset", min), ("last_offset", max),
                            ("max_event_time_ms", max)):
            if r[field] is not None:
                m[field] = r[field] if m[field] is None else fold(m[field], r[field])
    assert sorted(merged.values(), key=_key) == sorted(_grouped(frame), key=_key)


def test_counts_of_no_rows_are_empty(spark):
    frame = spark.createDataFrame([], SCHEMA)
    assert summarise(frame, F.lit(True), F.lit(True)) == summary_of([])
