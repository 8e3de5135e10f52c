"""Merge and verify read outputs of earlier runs, which may have been damaged by hand (a file edited, replaced or
truncated, rows written by another tool). They treat them as untrusted: what does not hold the event record's
rules, or cannot be read at all, stops the job with one clear line naming the input (``UsageError``, exit 2),
never a traceback from deep inside a Spark plan.

``check_events``: one pass over the light columns of ``events/`` for rows `replay` never writes (a data event
without table, an event without a known op), with the count and an example position. ``problem_counts`` /
``damaged``: the same counts as aggregates that another pass over the events carries (merge's survey), so that
an undamaged input costs no pass of its own; ``check_events`` runs only when they find something, to name it.
``readable``: Spark's errors for a file that is not Parquet, cannot be read or does not have the event record's
types, raised wherever the lazy plan first reads it, turned into that one line.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterable, Iterator

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from cdc_codecs.event import Op
from cdc_codecs.event_schema import DATA_OP_NAMES

from cdc_jobs.errors import UsageError

_OPS = [o.value for o in Op]


def _problems() -> dict[str, object]:
    op, name, table = F.col("op"), F.col("table_name"), F.col("table")
    return {
        "data events without a table": op.isin(*DATA_OP_NAMES) & (
            name.isNull() | (name == "") | table.isNull() | (table == "")),
        "events without a known op": op.isNull() | ~op.isin(*_OPS),
    }


def problem_counts() -> list[Column]:
    """Aggregates counting the rows ``check_events`` looks for, to add to another aggregate over the events (a
    count is a compiled, fixed-width aggregate: it costs that pass nothing measurable, 1M events)."""
    return [F.count_if(cond).alias(f"_damaged{n}") for n, cond in enumerate(_problems().values())]


def damaged(rows: Iterable[Row]) -> bool:
    """Whether the rows of an aggregate that carried ``problem_counts`` counted any damaged row."""
    return any(r[f"_damaged{n}"] for r in rows for n in range(len(_problems())))


def check_events(events: DataFrame, label: str) -> None:
    """Raise ``UsageError`` when ``events`` (an ``events/`` directory, read with the EVENT schema) holds rows that
    `replay` never writes; ``label`` names the input (``--replay DIR``)."""
    problems = _problems()
    where = F.concat_ws(" ", F.coalesce(F.col("pos_source"), F.lit("?")),
                        F.coalesce(F.col("pos_partition").cast("string"), F.lit("?")),
                        F.coalesce(F.col("pos_offset").cast("string"), F.lit("?")))
    aggregates = []
    for n, cond in enumerate(problems.values()):
        aggregates += [F.sum(F.when(cond, 1).otherwise(0)).alias(f"n{n}"),
                       F.min(F.when(cond, where)).alias(f"at{n}")]
    row = events.agg(*aggregates).first()
    found = [(reason, row[f"n{n}"], row[f"at{n}"]) for n, reason in enumerate(problems) if row[f"n{n}"]]
    if found:
        detail = "; ".join(f"{count} {reason} (e.g. source, partition, offset: {at})" for reason, count, at in found)
        raise UsageError(f"{label}: events/ is damaged: {detail}. `cdc-replay replay` never writes such rows "
                         f"(a message without its table is a dead letter): was it edited by hand? Replay again.")


# Spark's words for a file it cannot read as the Parquet the schema says: not Parquet at all, a broken footer or
# page, a column of another type. Matched on the error text, as PySpark raises them under several classes.
_UNREADABLE = re.compile(
    r"(FAILED_READ_FILE|CANNOT_READ_FILE_FOOTER|is not a Parquet file|Could not read footer|"
    r"PARQUET_COLUMN_DATA_TYPE_MISMATCH|Parquet column cannot be converted|can not read class|"
    r"ParquetDecodingException|CORRUPTED|UNABLE_TO_INFER_SCHEMA|Unsupported encoding)", re.I)
_PATH = re.compile(r"((?:file:|hdfs:|s3a?:|gs:|abfss?:)[^\s,'\"]+\.parquet|/[^\s,'\"]+\.parquet)")


@contextmanager
def readable(command: str) -> Iterator[None]:
    """Turn a Spark read error of a damaged input file, raised anywhere inside the block, into a ``UsageError``
    naming the file."""
    try:
        yield
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - only Spark's unreadable-file errors are translated
        text = str(exc)
        if not _UNREADABLE.search(text):
            raise
        path = _PATH.search(text)
        what = _UNREADABLE.search(text).group(1)
        raise UsageError(f"an input file cannot be read as the {command} expects ({what})"
                         f"{': ' + path.group(1) if path else ''}. Was an output damaged or replaced by hand? "
                         "Re-create it with the command that wrote it.") from None
