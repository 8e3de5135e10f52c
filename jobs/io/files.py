"""Archive files as a Spark source: one partition per file (large plain JSON-lines files: one per line-aligned
byte range, see ``split_lines_file``), read in the executors, yielding RAW Arrow batches.

Three layouts, told apart by file name:
- ``*.avro``: Avro container file, one message per record (the record's schemaless bytes as its block holds
  them, which is what the Avro codecs decode; a codec whose own schema the file was written with takes the datum
  the reader already made instead, see ``read_avro``); position = file + record number (1-based).
- ``*.dump.jsonl[.gz]`` or files under a ``partition=N`` folder: the Kafka dump format written by
  ``cdc-replay archive`` (topic, partition, offset, timestamp, base64 key/value, headers); position = the Kafka
  position recorded in the dump, so archives of binary topics keep it.
- anything else: JSON lines, one message per line (``.gz`` decompressed); position = file + line (1-based).

A replay of line files whose format declares its keys' roles for the JVM decode reads them as blocks of whole lines
instead (``read_blocks``), which the JVM splits, numbers and decodes (``cdc_jobs.transforms.jvm_decode``); of
Avro container files whose layout has one, as framed container blocks (``read_avro_blocks``), whose records the
JVM reads and decodes; a Kafka dump's records, read here, are decoded in the JVM as a topic's records are.
"""

from __future__ import annotations

import base64
import functools
import glob
import gzip
import io
import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NamedTuple

import orjson
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from cdc_jobs.errors import UsageError
from cdc_jobs.io import codec_env, storage
from cdc_jobs.schemas import DECODED_SPARK, RAW_ARROW, RAW_SPARK

if TYPE_CHECKING:
    from cdc_codecs.base import Codec

BATCH_ROWS = 8192
# Plain JSON-lines files above this size are read as several line-aligned byte ranges (one Spark partition
# each), so a single large file does not leave all but one core idle.
SPLIT_BYTES = int(os.environ.get("CDC_REPLAY_SPLIT_BYTES", 32 * 1024 * 1024))
# Ranges are never cut smaller than this to even out the cores' shares (``balanced_split``): below it a task's
# fixed cost outweighs the idle core it saves.
MIN_SPLIT_BYTES = 4 * 1024 * 1024
CHUNK = 8 * 1024 * 1024
_PARTITION_DIR = re.compile(r"(^|/)partition=\d+(/|$)")


def list_archive_files(sources: list[str]) -> list[str]:
    """Expand paths, directories (recursively) and globs; hidden and Spark marker files are skipped. Sorted,
    so the same archive always gives the same plan."""
    files: set[str] = set()
    for src in sources:
        if not storage.is_local(src):  # an object store or HDFS: listed through the storage layer
            storage.check_uri(src, "--source")
            found = storage.list_files(src)
            if not found:
                raise UsageError(f"--source: nothing matches '{src}'")
            files.update(found)
            continue
        src = src[len("file://"):] if src.startswith("file://") else src
        matches = glob.glob(src, recursive=True) if glob.has_magic(src) else [src]
        if not matches:
            raise UsageError(f"--source: nothing matches '{src}'")
        for m in matches:
            p = Path(m)
            if p.is_dir():
                for root, dirs, names in os.walk(p):
                    dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                    files.update(str(Path(root, n).absolute()) for n in names if not n.startswith((".", "_")))
            elif p.is_file():
                files.add(str(p.absolute()))
            else:
                raise UsageError(f"--source: '{m}' does not exist")
    if not files:
        raise UsageError(f"--source: no archive files under {', '.join(sources)}")
    return sorted(files)


def layout_of(path: str) -> str:
    name = os.path.basename(path)
    if name.endswith(".avro"):
        return "avro"
    if ".dump.jsonl" in name or _PARTITION_DIR.search(path.replace(os.sep, "/")):
        return "dump"
    return "lines"


def _open_text(path: str) -> io.BufferedReader:
    if storage.is_local(path):
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    raw = storage.open_input(path)  # ranged reads of an object (s3a://, gs://, abfs://, hdfs://)
    return gzip.GzipFile(fileobj=raw, mode="rb") if path.endswith(".gz") else raw  # type: ignore[return-value]


