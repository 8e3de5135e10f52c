"""Row versions -> SCD type 2 rows (``--history``)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .order import ORDER_FIELDS


def history_versions(versions: DataFrame) -> DataFrame:
    """Version starts (+ delete markers) -> SCD type 2 rows: valid from this version's sequence/event time to
    the next version's (or delete's); the open one is current. Delete markers only close versions."""
    w = Window.partitionBy("table_name", "_key", "_dup").orderBy(*ORDER_FIELDS)
    return (versions
            .withColumn("_to_sequence", F.lead("sequence").over(w))
            .withColumn("_to_event_time_ms", F.lead("event_time_ms").over(w))
            .withColumn("_to_rank", F.lead("rank").over(w))
            .filter(~F.col("deleted")))
