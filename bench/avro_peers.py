"""Hand-written peers for the Avro formats (see ``bench/peers.py``): fastavro over the archived files inside
``mapInArrow``, one row per record with table, op and before/after images as maps of the vendor's value text ->
Parquet by table. One reader per archive form (container files; Kafka dump lines of Confluent-framed datums
with the registry's schemas in ``_schemas``), one small row function per format.

- re-encode peer, dts-avro -> oms-default: fastavro -> orjson of the OMS shape -> text.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Callable, Iterator, Optional

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

Image = Optional[dict]
ROW = pa.schema([("table_name", pa.string()), ("op", pa.string()), ("before", pa.map_(pa.string(), pa.string())),
                 ("after", pa.map_(pa.string(), pa.string()))])


def _text(v) -> Optional[str]:
    """The vendor value as text, roughly (a peer does not need the exact canonical text)."""
    if v is None:
        return None
    if isinstance(v, dict):
        if "value" in v:  # StringObject, DecimalObject, ... (DTS, OMS)
            inner = v["value"]
            return inner.decode("utf-8", "replace") if isinstance(inner, bytes) else _text(inner)
        return str(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return str(v)


# -- readers: archived files -> datums ----------------------------------------------------------------------------

def _container_records(path: str) -> Iterator[dict]:
    import fastavro

    with open(path, "rb") as fh:
        yield from fastavro.reader(fh)


def _confluent_records(path: str) -> Iterator[dict]:
    """A Kafka dump file of Confluent-framed values (magic byte, 4-byte schema id, datum); the writer schemas by
    id in the archive's ``_schemas`` folder."""
    import io
    import json
    import struct

    import fastavro
    import orjson

    schemas: dict[int, object] = {}
    folder = Path(path).parent / "_schemas"
    with open(path, "rb") as fh:
        for line in fh:
            value = base64.b64decode(orjson.loads(line)["value"])
            sid = struct.unpack(">I", value[1:5])[0]
            if sid not in schemas:
                schemas[sid] = fastavro.parse_schema(json.loads((folder / f"{sid}.avsc").read_text()))
            yield fastavro.schemaless_reader(io.BytesIO(value[5:]), schemas[sid], None)


# -- per format: a datum -> (table, op, before, after) ------------------------------------------------------------

def _positional_images(rec: dict, before: str, after: str) -> tuple[Image, Image]:
    """DTS/OMS: column names in ``fields``, values by position in the image arrays."""
    names = [f["name"] for f in rec["fields"]] if isinstance(rec.get("fields"), list) else []

    def image(side: str) -> Image:
        img = rec.get(side)
        return {n: _text(v) for n, v in zip(names, img)} if isinstance(img, list) else None

    return image(before), image(after)


def _dts_row(rec: dict) -> tuple:
    return (rec["objectName"], rec["operation"], *_positional_images(rec, "beforeImages", "afterImages"))


def _oms_row(rec: dict) -> tuple:
    # image values are ColumnValue records {type_info, value}: ``_text`` takes their value
    return (f"{rec['schemaName']}.{rec['tableName']}", rec["operation"],
            *_positional_images(rec, "beforeImages", "afterImages"))


def _debezium_row(rec: dict) -> tuple:
    image = lambda img: {k: _text(v) for k, v in img.items()} if img is not None else None  # noqa: E731
    src = rec["source"]
    return f"{src['db']}.{src['table']}", rec["op"], image(rec["before"]), image(rec["after"])


def _rows(read: Callable[[str], Iterator[dict]], row: Callable[[dict], tuple]):
    """The mapInArrow function: file paths in, one Arrow row per record out."""
    def batches(paths) -> Iterator[pa.RecordBatch]:
        for batch in paths:
            cols: list[list] = [[] for _ in ROW.names]
            for path in batch.column("path").to_pylist():
                for rec in read(path):
                    for col, value in zip(cols, row(rec)):
                        col.append(value)
                    if len(cols[0]) >= 8192:
                        yield pa.RecordBatch.from_arrays(cols, schema=ROW)
                        cols = [[] for _ in ROW.names]
            if cols[0]:
                yield pa.RecordBatch.from_arrays(cols, schema=ROW)

    return batches


