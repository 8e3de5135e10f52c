"""A value per key column name, computed so that Spark compiles it for the key lists a run knows. Merge keys its
events and verify derives its counts each by its own rules; both look up key columns by name, and take it from
here."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F


def per_key_column(keys: Column, value: Callable[[Column], Column], known: Sequence[Sequence[str]]) -> Column:
    """``value`` of each name in the array column ``keys``, as an array. For the key lists in ``known`` (the
    tables' declared keys, a handful) the names are spelled out as literals, which Spark compiles; any other list
    takes the lambda form, which Spark interprets per element (3-4x the CPU)."""
    out: Optional[Column] = None
    for names in known:
        cond = keys == F.array(*[F.lit(n) for n in names])
        values = F.array(*[value(F.lit(n)) for n in names])
        out = F.when(cond, values) if out is None else out.when(cond, values)
    generic = F.transform(keys, value)
    return generic if out is None else out.otherwise(generic)
