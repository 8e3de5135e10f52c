"""Merged tables as Delta Lake tables: how they are written, read, published to a stable path, and described.

Merge writes each ``STATE/<db.table>/`` (and ``STATE/_history/<db.table>/``) as a fresh Delta table inside its
staged output (one version, whose commit carries the replay window as ``userMetadata``); a directory holding a
``_delta_log/`` is read through Delta, any other through plain Parquet (``--state-format parquet``, or a state
written before). ``publish`` copies the tables of a verified state into one stable Delta table per source table
(``TABLES/<db.table>/``): each publish is one new version of that table, so the latest version is the latest
verified state and every earlier day stays readable with ``VERSION AS OF`` (the version's ``userMetadata``
names its window). Delta's optimistic commit refuses a writer when another committed to the same table after it
started (a ``ConcurrentModificationException``, e.g. ``ConcurrentAppendException``; tested); on S3 its default log store assumes one writing
driver per table, which the scheduler gives (one run per pipeline and day, days in order).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from cdc_jobs.io import driver_threads

if TYPE_CHECKING:  # no pyspark import at run time: the Airflow side imports cdc_jobs.io.atomic, which names DELTA_LOG
    from pyspark.sql import DataFrame, SparkSession

DELTA_LOG = "_delta_log"
FORMATS = ("delta", "parquet")
METADATA_KEY = "cdc_replay"  # the key of our object in a commit's userMetadata JSON


def is_delta(directory: Path) -> bool:
    return (directory / DELTA_LOG).is_dir()


def has_table(directory: Path) -> bool:
    """A Delta table, or a plain Parquet directory (names starting '_' or '.' are not data files)."""
    return is_delta(directory) or any(p.suffix == ".parquet" and not p.name.startswith(("_", "."))
                                      for p in directory.rglob("*.parquet"))


def read_table(spark: SparkSession, directory: Path, version: Optional[int] = None) -> DataFrame:
    """A merged table, whichever format it was written in. A Delta directory also holds the files of earlier
    versions (a published table), so it must never be read as plain Parquet."""
    if is_delta(directory):
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(str(directory))
    return spark.read.parquet(str(directory))


def read_partitioned(spark: SparkSession, directory: Path, schema) -> DataFrame:
    """A partitioned table merge keeps for itself (the canonical copy): through Delta when it is one; as plain
    Parquet otherwise, naming the partition directories (Spark skips paths starting with '_' when listing, and
    ``basePath`` keeps the partition columns). Missing or empty: no rows."""
    if is_delta(directory):
        return spark.read.format("delta").load(str(directory)).select(*schema.fieldNames())
    parts = sorted(str(p) for p in directory.glob("*=*") if p.is_dir())
    if not parts:
        return spark.createDataFrame([], schema)
    return spark.read.option("basePath", str(directory)).schema(schema).parquet(*parts)


def write_partitioned(df: DataFrame, directory: Path, state_format: str, partition_by: list[str],
                      metadata: Optional[dict] = None, column_stats: bool = True) -> None:
    """The partitioned twin of ``write_table`` (one Delta version, or plain Parquet files). ``column_stats``
    false: Delta records only each file's row count, no per-column minimum and maximum (a table read whole or
    by partition, as merge reads its canonical copy, never skips a file by them; collecting them cost 0.4 s of
    a 1M-event merge's 7.5)."""
    writer = df.write.partitionBy(*partition_by)
    if state_format == "parquet":
        writer.parquet(str(directory))
        return
    writer = writer.format("delta").mode("overwrite")
    if not column_stats:
        writer = writer.option("delta.dataSkippingNumIndexedCols", "0")
    if metadata is not None:
        writer = writer.option("userMetadata", commit_metadata(metadata))
    writer.save(str(directory))


