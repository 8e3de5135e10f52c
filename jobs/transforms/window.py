"""Parsing the replay window and table patterns into Spark expressions."""

from __future__ import annotations

import fnmatch
import re
from datetime import datetime, timezone
from typing import Iterable, Optional

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_codecs.event_schema import DATA_OP_NAMES

from cdc_jobs.errors import UsageError

_EPOCH = re.compile(r"^\d+(\.\d+)?$")
# Epoch values below this are seconds, above are milliseconds (1e11 s is the year 5138; 1e11 ms is 1973).
_MS_THRESHOLD = 100_000_000_000


def parse_instant(text: Optional[str], option: str) -> Optional[int]:
    """ISO-8601 (offset or Z; a value without one is taken as UTC) or epoch seconds/ms -> epoch ms."""
    if text is None or str(text).strip() == "":
        return None
    t = str(text).strip()
    if _EPOCH.match(t):
        value = float(t)
        return int(value) if value >= _MS_THRESHOLD else int(round(value * 1000))
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"{option}: '{t}' is neither ISO-8601 (e.g. 2024-01-01T00:00:00+00:00) nor epoch "
                         f"seconds/milliseconds") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def window_filter(since_ms: Optional[int], until_ms: Optional[int]) -> Column:
    """since <= event time < until. Events without a source time (full-sync rows of formats that carry none,
    some control records) cannot be placed in a window: they are kept, and merge orders them as snapshots."""
    t = F.col("event_time_ms")
    cond = F.lit(True)
    if since_ms is not None:
        cond = cond & (t >= F.lit(since_ms))
    if until_ms is not None:
        cond = cond & (t < F.lit(until_ms))
    return t.isNull() | cond


def split_patterns(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in str(v).split(",") if p.strip())
    return out


def tables_filter(patterns: list[str]) -> Column:
    """db.table globs (fnmatch, case-sensitive as MySQL on Linux). Control records without a table are kept:
    heartbeats and transaction markers belong to every table."""
    if not patterns:
        return F.lit(True)
    regex = "|".join(fnmatch.translate(p) for p in patterns)
    return F.col("table_name").isNull() | F.col("table_name").rlike(f"^(?:{regex})$")



def parse_primary_keys(values: Iterable[str]) -> list[tuple[str, list[str]]]:
    out = []
    for v in values or ():
        tables, sep, cols = str(v).partition("=")
        columns = [c.strip() for c in cols.split(",") if c.strip()]
        if not sep or not tables.strip() or not columns:
            raise UsageError(f"--primary-key: '{v}' is not TABLES=COL[,COL] (e.g. shop.order_items=order_id,line_no)")
        out.append((tables.strip(), columns))
    return out


def with_primary_keys(events, keys: list[tuple[str, list[str]]]):
    """The user's key declaration wins for matching tables (the first matching declaration), so merge and verify
    key every event of a table the same way, whatever the format carried."""
    if not keys:
        return events
    pk = F.col("primary_key")
    for tables, columns in reversed(keys):
        regex = fnmatch.translate(tables)
        pk = F.when(F.col("table_name").rlike(f"^(?:{regex})$") & F.col("op").isin(*_DATA_OPS),
                    F.array(*[F.lit(c) for c in columns])).otherwise(pk)
    return events.withColumn("primary_key", pk)


_DATA_OPS = DATA_OP_NAMES