class _Batcher:
    """Collects RAW rows column-wise and hands out Arrow batches of bounded size."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {name: [] for name in RAW_ARROW.names}

    def add(self, source, partition, offset, value, timestamp_ms=None, key=None, headers=()) -> None:
        c = self.cols
        c["pos_source"].append(source)
        c["pos_partition"].append(partition)
        c["pos_offset"].append(offset)
        c["pos_timestamp_ms"].append(timestamp_ms)
        c["pos_key"].append(key)
        c["pos_headers"].append(list(headers))
        c["value"].append(value)

    def add_line(self, source: str, lineno: int, line: bytes) -> None:
        """A line of a file: position = file + line number, no partition (-1), timestamp, key or headers."""
        self.add(source, -1, lineno, line)

    def full(self) -> bool:
        return len(self.cols["value"]) >= BATCH_ROWS

    def take(self) -> dict[str, list]:
        cols, self.cols = self.cols, {name: [] for name in RAW_ARROW.names}
        return cols

    def __bool__(self) -> bool:
        return bool(self.cols["value"])


def _numbered_lines(path: str, span: "Span | None" = None) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) of the whole file, or of the lines starting inside ``span``."""
    with _open_text(path) as fh:
        if span is None:
            lines: Iterator[bytes] = iter(fh)
            first = 1
        else:
            fh.seek(span.start)
            lines, first = _until(fh, span.end - span.start), span.first_line
        for lineno, line in enumerate(lines, start=first):
            line = line.rstrip(b"\r\n")
            if line.strip():  # blank lines are layout, not records
                yield lineno, line


def _until(fh: io.BufferedReader, size: int) -> Iterator[bytes]:
    """The lines of the next ``size`` bytes (which end on a line boundary, see ``split_lines_file``)."""
    read = 0
    for line in fh:
        if read >= size:
            return
        read += len(line)
        yield line


class Span(NamedTuple):
    """A byte range of a plain JSON-lines file holding whole lines, and the line number of its first line."""

    start: int
    end: int
    first_line: int


def split_lines_file(path: str, target: int) -> list[Span]:
    """Cut a plain (not compressed) lines file into ranges of about ``target`` bytes that start at line
    starts, so one big file keeps every core busy. The driver counts the newlines of each range once, so each
    range knows its exact first line number (positions stay ``file + 1-based line`` whatever the split)."""
    size = storage.size(path)
    spans, start, first_line = [], 0, 1
    with storage.open_input(path) as fh:
        while size - start > target:
            # The range ends at the first line start at or after start + target: just after the first newline
            # at or after byte start + target - 1.
            fh.seek(start)
            newlines = fh.read(target - 1).count(b"\n")
            end = _after_next_newline(fh, size)
            if end >= size:
                break
            spans.append(Span(start, end, first_line))
            start, first_line = end, first_line + newlines + 1
    spans.append(Span(start, size, first_line))
    return spans


def _after_next_newline(fh: io.BufferedReader, size: int) -> int:
    """Offset just after the first newline at or after the current position (``size`` when there is none)."""
    while True:
        at = fh.tell()
        piece = fh.read(CHUNK)
        if not piece:
            return size
        i = piece.find(b"\n")
        if i >= 0:
            return at + i + 1


def read_lines(path: str, span: Span | None = None) -> Iterator[dict[str, list]]:
    out = _Batcher()
    for lineno, line in _numbered_lines(path, span):
        out.add_line(path, lineno, line)
        if out.full():
            yield out.take()
    if out:
        yield out.take()


def line_records(sources: list[str], line_numbers: list[int], lines: list[bytes]) -> dict[str, list]:
    """The RAW columns ``read_lines`` gives for these lines (for lines read elsewhere: ``jvm_decode``)."""
    out = _Batcher()
    for source, lineno, line in zip(sources, line_numbers, lines):
        out.add_line(source, lineno, line)
    return out.take()


