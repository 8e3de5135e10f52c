"""``events/`` written by the task that decoded them: Parquet partitioned by table, as Spark's
``write.partitionBy("table_name").parquet`` lays it out, from the decoded Arrow batches (pyarrow's writer).

Why: Spark's row-wise Parquet writer costs about 20 CPU-us per event on the nested event columns (images, declared
columns), pyarrow's about 2.5, and an event written where it was decoded never crosses into the JVM or the replay's
cache at full width (``bench/RESULTS.md``, eighth round). Only for outputs the executors can reach as local files
(local Spark master, local stage); elsewhere replay writes ``events/`` with Spark.

What a reader sees is what Spark writes: one directory per table named ``table_name=<value>`` with Spark's
escaping (NULL and "" both become ``__HIVE_DEFAULT_PARTITION__``, and read back as NULL), the table name not in the
files, snappy Parquet, and file names in Spark's ``part-NNNNN-<job uuid>.cNNN.snappy.parquet`` pattern so
``normalise_part_names`` numbers them the same way. A task's file names depend only on the job id, the task's
partition and the order of its tables, so a retried task overwrites its own files with the same rows (the decode
is deterministic).

One difference in layout, not in rows: a task keeps at most ``MAX_OPEN`` files open (a file descriptor each), so
when one split holds more tables than that, a table whose file was closed to make room gets a second file
(``c001``, ...) where Spark, which sorts a task's rows by table first, writes one. Readers see the same rows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cdc_jobs.schemas import EVENT_ARROW

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# The characters Spark escapes in partition directory names (ExternalCatalogUtils.escapePathName), as %XX.
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?[\\]^{") + ["\x7f"])
# The event columns in the files: EVENT_ARROW without the partition column, in Spark's order.
FILE_SCHEMA = pa.schema([f for f in EVENT_ARROW if f.name != "table_name"])
# Open files per task before the least recently written one is closed (a task over many tables).
MAX_OPEN = 64


def partition_dir(table_name: Optional[str]) -> str:
    """The directory Spark names for this ``table_name`` value."""
    if not table_name:
        return f"table_name={DEFAULT_PARTITION}"
    return "table_name=" + "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in table_name)


class PartFile:
    """One Parquet file of a task, written under a temporary name in its directory and renamed over its final name
    when complete: a reader never sees half a file, and a retried task replaces its own file with the same rows
    (the decode is deterministic). Opened on the first rows written."""

    def __init__(self, final: Path, schema: pa.Schema, compression: str) -> None:
        self.final = final
        self.temp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        self.schema, self.compression = schema, compression
        self._writer: Optional[pq.ParquetWriter] = None

    def write(self, rows: "pa.RecordBatch | pa.Table | None") -> None:
        if rows is None or not rows.num_rows:
            return
        if self._writer is None:
            self.final.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.temp, self.schema, compression=self.compression)
        self._writer.write(rows)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            os.replace(self.temp, self.final)
            self._writer = None

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self.temp.unlink(missing_ok=True)
            self._writer = None


class EventFiles:
    """One task's writer: ``write`` the EVENT rows of each decoded batch, ``close`` at the end of the task."""

    def __init__(self, events_dir: str, job: str, task: int, max_open: int = MAX_OPEN) -> None:
        self.root = Path(events_dir)
        self.max_open = max_open
        self.job, self.task = job, task
        self._open: dict[str, PartFile] = {}  # insertion order = least recent first
        self._files: dict[str, int] = {}  # files opened per directory (a table's file closed early gets another)

    def write(self, events: pa.RecordBatch) -> None:
        """EVENT rows (``EVENT_ARROW`` columns, any table) -> each table's open file of this task."""
        if not events.num_rows:
            return
        names = events.column("table_name")
        # NULL and "" share Spark's default partition (and read back as NULL), so they are grouped as one.
        names = pc.if_else(pc.equal(names, ""), pa.scalar(None, pa.string()), names)
        rows = pa.Table.from_batches([events]).select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
        for name in names.unique().to_pylist():
            mask = pc.is_null(names) if name is None else pc.fill_null(pc.equal(names, name), False)
            self._file(partition_dir(name)).write(rows.filter(mask))

    def _file(self, directory: str) -> PartFile:
        hit = self._open.pop(directory, None)
        if hit is None:
            if len(self._open) >= self.max_open:
                self._open.pop(next(iter(self._open))).close()
            n = self._files[directory] = self._files.get(directory, -1) + 1
            final = self.root / directory / f"part-{self.task:05d}-{self.job}.c{n:03d}.snappy.parquet"
            hit = PartFile(final, FILE_SCHEMA, "snappy")
        self._open[directory] = hit
        return hit

    def close(self) -> None:
        for directory in list(self._open):
            self._open.pop(directory).close()

    def abort(self) -> None:
        for part in self._open.values():
            part.abort()
        self._open.clear()


def task_file(directory: str, task: int, schema: pa.Schema) -> PartFile:
    """One task's rows of a scratch table the job reads back with Spark (the messages a decode task encoded: see
    ``cdc_jobs.transforms.encode.encode_each``): one file per task, named by its partition. Uncompressed: it is
    read once, on the same machine, and compressing 500 MB of JSON costs more CPU than the local disk saves."""
    return PartFile(Path(directory) / f"part-{task:05d}.parquet", schema, "none")
