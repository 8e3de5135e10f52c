"""The merge step's hand-written peer, measured beside `cdc-replay merge` by ``bench.run`` (``--steps merge``) on one
shared replay of the generated archive.

What a Spark engineer writes by hand for "latest image per key": data events, ``row_number()`` over (table,
primary-key values) ordered by sequence and position descending, keep row 1, drop deletes, write the after images
as Parquet partitioned by table. It has none of merge's semantics (partial images, duplicates, DDL, typing,
tombstones, --base): it is the floor to compare with.

    python -m bench.merge_step [bench.run options]   # same as python -m bench.run --steps merge ...
"""

from __future__ import annotations

import sys
from pathlib import Path


def peer_merge(spark, replay: Path, out: Path) -> None:
    """Hand-written upsert: latest event per (table, key) by (sequence, position); deletes drop the key."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    events = spark.read.parquet(str(replay / "events"))
    data = events.filter(F.col("op").isin("SNAPSHOT", "INSERT", "UPDATE", "DELETE"))
    key = F.transform("primary_key", lambda k: F.coalesce(F.element_at("after", k), F.element_at("before", k)))
    w = Window.partitionBy("table_name", "_key").orderBy(
        *[F.col(c).desc() for c in ("sequence", "pos_source", "pos_partition", "pos_offset", "pos_index")])
    latest = (data.withColumn("_key", key).withColumn("_rn", F.row_number().over(w))
              .filter((F.col("_rn") == 1) & (F.col("op") != "DELETE")))
    latest.select("table_name", "_key", F.col("after").alias("image"), "op", "sequence") \
        .write.partitionBy("table_name").parquet(str(out))


def main() -> None:
    from bench import run

    sys.argv = [sys.argv[0], "--steps", "merge", *sys.argv[1:]]
    run.main()


if __name__ == "__main__":
    main()
