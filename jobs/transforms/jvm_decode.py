"""The decode step where the messages are in the JVM: line files of a format whose codec has a JVM twin of its
fast path (``Codec.jvm_plain_decoder``, built by ``cdc_jobs.jvm``).

The file reader's tasks hand Spark blocks of whole lines (``cdc_jobs.io.files.read_blocks``: no Python work per
line). ``LineBlockDecode`` (``jobs/transforms/jvm/``) splits and numbers the lines as the Python reader does and
runs the twin on each: a row per event for a message it takes, the line's bytes for one it declines, as one Arrow
IPC stream per block (Spark's own row conversions of the nested event fields cost more than the decode). The
Python tasks after it (``_finish``) read the streams without copying, decode the declined lines with the codec
(``decode.decode_columns``: the reference, with its dead letters), complete the twin's rows with Arrow kernels
(no Python object per row), and write events/ and the COUNTED rows as the Python path does
(``EventsHere.write_task``). The rows are the ones the Python path
gives (``tests/jobs/test_jvm_decode.py``); only where the time goes changes (``bench/RESULTS.md``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_codecs import get_codec
from cdc_codecs.base import jvm_twin
from cdc_codecs.event_schema import DECODED_ARROW
from cdc_codecs.shared.plain_rows import DECODED_ROW, RECORD_AT, TWIN_FIELDS, data_row

from cdc_jobs.schemas import COUNTED_SPARK

if TYPE_CHECKING:
    from cdc_jobs.io.files import EventsHere

# LineBlockDecode's result: one Arrow IPC stream per block (its columns: ``LINE_FIELDS``).
LINE_SPARK = T.BinaryType()
LINE_FIELDS = ("pos_offset", "value", *TWIN_FIELDS)


# Line archives smaller than this decode in Python unless ``CDC_REPLAY_JVM_DECODE=on``. Measured with fresh
# ``cdc-replay replay`` processes of canal-json on 2 cores (bench/RESULTS.md, fifteenth round), JVM vs Python:
# 1 MB 13.9-14.2 s vs 12.9-13.4 s (registering the jar, a cold JIT), 500 MB 29.1-30.7 s vs 29.0-30.4 s (even),
# 2 GB 62.4-65.4 s vs 71.1-71.9 s. A warm session gains from about 200 MB on; a replay is mostly a fresh one.
MIN_BYTES = 512 * 1024 * 1024


def runs(spark: SparkSession, fmt: str, files: list[str]) -> bool:
    """Whether this session decodes ``fmt`` in the JVM: its codec has a twin, the archive's line ``files`` are big
    enough to gain from it (``MIN_BYTES``) or ``CDC_REPLAY_JVM_DECODE=on`` says so, and the jar is in the session."""
    from cdc_jobs import jvm

    mode = jvm.mode()
    if mode == "off" or jvm_twin(get_codec(fmt)) is None:
        return False
    if mode == "auto" and not _at_least(files, MIN_BYTES):
        return False
    return jvm.available(spark)


def _at_least(files: list[str], size: int) -> bool:
    """Whether the files hold ``size`` bytes or more; stops asking as soon as they do (each size of an object
    store's file is a request)."""
    from cdc_jobs.io import storage

    total = 0
    for f in files:
        total += storage.size(f)
        if total >= size:
            return True
    return False


def decode_blocks(blocks: DataFrame, fmt: str, events: "EventsHere") -> DataFrame:
    """BLOCK rows -> the COUNTED rows of ``EventsHere.write`` (events/ written by the tasks)."""
    from cdc_jobs.jvm import LINE_BLOCK_DECODE

    twin = jvm_twin(get_codec(fmt))
    lines = F.call_function(LINE_BLOCK_DECODE, F.lit(twin), F.col("first_line"), F.col("value"))
    return blocks.select("pos_source", lines.alias("lines")).mapInArrow(_finish(fmt, events), COUNTED_SPARK)


def _finish(fmt: str, events: "EventsHere"):
    def finish(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        # The same task as the block reader's (nothing between them shuffles), so the same events/ file names.
        yield from events.write_task(TaskContext.get().partitionId(),
                                     (decoded(fmt, lines) for batch in batches for lines in block_lines(batch)))
    return finish


def block_lines(blocks: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """Each block's rows (LineBlockDecode's stream, read without copying), with the block's ``pos_source``."""
    sources, streams = blocks.column("pos_source"), blocks.column("lines")
    for i in range(blocks.num_rows):
        lines = pa.ipc.open_stream(streams[i].as_buffer()).read_all()
        if tuple(lines.column_names) != LINE_FIELDS:  # a jar built from other sources than this package's
            raise RuntimeError(f"LineBlockDecode wrote columns {lines.column_names}, expected {list(LINE_FIELDS)}")
        if lines.num_rows:
            lines = lines.combine_chunks().to_batches()[0]
            yield lines.add_column(0, "pos_source", pa.repeat(sources[i], lines.num_rows))


def decoded(fmt: str, lines: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of LineBlockDecode's rows -> DECODED rows in line order: the declined lines decoded by the codec,
    the twin's rows completed."""
    declined = pc.is_valid(lines.column("value"))
    parts = []
    if pc.any(declined).as_py():
        from cdc_jobs.io.files import line_records
        from cdc_jobs.transforms.decode import decode_columns

        raw = lines.filter(declined)
        parts.extend(decode_columns(fmt, [line_records(*(raw.column(c).to_pylist()
                                                          for c in ("pos_source", "pos_offset", "value")))]))
        took = lines.filter(pc.invert(declined))
    else:
        took = lines
    if took.num_rows:
        parts.append(completed(fmt, took))
    if len(parts) == 1:
        return parts[0]
    table = pa.Table.from_batches(parts, schema=DECODED_ARROW)
    if table.num_rows:
        table = table.take(pc.sort_indices(table, [("pos_offset", "ascending"), ("pos_index", "ascending")]))
    return table.combine_chunks().to_batches()[0] if table.num_rows else parts[0]


# The fields of a completed row that come from LineBlockDecode's columns; the others are the same on every row.
_GIVEN = frozenset(TWIN_FIELDS) | {"pos_source", "pos_offset"}


@lru_cache(maxsize=None)
def _line_constants(fmt: str) -> dict[str, object]:
    """The DECODED fields a twin leaves out, as the Python fast path sets them for a plain event of a line: a line's
    RAW columns (``line_records``) through ``data_row``, so the two paths cannot drift apart."""
    from cdc_jobs.io.files import line_records

    raw = line_records([""], [1], [b""])
    at = tuple(raw[c][0] for c in RECORD_AT)
    row = data_row(fmt, "INSERT", None, None, None, None, [], (), None, (), at, 0, None, True)
    return {name: value for name, value in zip(DECODED_ROW, row) if name not in _GIVEN}


def _constant(value, type_: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)


def completed(fmt: str, took: pa.RecordBatch) -> pa.RecordBatch:
    """The twin's rows as DECODED rows: its fields, and the rest as ``data_row`` sets them for a line."""
    constants = _line_constants(fmt)
    arrays = [took.column(f.name).cast(f.type) if f.name in _GIVEN else _constant(constants[f.name], f.type,
                                                                                   took.num_rows)
              for f in DECODED_ARROW]
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW)