# Blocks of whole lines for a decode in the JVM (``cdc_jobs.transforms.jvm_decode``): big enough that a block costs
# nothing per line here, small enough that the JVM's rows of one block stay a few MB.
BLOCK_BYTES = 1024 * 1024
BLOCK_ARROW = pa.schema([("pos_source", pa.string()), ("first_line", pa.int64()), ("value", pa.binary())])
BLOCK_SPARK = from_arrow_schema(BLOCK_ARROW)


def read_blocks(path: str, span: Span | None = None) -> Iterator[dict[str, list]]:
    """The bytes ``read_lines`` reads, as blocks of whole lines with the number of each block's first line, for
    a reader that splits and numbers the lines itself as ``_numbered_lines`` does (``LineRows``)."""
    sources, firsts, values = [], [], []
    with _open_text(path) as fh:
        if span is None:
            left, line = None, 1
        else:
            fh.seek(span.start)
            left, line = span.end - span.start, span.first_line
        carry = b""
        while True:
            piece = fh.read(BLOCK_BYTES if left is None else min(BLOCK_BYTES, left)) if left != 0 else b""
            if left is not None:
                left -= len(piece)
            data = carry + piece if carry else piece
            cut = len(data) if not piece else data.rfind(b"\n") + 1  # at the end, the last line needs no newline
            if cut:
                sources.append(path)
                firsts.append(line)
                values.append(data[:cut])
                line += data.count(b"\n", 0, cut)
                if len(values) >= 16:
                    yield {"pos_source": sources, "first_line": firsts, "value": values}
                    sources, firsts, values = [], [], []
            carry = data[cut:]
            if not piece:
                break
    if values:
        yield {"pos_source": sources, "first_line": firsts, "value": values}


def _b64(value):
    return None if value is None else base64.b64decode(value)


def _int(value, bits: int) -> int:
    """A dump field that must fit the RAW column (int32 partition, int64 offset/timestamp): a broken line
    otherwise, not a failed read of the whole file."""
    if type(value) is not int or not -(2**bits) <= value < 2**bits:
        raise ValueError(f"not a {bits + 1}-bit integer: {str(value)[:40]}")
    return value


def _text(value):
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def read_dump(path: str, span: Span | None = None) -> Iterator[dict[str, list]]:
    out = _Batcher()
    for lineno, line in _numbered_lines(path, span):
        try:
            rec = orjson.loads(line)
            if "partition" in rec and "offset" in rec:
                where = (_text(rec.get("topic")) or path, _int(rec["partition"], 31), _int(rec["offset"], 63))
            else:  # re-encoded binary messages written by replay: no Kafka position yet
                where = (path, -1, lineno)
            headers = [{"key": _text(h["key"]), "value": _b64(h.get("value"))} for h in rec.get("headers") or ()]
            ts = rec.get("timestamp")
            out.add(*where, _b64(rec.get("value")), None if ts is None else _int(ts, 63), _b64(rec.get("key")),
                    headers)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # A broken dump line: its bytes go on as the value at file+line, so the decode step makes it a
            # dead letter with this position instead of failing the whole job.
            out.add(path, -1, lineno, line, headers=[{"key": "cdc-dump-error", "value": str(exc).encode()}])
        if out.full():
            yield out.take()
    if out:
        yield out.take()