def write_table(df: DataFrame, directory: Path, state_format: str, metadata: Optional[dict] = None) -> None:
    """Write ``df`` as the table at ``directory``: a new Delta version (schema replaced: DDL is Delta's schema
    evolution by overwrite, earlier versions keep their schema) or plain Parquet files."""
    if state_format == "parquet":
        df.write.parquet(str(directory))
        return
    writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
    if _needs_column_mapping(df):
        # Delta refuses ' ,;{}()\n\t=' in column names unless columns are mapped by name; MySQL and PostgreSQL
        # allow them.
        writer = writer.option("delta.columnMapping.mode", "name")
    if metadata is not None:
        writer = writer.option("userMetadata", commit_metadata(metadata))
    writer.save(str(directory))


def _needs_column_mapping(df: DataFrame) -> bool:
    return any(set(" ,;{}()\n\t=") & set(name) for name in df.columns)


def commit_metadata(metadata: dict) -> str:
    """The userMetadata text of a commit: one JSON object under our key, keys sorted (re-runs write it equal)."""
    return json.dumps({METADATA_KEY: metadata}, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Commit:
    version: int
    operation: str
    metadata: Optional[dict]  # our object of the commit's userMetadata, None when another writer made it


def history(spark: SparkSession, directory: Path, limit: Optional[int] = None) -> list[Commit]:
    """The table's commits, newest first (``DESCRIBE HISTORY``; only the commit info, not the data)."""
    sql = f"DESCRIBE HISTORY delta.`{_quoted(directory)}`" + (f" LIMIT {int(limit)}" if limit else "")
    out = []
    for r in spark.sql(sql).select("version", "operation", "userMetadata").collect():
        out.append(Commit(int(r["version"]), r["operation"], _ours(r["userMetadata"])))
    return out


def _ours(text: Optional[str]) -> Optional[dict]:
    try:
        value = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return value.get(METADATA_KEY) if isinstance(value, dict) else None


def _quoted(directory: Path) -> str:
    return str(directory).replace("`", "``")


def state_digest(state: Path) -> str:
    """What a state holds, as one digest: its ``_state.json`` (tables, row counts, columns, last sequence and
    position per table). A re-run of the same day writes it equal, so publishing it again changes nothing."""
    return hashlib.sha256((state / "_state.json").read_bytes()).hexdigest()


def publish(spark: SparkSession, state: Path, state_uri: str, tables: dict[str, Path], root: Path,
            window: dict) -> list[dict[str, Any]]:
    """Make each table of the verified ``state`` the latest version of ``root/<table>/``, unless that table
    already holds this state (a re-run: nothing to do) or a later window (a re-run of an earlier day must not
    hide the newer state; RESTORE or a re-run of the later days moves it). Returns one entry per table."""
    digest = state_digest(state)
    metadata = {"window": window, "state": state_uri, "state_digest": digest}
    # Each table is its own Delta log and commit, mostly driver work (a log snapshot, a small write, a commit):
    # publishing them from a few driver threads keeps the cores busy instead of one table after another.
    return driver_threads.run_all([functools.partial(_publish_one, spark, name, directory, root / name, digest,
                                                     window, metadata)
                                   for name, directory in sorted(tables.items())])


def _publish_one(spark: SparkSession, name: str, directory: Path, target: Path, digest: str, window: dict,
                 metadata: dict) -> dict[str, Any]:
    latest = history(spark, target, limit=1)[0] if is_delta(target) else None
    mark = (latest.metadata or {}) if latest else {}
    if mark.get("state_digest") == digest:
        return {"table": name, "action": "unchanged", "version": latest.version}
    newer = (mark.get("window") or {}).get("until_ms")
    if newer is not None and window.get("until_ms") is not None and newer > window["until_ms"]:
        return {"table": name, "action": "kept newer", "version": latest.version, "newer_until_ms": newer}
    write_table(read_table(spark, directory), target, "delta", metadata)
    return {"table": name, "action": "published", "version": history(spark, target, limit=1)[0].version}
