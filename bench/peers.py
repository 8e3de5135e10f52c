"""Hand-written one-format Spark jobs: what a Spark engineer writes by hand instead of cdc-replay, measured beside
it on the same archive in the same run (``bench/run.py``). They are deliberately plain and not exact (no dead
letters, no accounting, values as the vendor's text): the yardstick, not a product.

- replay peer, canal-json: ``from_json`` with an explicit schema -> explode ``data`` -> Parquet by table.
- replay peer, dts-avro: fastavro over the container files inside ``mapInArrow`` -> one row per record with
  before/after images as maps -> Parquet by table.
- re-encode peer, canal-json -> oms-default: ``from_json`` -> explode -> ``to_json`` of the OMS shape -> text.
- re-encode peer, dts-avro -> oms-default: fastavro -> orjson of the OMS shape -> text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

CANAL_SCHEMA = T.StructType([
    T.StructField("database", T.StringType()),
    T.StructField("table", T.StringType()),
    T.StructField("pkNames", T.ArrayType(T.StringType())),
    T.StructField("es", T.LongType()),
    T.StructField("ts", T.LongType()),
    T.StructField("id", T.LongType()),
    T.StructField("mysqlType", T.MapType(T.StringType(), T.StringType())),
    T.StructField("sqlType", T.MapType(T.StringType(), T.IntegerType())),
    T.StructField("type", T.StringType()),
    T.StructField("isDdl", T.BooleanType()),
    T.StructField("sql", T.StringType()),
    T.StructField("data", T.ArrayType(T.MapType(T.StringType(), T.StringType()))),
    T.StructField("old", T.ArrayType(T.MapType(T.StringType(), T.StringType()))),
])


def _canal_rows(spark: SparkSession, archive: Path) -> DataFrame:
    msgs = spark.read.text(str(archive)).select(F.from_json("value", CANAL_SCHEMA).alias("m")).select("m.*")
    return msgs.select(
        F.concat_ws(".", "database", "table").alias("table_name"), "type", "es", "id", "pkNames", "mysqlType",
        F.posexplode_outer("data").alias("row", "after"), "old",
    ).withColumn("before", F.col("old")[F.col("row")]).drop("old")


def replay_canal(spark: SparkSession, archive: Path, out: Path) -> None:
    _canal_rows(spark, archive).write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))


def reencode_canal_to_oms(spark: SparkSession, archive: Path, out: Path) -> None:
    rows = _canal_rows(spark, archive)
    seconds = (F.col("es") / 1000).cast("long").cast("string")
    pk = F.col("pkNames")[0]
    prev = F.when(F.col("type") == "UPDATE", F.map_concat(F.col("after"), F.coalesce(F.col("before"), F.create_map())))
    rec = F.struct(
        F.struct(seconds.alias("checkpoint"), F.array_join("pkNames", ",").alias("record_primary_key"),
                 F.lit(None).cast("string").alias("source_identity"), F.col("after")[pk].alias("record_primary_value"),
                 F.lit(None).cast("string").alias("dbType"), F.element_at(F.split("table_name", r"\."), 2)
                 .alias("table_name"), F.element_at(F.split("table_name", r"\."), 1).alias("db"),
                 seconds.alias("timestamp"), F.col("id").alias("storeDataSequence")).alias("allMetaData"),
        F.when(F.col("type") == "INSERT", "INSERT").otherwise(F.col("type")).alias("recordType"),
        prev.alias("prevStruct"),
        F.when(F.col("type") != "DELETE", F.col("after")).alias("postStruct"),
    )
    # map_concat with duplicate keys: last wins
    spark.conf.set("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
    rows.select(F.to_json(rec, {"ignoreNullFields": "false"}).alias("value")).write.mode("overwrite").text(str(out / "encoded"))


# -- dts-avro ------------------------------------------------------------------------------------------------

DTS_ROW = pa.schema([("table_name", pa.string()), ("op", pa.string()), ("id", pa.int64()),
                     ("ts", pa.int64()), ("before", pa.map_(pa.string(), pa.string())),
                     ("after", pa.map_(pa.string(), pa.string()))])


def _dts_text(v) -> str | None:
    """The vendor value as text, roughly (a peer does not need the exact canonical text)."""
    if v is None or not isinstance(v, dict):
        return None if v is None else str(v)
    if "value" in v:
        val = v["value"]
        if isinstance(val, bytes):
            return val.decode("utf-8", "replace")  # a peer ignores the charset (utf8mb4 here)
        return None if val is None else str(val)
    if "timestamp" in v:
        return f"{v['timestamp']}.{v.get('millis', 0):06d}"
    if "year" in v:
        return (f"{v.get('year') or 0:04d}-{v.get('month') or 0:02d}-{v.get('day') or 0:02d} "
                f"{v.get('hour') or 0:02d}:{v.get('minute') or 0:02d}:{v.get('second') or 0:02d}")
    return str(v)


def _dts_images(rec: dict) -> tuple[dict | None, dict | None]:
    names = [f["name"] for f in rec["fields"]] if isinstance(rec.get("fields"), list) else []

    def image(side):
        img = rec.get(side)
        if not isinstance(img, list):
            return None
        return {n: _dts_text(v) for n, v in zip(names, img)}

    return image("beforeImages"), image("afterImages")


def _dts_records(paths: list[str]) -> Iterator[dict]:
    import fastavro

    for path in paths:
        with open(path, "rb") as fh:
            yield from fastavro.reader(fh)


def _dts_replay_batches(batches) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        cols: dict[str, list] = {n: [] for n in DTS_ROW.names}
        for rec in _dts_records(batch.column("path").to_pylist()):
            before, after = _dts_images(rec)
            cols["table_name"].append(rec["objectName"])
            cols["op"].append(rec["operation"])
            cols["id"].append(rec["id"])
            cols["ts"].append(rec["sourceTimestamp"])
            cols["before"].append(before)
            cols["after"].append(after)
            if len(cols["op"]) >= 8192:
                yield pa.RecordBatch.from_pydict(cols, schema=DTS_ROW)
                cols = {n: [] for n in DTS_ROW.names}
        if cols["op"]:
            yield pa.RecordBatch.from_pydict(cols, schema=DTS_ROW)


def _files(spark: SparkSession, archive: Path) -> DataFrame:
    files = sorted(str(p) for p in archive.iterdir() if p.suffix == ".avro")
    return spark.createDataFrame([(f,) for f in files], "path string").repartition(len(files))


def replay_dts(spark: SparkSession, archive: Path, out: Path) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    _files(spark, archive).mapInArrow(_dts_replay_batches, from_arrow_schema(DTS_ROW)) \
        .write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))


def _dts_to_oms_batches(batches) -> Iterator[pa.RecordBatch]:
    import orjson

    for batch in batches:
        lines = []
        for rec in _dts_records(batch.column("path").to_pylist()):
            before, after = _dts_images(rec)
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
    _files(spark, archive).mapInArrow(_dts_to_oms_batches, "value string") \
        .write.mode("overwrite").text(str(out / "encoded"))


REPLAY = {"canal-json": replay_canal, "dts-avro": replay_dts}
REENCODE = {("canal-json", "oms-default"): reencode_canal_to_oms, ("dts-avro", "oms-default"): reencode_dts_to_oms}
