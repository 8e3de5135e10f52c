"""The decode step where the messages are in the JVM: line files and Kafka records of a format whose codec declares
its keys' roles for the declared decode (``Codec.jvm_declaration``, ``shared/jvm/DeclaredJson.java``, built by
``cdc_jobs.jvm``), and Avro container files of a layout whose container fast path has a twin
(``ContainerDecoder.jvm_rows``).

The file reader's tasks hand Spark blocks of whole lines (``cdc_jobs.io.files.read_blocks``: no Python work per
line). ``LineRows`` (``jobs/transforms/jvm/``) splits and numbers the lines as the Python reader does and runs the
declared decode on each: Spark's own rows, a row per event for a message it takes and a row with the line's bytes
for one it declines. Spark expressions complete the taken rows (the fields that are the same on every row); in the
same pass an Arrow UDF hands the declined lines alone to the codec (``decode.decode_columns``: the reference, with
its dead letters), and each line's rows take its place (``decode_blocks``). The taken rows never travel to Python:
in a replay at 1M messages that trip (an Arrow stream per block to a Python task, completed there and read back)
cost more than it saved by writing Arrow instead of Spark's rows (``bench/RESULTS.md``). The rows are the ones the
Python path gives (``tests/jobs/test_jvm_decode.py``).

Kafka records of such a format go to Python as Arrow streams with ``RecordBlockDecode`` (``decode_records``): Spark's Kafka
source reads them, the JVM cuts each Spark partition's records into blocks of consecutive records of one topic
partition (no shuffle) and decodes them; the Python tasks give each row its record's position (offset, timestamp,
key, headers) and decode the declined records, tombstones included, as the Python path does
(``tests/jobs/test_kafka_replay.py``).

Container files go as Arrow streams too, with ``AvroBlockDecode`` (``cdc_jobs.io.files.read_avro_blocks`` frames their
blocks; ``avro_decoded`` finishes): the declined records reach the codec as the datum ``read_avro`` would have
made, and where the twin cannot tell the bytes apart as records, ``read_avro`` reads the rest of that file, so
that what follows, dead letters and their wording included, is what the Python reader gives
(``tests/jobs/test_avro_container_archives.py``).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate
from typing import Callable, Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_codecs import get_codec
from cdc_codecs.base import Codec, jvm_container_twins, jvm_declaration_text, jvm_message_text
from cdc_codecs.event_schema import DECODED_ARROW
from cdc_codecs.shared.plain_rows import DECODED_ROW, RECORD_AT, TWIN_FIELDS, data_row

from cdc_jobs.io import codec_env
from cdc_jobs.schemas import DECODED_SPARK

# The Arrow adapters' result (RecordBlockDecode, AvroBlockDecode): one IPC stream per block (columns: ``LINE_FIELDS``).
LINE_SPARK = T.BinaryType()
LINE_FIELDS = ("pos_offset", "value", *TWIN_FIELDS)
# A DECODED row as one Arrow value: the element of the lists the declined lines' UDF returns.
DECODED_ARROW_STRUCT = pa.struct(list(DECODED_ARROW))
# LineRows' rows: where the line was, a declined line's bytes, the JVM decode's fields with their DECODED types.
LINE_ROWS = T.StructType([T.StructField("pos_source", T.StringType()),
                          T.StructField("pos_offset", T.LongType(), False), T.StructField("value", T.BinaryType()),
                          *[DECODED_SPARK[name] for name in TWIN_FIELDS]])


# Line archives of a format whose codec has a Python fast path of its own (``Codec.plain_rows``: canal-json)
# smaller than this decode in Python unless ``CDC_REPLAY_JVM_DECODE=on``. Measured on the one pipeline with
# canal-json's former JVM twin, replays in one session, JVM vs Python, best of 2 CPU-s (bench/RESULTS.md): 100 MB
# 21.8 vs 20.3 (no gain: registering the jar and the hand-over cost what the decode saves), 250 MB 36.0 vs 44.0
# (-18%), 501 MB 71.3 vs 90.0 (-21%). The saving grows about linearly, from zero near 100-130 MB. With the declared
# decode: warm sessions -9% at 100 MB, -21% at 250 MB; fresh processes no faster at 8-51 MB.
MIN_BYTES = 192 * 1024 * 1024
# Formats decoded in Python by the whole recipe (exact parse, events, the derived message and its comparison) gain
# sooner, that decode being 2-3x a Python fast path. Measured
# (bench/RESULTS.md, the declared decode), JVM vs Python: warm sessions 31-46% faster from 50k messages (12-20 MB);
# fresh `cdc-replay replay` processes 12 MB 11.4-11.6 vs 11.7-12.1 s, 2.5 MB 10.0 vs 10.1 (even).
MIN_DECLARED_BYTES = 8 * 1024 * 1024
# Avro container archives gain much sooner: fastavro's read of a record costs several times a JSON line's parse.
# Fresh ``cdc-replay replay`` processes of dts-avro (bench records), JVM vs Python: 2.3 MB 17.1-18.2 s vs
# 17.3-17.6 s (even), 23 MB 20.2-20.6 s vs 24.9-27.7 s, 68 MB 28.1-28.3 s vs 37.4-39.1 s.
MIN_AVRO_BYTES = 8 * 1024 * 1024


def runs(spark: SparkSession, fmt: str, files: list[str], layout: str = "lines") -> bool:
    """Whether this session decodes ``fmt`` in the JVM: its codec has a JVM decode for the archive's ``layout``
    ("lines": ``jvm_declaration``; "avro": container twins; "dump", Kafka records: ``jvm_message_text``), the
    ``files`` are big enough to gain from it (``_least_bytes``) or ``CDC_REPLAY_JVM_DECODE=on`` says so, and the
    jar is in the session."""
    return _runs(spark, fmt, layout, lambda least: _at_least(files, least))


def _runs(spark: SparkSession, fmt: str, layout: str, big_enough: Callable[[int], bool]) -> bool:
    """``runs`` for a layout ("records": Kafka records, as "dump") and a test of the input's size against the
    least size that gains (``_least_bytes``)."""
    from cdc_jobs import jvm

    mode = jvm.mode()
    codec = get_codec(fmt)
    decodes = {"lines": jvm_declaration_text, "avro": jvm_container_twins}.get(layout, jvm_message_text)
    if mode == "off" or not decodes(codec):
        return False
    if mode == "auto" and not big_enough(_least_bytes(codec)):
        return False
    return jvm.available(spark)


def _least_bytes(codec: Codec) -> int:
    """The archive size from which the codec's messages decode faster in the JVM (the measurements above):
    ``MIN_BYTES`` with a declaration and a Python fast path, ``MIN_DECLARED_BYTES`` with a declaration alone,
    ``MIN_AVRO_BYTES`` for twins of a container fast path."""
    if jvm_declaration_text(codec):
        return MIN_BYTES if _fast_in_python(codec) else MIN_DECLARED_BYTES
    return MIN_AVRO_BYTES


def _fast_in_python(codec: Codec) -> bool:
    """Whether the codec decodes its plain messages by a Python fast path of its own (``Codec.plain_rows``)."""
    return type(codec).plain_rows is not Codec.plain_rows


def _at_least(files: list[str], size: int) -> bool:
    """Whether the files hold ``size`` bytes or more."""
    from cdc_jobs.io import storage

    return storage.total_size(files, size) >= size


def decode_blocks(blocks: DataFrame, fmt: str) -> DataFrame:
    """BLOCK rows -> DECODED rows: Spark rows made in the JVM (``LineRows``) for the lines the declared decode
    takes, completed by Spark expressions; the lines it declines decoded by the codec in the same pass
    (``_declined_lines``), each line's rows where the line was."""
    lines = line_rows(blocks, fmt)
    declined = F.col("value").isNotNull()
    # Only a declined line's position and bytes go to Python (a taken line sends nulls): the taken rows stay in
    # the JVM while Python decodes the declined ones of the same batch.
    decode = F.arrow_udf(codec_env.carried(_declined_lines(fmt)), T.ArrayType(DECODED_SPARK))
    python = decode(F.when(declined, F.col("pos_source")), F.when(declined, F.col("pos_offset")), F.col("value"))
    return lines.select(F.inline(F.when(declined, python).otherwise(F.array(_taken_row(fmt, "lines")))))


