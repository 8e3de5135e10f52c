"""The order key every merge decision is taken by: ``(rank, sequence, pos_source, pos_partition, pos_offset,
pos_index)``. ``sequence`` is the vendor's typed ordering tuple compared as numbers component by component
(Spark array order == Python tuple order); the archive position breaks ties. ``rank`` is 0 only for a SNAPSHOT
row without vendor sequence (a full-sync row whose place in the change stream is unknown): every change wins over
it."""

from __future__ import annotations

from decimal import Decimal
from typing import Optional, Sequence

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from ..sequence import sequence_or_empty

ORDER_FIELDS = ["rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index"]

OrderKey = tuple  # (rank, (Decimal, ...), source, partition, offset, index)


def order_key(rank: int, sequence: Optional[Sequence[Decimal]], source: Optional[str], partition: Optional[int],
              offset: Optional[int], index: Optional[int]) -> OrderKey:
    """The driver-side (Python tuple) form of a row's order key; compares like the Spark struct."""
    return (rank or 0, tuple(sequence or ()), source or "", partition if partition is not None else -1,
            offset or 0, index or 0)


def rank_column() -> SparkColumn:
    return F.when((F.col("op") == "SNAPSHOT") & (F.size(sequence_or_empty()) == 0), 0).otherwise(1)