def _files(spark: SparkSession, archive: Path, suffix: str) -> DataFrame:
    files = sorted(str(p) for p in archive.iterdir() if p.name.endswith(suffix))
    return spark.createDataFrame([(f,) for f in files], "path string").repartition(len(files))


def _replay(suffix: str, read: Callable[[str], Iterator[dict]], row: Callable[[dict], tuple]):
    def replay(spark: SparkSession, archive: Path, out: Path) -> None:
        from pyspark.sql.pandas.types import from_arrow_schema

        _files(spark, archive, suffix).mapInArrow(_rows(read, row), from_arrow_schema(ROW)) \
            .write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))

    return replay


REPLAY = {
    "dts-avro": _replay(".avro", _container_records, _dts_row),
    "oms-avro": _replay(".avro", _container_records, _oms_row),
    "debezium-avro-confluent": _replay(".dump.jsonl", _confluent_records, _debezium_row),
}


# -- re-encode dts-avro -> oms-default ---------------------------------------------------------------------------

def _dts_to_oms_batches(batches) -> Iterator[pa.RecordBatch]:
    import orjson

    for batch in batches:
        lines = []
        for path in batch.column("path").to_pylist():
            for rec in _container_records(path):
                before, after = _positional_images(rec, "beforeImages", "afterImages")
                db, _, table = (rec["objectName"] or "").partition(".")
                op = rec["operation"]
                lines.append(orjson.dumps({
                    "allMetaData": {"checkpoint": str(rec["sourceTimestamp"]), "record_primary_key": None,
                                    "source_identity": None, "record_primary_value": None, "dbType": None,
                                    "table_name": table, "db": db, "timestamp": str(rec["sourceTimestamp"]),
                                    "storeDataSequence": rec["id"]},
                    "recordType": "ROW" if op == "INIT" else op, "prevStruct": before, "postStruct": after,
                }).decode())
                if len(lines) >= 8192:
                    yield pa.RecordBatch.from_pydict({"value": lines})
                    lines = []
        if lines:
            yield pa.RecordBatch.from_pydict({"value": lines})


def reencode_dts_to_oms(spark: SparkSession, archive: Path, out: Path) -> None:
    _files(spark, archive, ".avro").mapInArrow(_dts_to_oms_batches, "value string") \
        .write.mode("overwrite").text(str(out / "encoded"))


# -- Kafka topics: a record's value is one schemaless datum of the format's schema ----------------------------------

def _kafka_rows(fmt: str, row: Callable[[dict], tuple]):
    """The mapInArrow function over Kafka rows: each value read with the format's own schema."""
    def batches(records) -> Iterator[pa.RecordBatch]:
        import io

        import fastavro

        from cdc_codecs.dts.dts_avro import RECORD15

        schema = {"dts-avro": RECORD15}[fmt]
        for batch in records:
            cols: list[list] = [[] for _ in ROW.names]
            for value in batch.column("value").to_pylist():
                for col, v in zip(cols, row(fastavro.schemaless_reader(io.BytesIO(value), schema, None))):
                    col.append(v)
            yield pa.RecordBatch.from_arrays(cols, schema=ROW)

    return batches


KAFKA_ROWS = {"dts-avro": _dts_row}


def replay_kafka(fmt: str, records: DataFrame, out: Path) -> None:
    """The peer of ``fmt`` over Kafka rows (``value`` binary): fastavro per value -> rows -> Parquet by table."""
    from pyspark.sql.pandas.types import from_arrow_schema

    records.select("value").mapInArrow(_kafka_rows(fmt, KAFKA_ROWS[fmt]), from_arrow_schema(ROW)) \
        .write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))