def line_rows(blocks: DataFrame, fmt: str) -> DataFrame:
    """``LineRows``' rows of BLOCK rows (pos_source, first_line, value): pos_source, pos_offset (the line number),
    value (a declined line's bytes, else null), then ``TWIN_FIELDS``."""
    spark = blocks.sparkSession
    declaration = jvm_declaration_text(get_codec(fmt))
    return DataFrame(spark._jvm.cdcreplay.jobs.LineRows.rows(blocks._jdf, declaration, LINE_ROWS.json()), spark)


def _taken_row(fmt: str, layout: str):
    """A taken line's DECODED row: the JVM's fields, and the rest as ``data_row`` sets them (``_constants``)."""
    constants = _constants(fmt, layout)
    return F.struct(*[(F.col(f.name) if f.name in _GIVEN else _literal(constants[f.name], f.dataType)).alias(f.name)
                      for f in DECODED_SPARK.fields])


def _literal(value, kind: T.DataType):
    if isinstance(value, (list, tuple)):
        if value:
            raise ValueError(f"a constant list field must be empty, got {value!r}")
        return F.array().cast(kind)
    return F.lit(value).cast(kind)


def _declined_lines(fmt: str):
    """The Arrow UDF (batches of arrays) over (pos_source, pos_offset, value) of ``LineRows``' rows: for a declined
    line (value not null) the list of its DECODED rows as the codec decodes it, null for the others."""
    listed = pa.list_(pa.field("element", DECODED_ARROW_STRUCT))

    def decode(batches: Iterator[tuple[pa.Array, pa.Array, pa.Array]]) -> Iterator[pa.Array]:
        from cdc_jobs.io.files import line_records
        from cdc_jobs.transforms.decode import decode_columns

        for sources, numbers, values in batches:
            if values.null_count == len(values):
                yield pa.nulls(len(values), listed)
                continue
            at = pc.indices_nonzero(pc.is_valid(values))
            raw = [column.take(at).to_pylist() for column in (sources, numbers, values)]
            rows = pa.Table.from_batches(list(decode_columns(fmt, [line_records(*raw)])), schema=DECODED_ARROW)
            yield _listed_by_line(rows, raw[0], raw[1], at.to_pylist(), pc.is_null(values), listed)

    return decode