def read_avro(path: str, codec: "Codec | None" = None, skip: int = 0) -> Iterator[dict[str, list]]:
    """RAW columns of a container file's records: each record's bytes exactly as the file holds them (cut out
    of its decompressed block, never written again). When ``codec`` reads this file's writer schema itself
    (``Codec.container_decoder``), each row also carries ``(decoder, datum)`` in a ``datum`` column: the record
    is decoded once, here, and the codec takes that datum instead of reading the bytes again. The first ``skip``
    records are read but not given (the JVM decoded them: ``read_avro_blocks``)."""
    import fastavro

    from cdc_codecs.shared.avro import read_named, without_addresses

    # Built column-wise here rather than through ``_Batcher``: a file's rows differ only in record number,
    # bytes and datum, and the per-row appends were a sixth of the read's time.
    values: list[bytes] = []
    datums: list = []
    first = 0  # records of the file before ``values[0]``
    decoder = None
    with storage.open_input(path) as fh:
        try:
            blocks = fastavro.block_reader(fh)
            schema = fastavro.parse_schema(blocks.writer_schema)
            decoder = codec.container_decoder(blocks.writer_schema) if codec is not None else None
            if decoder is not None:  # read as the codec reads these bytes: its own schema, unions named
                schema = decoder.schema
                read = functools.partial(read_named, schema)
            else:
                read = functools.partial(fastavro.schemaless_reader, writer_schema=schema, reader_schema=None)
            for block in blocks:
                data = block.bytes_.getvalue()
                buf = io.BytesIO(data)
                tell = buf.tell
                for _ in range(block.num_records):
                    start = tell()
                    datum = read(buf)
                    if skip:
                        skip -= 1
                        first += 1
                        continue
                    values.append(data[start:tell()])
                    if decoder is not None:
                        datums.append((decoder, datum))
                    if len(values) >= BATCH_ROWS:
                        yield _avro_columns(path, first, values, datums)
                        first += len(values)
                        values, datums = [], []
        except Exception as exc:  # noqa: BLE001 - a corrupt container (header, block, sync marker)
            # What could not be read becomes one record at the next record number, holding the bytes not yet
            # read and the reader's error in a header: the decode step makes it a dead letter, so the loss is
            # counted and shown (and held to the dead-letter budget) instead of failing the whole replay.
            values.append(fh.read())
            if decoder is not None:
                datums.append(None)
            yield _avro_columns(path, first, values, datums, [{"key": "cdc-avro-error",
                                                              "value": f"{type(exc).__name__}: {without_addresses(str(exc), 'the block')}".encode()}])
            return
    if values:
        yield _avro_columns(path, first, values, datums)


def _avro_columns(path: str, first: int, values: list[bytes], datums: list, last_headers: list | None = None
                  ) -> dict[str, list]:
    """RAW columns of records ``first + 1 ..`` of the container file ``path`` (and their datums, if read)."""
    cols = avro_records(path, list(range(first + 1, first + len(values) + 1)), values, datums)
    if last_headers:
        cols["pos_headers"][-1] = last_headers
    return cols


def avro_records(path: str, numbers: list[int], values: list[bytes], datums: list) -> dict[str, list]:
    """The RAW columns ``read_avro`` gives for these records of ``path`` (for records read elsewhere:
    ``jvm_decode``)."""
    k = len(values)
    cols = {"pos_source": [path] * k, "pos_partition": [-1] * k, "pos_offset": numbers,
            "pos_timestamp_ms": [None] * k, "pos_key": [None] * k, "pos_headers": [[] for _ in range(k)],
            "value": values}
    if datums:
        cols["datum"] = datums
    return cols


# Container blocks for a decode in the JVM (``AvroBlockDecode``): the file's blocks, decompressed and framed with
# their record counts, about ``BLOCK_BYTES`` a row; the twin's class and the writer schema (for the records it
# declines) beside them. A row without blocks: from record ``first_line`` on, the Python reader reads the file.
AVRO_BLOCK_ARROW = pa.schema([("pos_source", pa.string()), ("first_line", pa.int64()), ("value", pa.binary()),
                              ("twin", pa.string()), ("writer_schema", pa.string())])
AVRO_BLOCK_SPARK = from_arrow_schema(AVRO_BLOCK_ARROW)
_FRAME = struct.Struct(">ii")