def _listed_by_line(rows: pa.Table, sources: list, numbers: list, at: list[int], taken: pa.Array,
                    listed: pa.DataType) -> pa.Array:
    """The decoded ``rows`` of the declined lines (``sources``/``numbers``, at rows ``at`` of a batch whose other
    rows are ``taken``) as one list per batch row, each line's rows in their order; null for a taken line."""
    line_of = {key: i for i, key in enumerate(zip(sources, numbers))}
    owner = [line_of[key] for key in zip(rows.column("pos_source").to_pylist(), rows.column("pos_offset").to_pylist())]
    counts = [0] * len(taken)
    for line in owner:
        counts[at[line]] += 1
    ordered = rows.take(sorted(range(len(owner)), key=owner.__getitem__))  # stable: a line's rows keep their order
    return pa.ListArray.from_arrays(pa.array(list(accumulate(counts, initial=0)), pa.int32()),
                                    ordered.combine_chunks().to_struct_array().combine_chunks(), type=listed,
                                    mask=taken)


# Kafka records a block of RecordBlockDecode holds: about a line file's block (1 MiB) of typical CDC messages.
RECORDS_PER_BLOCK = 4096


def runs_records(spark: SparkSession, fmt: str, records: int) -> bool:
    """Whether this session decodes ``records`` Kafka records of ``fmt`` in the JVM (its declaration, or its message
    decoder: ``jvm_message_text``): as ``runs`` says of archive files of that many bytes, counting
    ``BYTES_PER_RECORD`` a record (a Kafka plan knows its records, not their size)."""
    return _runs(spark, fmt, "records", lambda least: records * BYTES_PER_RECORD >= least)


# What the size thresholds count a Kafka record as: the bench's canal-json messages are 300-400 bytes. Measured
# on Kafka (bench/kafka_replay.py, best of 2 after a warm-up, JVM vs Python): 200k maxwell-json 7.2 vs 10.89 s,
# canal-json 7.63 vs 9.41 (its first run 12.19 vs 10.85); 1M canal-json 28.76 vs 37.98, drs-json 29.09 vs 74.39.
BYTES_PER_RECORD = 350


def decode_records(raw: DataFrame, fmt: str) -> DataFrame:
    """RAW rows of Kafka records (read from a topic, or from a Kafka dump archive) -> DECODED rows, decoded in the
    JVM (``RecordBlockDecode``: blocks of consecutive records of a topic partition, in the Spark partitions the
    source read them in, no shuffle) by the codec's declaration or its message decoder (``jvm_message_text``)."""
    spark = raw.sparkSession
    decoder = jvm_message_text(get_codec(fmt))
    blocks = DataFrame(spark._jvm.cdcreplay.jobs.RecordBlockDecode.blocks(raw._jdf, decoder, RECORDS_PER_BLOCK), spark)
    return blocks.mapInArrow(codec_env.carried(lambda batches: records_decoded(fmt, batches)), DECODED_SPARK)


def records_decoded(fmt: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """RecordBlockDecode's block rows -> DECODED batches in record order, each record at its Kafka position."""
    for blocks in batches:
        for i in range(blocks.num_rows):
            lines = stream_rows(blocks.column("lines")[i])
            if lines.num_rows:
                yield _record_rows(fmt, {name: blocks.column(name)[i] for name in blocks.column_names}, lines)


# Where a block row keeps each record's position (RAW's pos_ fields): a list of the block's records.
_BLOCK_POSITIONS = {"pos_offset": "offsets", "pos_timestamp_ms": "stamps", "pos_key": "keys",
                    "pos_headers": "headers"}


def _record_rows(fmt: str, block: dict[str, pa.Scalar], lines: pa.RecordBatch) -> pa.RecordBatch:
    """One block's rows: the twin's pos_offset is the record's number in the block (``record`` below). Every row is
    given its record's position once, before the declined records are decoded (their dead letters name it) and the
    rows are put in order."""
    number = lines.column("pos_offset")
    n = lines.num_rows
    lines = lines.set_column(0, "pos_offset", block["offsets"].values.take(number)).append_column("record", number)
    lines = lines.add_column(0, "pos_source", pa.repeat(block["pos_source"], n))
    lines = lines.append_column("pos_partition", pa.repeat(block["pos_partition"], n))
    for field, listed in _BLOCK_POSITIONS.items():
        if field != "pos_offset":
            lines = lines.append_column(field, block[listed].values.take(number))
    tombstones = set(block["tombstones"].as_py())

    def decline(raw: pa.RecordBatch) -> list[pa.RecordBatch]:
        from cdc_jobs.transforms.decode import decode_columns

        cols = {field: raw.column(field).to_pylist() for field in RECORD_AT}
        cols["value"] = [None if k in tombstones else v
                         for k, v in zip(raw.column("record").to_pylist(), raw.column("value").to_pylist())]
        return list(decode_columns(fmt, [cols]))

    def complete(took: pa.RecordBatch) -> pa.RecordBatch:
        rows = completed(fmt, took)
        for field in RECORD_AT:
            if field not in _GIVEN:  # the rest of the record's position: completed set them as a line's
                at = DECODED_ARROW.get_field_index(field)
                kind = DECODED_ARROW.field(at)
                rows = rows.set_column(at, kind, took.column(field).cast(kind.type))
        return rows

    return _merged(fmt, "lines", lines, decline, complete)


def decode_avro_blocks(blocks: DataFrame, fmt: str) -> DataFrame:
    """AVRO_BLOCK rows (``cdc_jobs.io.files.read_avro_blocks``) -> DECODED rows."""
    from cdc_jobs.jvm import AVRO_BLOCK_DECODE

    records = F.call_function(AVRO_BLOCK_DECODE, F.col("twin"), F.col("first_line"), F.col("value"))
    return blocks.select("pos_source", "first_line", "writer_schema", records.alias("lines")) \
        .mapInArrow(codec_env.carried(lambda batches: avro_decoded(fmt, batches)), DECODED_SPARK)


def avro_decoded(fmt: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """AvroBlockDecode's rows -> DECODED batches in record order. Where the twin could not tell the records apart
    (or a row says so), the Python reader reads the rest of that file (``read_avro``), and the file's later rows
    are passed over: what follows is then exactly what the reader gives without the JVM."""
    from cdc_jobs.io.files import read_avro
    from cdc_jobs.transforms.decode import decode_columns

    taken_over: set[str] = set()
    for batch in batches:
        for i in range(batch.num_rows):
            path = batch.column("pos_source")[i].as_py()
            if path in taken_over:
                continue
            stream = batch.column("lines")[i]
            over = batch.column("first_line")[i].as_py()
            if stream.is_valid:
                lines = stream_rows(stream)
                handover = pc.and_(pc.is_null(lines.column("value")), pc.is_null(lines.column("op")))
                if pc.any(handover).as_py():
                    over = pc.min(pc.filter(lines.column("pos_offset"), handover)).as_py()
                    lines = lines.filter(pc.less(lines.column("pos_offset"), over))
                else:
                    over = None
                if lines.num_rows:
                    lines = lines.add_column(0, "pos_source", pa.repeat(pa.scalar(path), lines.num_rows))
                    got, failed = _avro_records(fmt, lines, batch.column("writer_schema")[i].as_py())
                    if got.num_rows:
                        yield got
                    if failed is not None:
                        over = failed
            if over is not None:
                taken_over.add(path)
                yield from decode_columns(fmt, read_avro(path, get_codec(fmt), skip=over - 1))


def stream_rows(stream: pa.Scalar | bytes) -> pa.RecordBatch:
    """An adapter's Arrow IPC stream (``TwinRows``) as one batch of ``LINE_FIELDS``, read without copying but for
    ``columns``: the stream holds each column list of its block once, at the first row that declares it, and
    every row that declares one names it in ``columns_ref``, so the lists are put back on their rows here (one
    ``take`` in C++ instead of the JVM writing every name and type of every row)."""
    buffer = stream.as_buffer() if isinstance(stream, pa.Scalar) else pa.py_buffer(stream)
    lines = pa.ipc.open_stream(buffer).read_all()
    if tuple(lines.column_names) != (*LINE_FIELDS, "columns_ref"):  # a jar built from other sources than these
        raise RuntimeError(f"the JVM adapter wrote columns {lines.column_names}, expected "
                           f"{[*LINE_FIELDS, 'columns_ref']}")
    refs = lines.column("columns_ref")
    lines = lines.drop_columns(["columns_ref"])
    if not lines.num_rows:
        return pa.RecordBatch.from_pylist([], schema=lines.schema)
    batch = lines.combine_chunks().to_batches()[0]
    if refs.null_count == len(refs):
        return batch
    at = LINE_FIELDS.index("columns")
    listed = batch.column(at)
    columns = listed.filter(listed.is_valid()).take(refs.combine_chunks())
    return batch.set_column(at, batch.schema.field(at), columns)


def _avro_records(fmt: str, lines: pa.RecordBatch, writer_schema: str) -> tuple[pa.RecordBatch, int | None]:
    """(DECODED rows of a block's records up to the first that fastavro cannot read, that record's number or
    None). The declined records reach the codec as ``read_avro`` hands them: the datum its container decoder's
    schema reads."""
    failed: list[int] = []

    def decline(raw: pa.RecordBatch) -> list[pa.RecordBatch]:
        import io

        from cdc_codecs.shared.avro import read_named
        from cdc_jobs.io.files import avro_records
        from cdc_jobs.transforms.decode import decode_columns

        decoder = _container_decoder(fmt, writer_schema)
        numbers, values, datums = [], [], []
        for number, value in zip(raw.column("pos_offset").to_pylist(), raw.column("value").to_pylist()):
            try:
                datum = read_named(decoder.schema, io.BytesIO(value))
            except Exception:  # noqa: BLE001 - read_avro names it, from this record on
                failed.append(number)
                break
            numbers.append(number)
            values.append(value)
            datums.append((decoder, datum))
        return list(decode_columns(fmt, [avro_records(raw.column("pos_source")[0].as_py(), numbers, values,
                                                      datums)])) if numbers else []

    merged = _merged(fmt, "avro", lines, decline)
    if failed:
        merged = merged.filter(pc.less(merged.column("pos_offset"), failed[0]))
    return merged, failed[0] if failed else None


@lru_cache(maxsize=64)
def _container_decoder(fmt: str, writer_schema: str):
    decoder = get_codec(fmt).container_decoder(orjson.loads(writer_schema))
    if decoder is None:  # read_avro_blocks hands a twin only the files whose layout has one
        raise RuntimeError(f"{fmt}: no container decoder for the writer schema of a file the JVM decoded")
    return decoder


def _merged(fmt: str, layout: str, lines: pa.RecordBatch, decline, complete=None) -> pa.RecordBatch:
    """A twin's rows -> DECODED rows in message order: the declined messages decoded by ``decline`` (rows ->
    DECODED batches), the twin's rows completed (by ``complete``, else as ``completed`` does for the layout)."""
    declined = pc.is_valid(lines.column("value"))
    parts = []
    if pc.any(declined).as_py():
        parts.extend(decline(lines.filter(declined)))
        took = lines.filter(pc.invert(declined))
    else:
        took = lines
    if took.num_rows:
        parts.append(complete(took) if complete is not None else completed(fmt, took, layout))
    if len(parts) == 1:
        return parts[0]
    table = pa.Table.from_batches(parts, schema=DECODED_ARROW)
    if table.num_rows:
        table = table.take(pc.sort_indices(table, [("pos_offset", "ascending"), ("pos_index", "ascending")]))
    return table.combine_chunks().to_batches()[0] if table.num_rows else parts[0]


# The fields of a completed row that come from the adapter's columns; the others are the same on every row.
_GIVEN = frozenset(TWIN_FIELDS) | {"pos_source", "pos_offset"}


@lru_cache(maxsize=None)
def _constants(fmt: str, layout: str) -> dict[str, object]:
    """The DECODED fields a twin leaves out, as the Python fast path sets them for a plain event of a line or an
    Avro record: its RAW columns as the file's reader gives them (``line_records``, ``avro_records``) through
    ``data_row``, so the two paths cannot drift apart."""
    from cdc_jobs.io.files import avro_records, line_records

    raw = avro_records("", [1], [b""], []) if layout == "avro" else line_records([""], [1], [b""])
    at = tuple(raw[c][0] for c in RECORD_AT)
    row = data_row(fmt, "INSERT", None, None, None, None, [], (), None, (), at, 0, None, True)
    return {name: value for name, value in zip(DECODED_ROW, row) if name not in _GIVEN}


def _constant(value, type_: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)


# (format, layout) -> (rows, the constant columns that long): built once per worker and sliced (no copy) for each
# batch. Building them for every block of a few thousand rows was a fifth of the finishing work.
_FILLED: dict[tuple[str, str], tuple[int, dict[str, pa.Array]]] = {}


def _constant_columns(fmt: str, layout: str, n: int) -> dict[str, pa.Array]:
    rows, columns = _FILLED.get((fmt, layout), (0, {}))
    if n > rows:
        rows, constants = max(n, 2 * rows, 8192), _constants(fmt, layout)
        columns = {f.name: _constant(constants[f.name], f.type, rows) for f in DECODED_ARROW if f.name not in _GIVEN}
        _FILLED[(fmt, layout)] = (rows, columns)
    return columns if n == rows else {name: column.slice(0, n) for name, column in columns.items()}


def completed(fmt: str, took: pa.RecordBatch, layout: str = "lines") -> pa.RecordBatch:
    """The twin's rows as DECODED rows: its fields, and the rest as ``data_row`` sets them for a message of the
    ``layout``."""
    constants = _constant_columns(fmt, layout, took.num_rows)
    arrays = [took.column(f.name).cast(f.type) if f.name in _GIVEN else constants[f.name] for f in DECODED_ARROW]
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW)