def read_avro_blocks(path: str, codec: "Codec") -> Iterator[dict[str, list]]:
    """The records ``read_avro`` reads, as framed container blocks for the JVM twin of the codec's container fast
    path (``ContainerDecoder.jvm_rows``), without reading a record here. A file whose layout has no twin, or whose
    container cannot be read on (a bad block or sync marker), is handed to the Python reader from the record where
    that starts, which gives what ``read_avro`` gives from there."""
    import fastavro

    cols: dict[str, list] = {name: [] for name in AVRO_BLOCK_ARROW.names}

    def row(first: int, value: bytes | None, twin: str | None = None, schema: str | None = None) -> None:
        for name, v in zip(AVRO_BLOCK_ARROW.names, (path, first, value, twin, schema)):
            cols[name].append(v)

    record = 1  # the number of the next record
    parts: list[bytes] = []  # the blocks of the next row, from record ``first`` on
    size, first = 0, record
    twin = schema = None
    over = None  # the record from which the Python reader reads the file, if it must
    with storage.open_input(path) as fh:
        try:
            blocks = fastavro.block_reader(fh)
            decoder = codec.container_decoder(blocks.writer_schema)
            twin = decoder.jvm_rows if decoder is not None else None
            if twin is None:
                over = record
            else:
                schema = orjson.dumps(blocks.writer_schema).decode()
                for block in blocks:
                    data = block.bytes_.getvalue()
                    parts += (_FRAME.pack(block.num_records, len(data)), data)
                    record += block.num_records
                    size += len(data)
                    if size >= BLOCK_BYTES:
                        row(first, b"".join(parts), twin, schema)
                        parts, size, first = [], 0, record
                        if len(cols["value"]) >= 16:
                            yield cols
                            cols = {name: [] for name in AVRO_BLOCK_ARROW.names}
        except Exception:  # noqa: BLE001 - a corrupt container: read_avro names it from here on
            over = record
    if parts:
        row(first, b"".join(parts), twin, schema)
    if over is not None:
        row(over, None)
    if cols["value"]:
        yield cols


def _as_arrow(columns: Iterator[dict[str, list]]) -> Iterator[pa.RecordBatch]:
    for cols in columns:
        yield pa.RecordBatch.from_pydict(cols, schema=RAW_ARROW)


# Line layouts, read whole or by span; Avro containers are read whole by ``read_avro``, which also takes the codec.
READERS = {"lines": read_lines, "dump": read_dump}


class _FilePartition(NamedTuple):
    """What one Spark partition reads: a file, or a byte range of a lines file."""

    path: str
    span: Span | None = None


def plan_partitions(files: list[str], split_bytes: int | None = None, cores: int = 1) -> list[_FilePartition]:
    """One partition per file; plain JSON-lines files (and dumps) larger than the split size are cut into
    line-aligned byte ranges of about equal size. Avro and gzip files are read whole. The split size is
    ``split_bytes``, or else ``balanced_split`` of the splittable bytes over ``cores``."""
    sizes = {f: storage.size(f) for f in files if _splittable(f)}  # one request a file on an object store
    split_bytes = split_bytes or balanced_split(sum(sizes.values()), cores)
    parts = []
    for f in files:
        size = sizes.get(f)
        if size is None or size <= split_bytes:
            parts.append(_FilePartition(f))
        else:
            ranges = -(-size // split_bytes)  # ceil: no range above the split size
            parts.extend(_FilePartition(f, span) for span in split_lines_file(f, -(-size // ranges)))
    return parts


def _splittable(path: str) -> bool:
    """Whether a byte offset of the file is a line offset (not a container, not a gzip stream)."""
    return layout_of(path) != "avro" and not path.endswith(".gz")


def balanced_split(splittable_bytes: int, cores: int) -> int:
    """The split size that cuts the archive's lines into a multiple of ``cores`` ranges of at most
    ``SPLIT_BYTES``: fixed 32 MiB ranges left a core idle for up to a range's time at the end (76 MiB in two files
    was 32 + 18 + 25 MiB on two cores, the third range alone for 2 s of 8.5)."""
    if cores <= 1 or splittable_bytes <= MIN_SPLIT_BYTES:
        return SPLIT_BYTES
    ranges = -(-splittable_bytes // SPLIT_BYTES)
    ranges = -(-ranges // cores) * cores  # up to a multiple of the cores
    return max(MIN_SPLIT_BYTES, -(-splittable_bytes // ranges))


class _ArchiveRead:
    """What the source's tasks read: the planned partitions of ``files``, and how one is read."""

    def __init__(self, files: list[str], fmt: str | None, blocks: str, split_bytes: int | None, cores: int):
        self.fmt = fmt
        # For a decode in the JVM: "lines", BLOCK rows of line files (``read_blocks``); "avro", AVRO_BLOCK rows of
        # container files (``read_avro_blocks``)
        self.blocks = blocks
        self.parts = plan_partitions(files, split_bytes, cores)

    def schema(self) -> T.StructType:
        if self.blocks:
            return AVRO_BLOCK_SPARK if self.blocks == "avro" else BLOCK_SPARK
        return DECODED_SPARK if self.fmt else RAW_SPARK

    def read(self, partition: _FilePartition) -> Iterator[pa.RecordBatch]:
        if self.blocks == "avro":
            from cdc_codecs import get_codec

            for cols in read_avro_blocks(partition.path, get_codec(self.fmt)):
                yield pa.RecordBatch.from_pydict(cols, schema=AVRO_BLOCK_ARROW)
            return
        if self.blocks:
            for cols in read_blocks(partition.path, partition.span):
                yield pa.RecordBatch.from_pydict(cols, schema=BLOCK_ARROW)
            return
        if self.fmt is None:
            yield from _as_arrow(raw_columns(partition))
            return
        # Read and decode in one Python step: the message bytes never travel to the JVM and back before the
        # codec sees them, and Avro records reach the codec as the datums the container reader made.
        from cdc_codecs import get_codec
        from cdc_jobs.transforms.decode import decode_columns

        yield from decode_columns(self.fmt, raw_columns(partition, get_codec(self.fmt)))


def raw_columns(partition: "_FilePartition", codec: "Codec | None" = None) -> Iterator[dict[str, list]]:
    """RAW columns (Python lists) of one planned partition."""
    layout = layout_of(partition.path)
    span = getattr(partition, "span", None)
    if layout == "avro":
        return read_avro(partition.path, codec)
    return READERS[layout](partition.path) if span is None else READERS[layout](partition.path, span)


def read_files(spark: SparkSession, sources: list[str], split_bytes: int | None = None,
               fmt: str | None = None) -> DataFrame:
    """RAW rows of the archive files, or with ``fmt`` the DECODED rows of that format (before fragments are
    assembled: ``cdc_jobs.transforms.decode.assemble``); those of a format with a JVM decode (declared, or an Avro
    container twin; a Kafka dump's records as a topic's) decode in the JVM where ``jvm_decode.runs`` says so (the
    same rows)."""
    return read_listed(spark, list_archive_files(sources), split_bytes, fmt)


def read_listed(spark: SparkSession, files: list[str], split_bytes: int | None = None,
                fmt: str | None = None) -> DataFrame:
    """``read_files`` of files ``list_archive_files`` gave (no listing again: on an object store a request a
    path)."""
    def archive(fmt: str | None = None, blocks: str = "") -> DataFrame:
        return _archive(spark, _ArchiveRead(files, fmt, blocks, split_bytes, spark.sparkContext.defaultParallelism))

    if fmt and files:
        from cdc_jobs.transforms import jvm_decode

        layouts = {layout_of(f) for f in files}
        if layouts == {"lines"} and jvm_decode.runs(spark, fmt, files):
            return jvm_decode.decode_blocks(archive(blocks="lines"), fmt)
        if layouts == {"avro"} and jvm_decode.runs(spark, fmt, files, "avro"):
            return jvm_decode.decode_avro_blocks(archive(fmt, "avro"), fmt)
        if layouts == {"dump"} and jvm_decode.runs(spark, fmt, files, "dump"):  # Kafka records, as from a topic
            return jvm_decode.decode_records(archive(), fmt)
    return archive(fmt)


def _archive(spark: SparkSession, source: _ArchiveRead) -> DataFrame:
    """The rows ``source`` reads, one Spark partition per planned partition. Planned here on the driver and read by
    ``mapInArrow`` over the partitions' numbers: Spark's Python data source API (``spark.read.format``) started
    three Python processes one after another on the driver to find, create and plan the source, which cost every
    fresh replay 2.0-2.7 s (canal-json: the 973-record sample 10.2 -> 7.9 s, 76 MiB 16.1 -> 13.6 s)."""
    parts = source.parts

    def read(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in numbers:
            for i in batch.column(0).to_pylist():
                yield from source.read(parts[i])

    # the driver's codec settings (``codec_env``) travel in the task function
    return spark.range(0, len(parts), 1, max(1, len(parts))).mapInArrow(codec_env.carried(read), source.schema())
