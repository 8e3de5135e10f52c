"""Hand-written one-format Spark jobs: what a Spark engineer writes by hand instead of cdc-replay, measured beside
it on the same archive in the same run (``bench/run.py``). They are deliberately plain and not exact (no dead
letters, no accounting, values as the vendor's text): the yardstick, not a product.

- replay peers, JSON formats: ``from_json`` with the format's explicit schema -> one row per changed row
  (``explode`` where a message carries several) with table, op and before/after images as maps (as strings where
  the vendor ships a document as a string: MongoDB) -> Parquet by table. One function per row shape; per format
  only its schema and where its table, op and images live.
- replay peers, Avro formats: ``bench/avro_peers.py`` (fastavro inside ``mapInArrow``).
- re-encode peer, canal-json -> oms-default: ``from_json`` -> explode -> ``to_json`` of the OMS shape -> text.
- re-encode peer, dts-avro -> oms-default: ``bench/avro_peers.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench import avro_peers

S, L = T.StringType(), T.LongType()
ROW = T.MapType(S, S)  # a row image: column -> the vendor's value text
ROWS = T.ArrayType(ROW)


def _struct(**fields: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(name, kind) for name, kind in fields.items()])


def _rows_per_message(msgs: DataFrame, table: Column, op: Column, before: Column, after: Column) -> DataFrame:
    """One message, one row (before/after image columns)."""
    return msgs.select(table.alias("table_name"), op.alias("op"), before.alias("before"), after.alias("after"))


def _rows_exploded(msgs: DataFrame, table: Column, op: Column, rows: str, befores: str) -> DataFrame:
    """Messages carrying several rows (``rows``) with their before images at the same index (``befores``); a
    delete carries its rows in ``befores`` only."""
    has_rows = F.size(rows) > 0  # -1 for null
    return msgs.select(table.alias("table_name"), op.alias("op"), has_rows.alias("_has_rows"),
                       F.col(befores).alias("_befores"),
                       F.posexplode_outer(F.when(has_rows, F.col(rows)).otherwise(F.col(befores)))
                       .alias("row", "_image")) \
        .select("table_name", "op", "row", F.get("_befores", "row").alias("before"),
                F.when(F.col("_has_rows"), F.col("_image")).alias("after"))


@dataclass(frozen=True)
class JsonPeer:
    schema: T.StructType
    rows: Callable[[DataFrame], DataFrame]  # parsed messages -> table_name, op, before, after (+ what it keeps)


def _replay_json(peer: JsonPeer, spark: SparkSession, archive: Path, out: Path) -> None:
    msgs = spark.read.text(str(archive)).select(F.from_json("value", peer.schema).alias("m")).select("m.*")
    peer.rows(msgs).write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))


def _dotted(*parts: str) -> Column:
    return F.concat_ws(".", *parts)


# -- canal family (Canal, DRS, CloudCanal): rows in a ``data`` array ------------------------------------------

CANAL_SCHEMA = _struct(database=S, table=S, pkNames=T.ArrayType(S), es=L, ts=L, id=L, mysqlType=ROW,
                       sqlType=T.MapType(S, T.IntegerType()), type=S, isDdl=T.BooleanType(), sql=S, data=ROWS,
                       old=ROWS)
DRS_SCHEMA = _struct(database=S, table=S, pkNames=T.ArrayType(S), es=L, ts=L, id=L, mysqlType=ROW, type=S,
                     isDdl=T.BooleanType(), data=ROWS, old=ROWS)
DRS_GAUSSDB_SCHEMA = _struct(database=S, table=S, pkNames=T.ArrayType(S), es=L, ts=L, id=L, columnType=ROW,
                             opType=S, type=S, isDdl=T.BooleanType(), data=ROWS, old=ROWS)
CLOUDCANAL_SCHEMA = _struct(db=S, schema=S, table=S, pks=T.ArrayType(S), execTs=L, dbValType=ROW, action=S,
                            isDdl=T.BooleanType(), data=ROWS, before=ROWS)


def _canal_rows(msgs: DataFrame) -> DataFrame:
    return msgs.select(
        _dotted("database", "table").alias("table_name"), "type", "es", "id", "pkNames", "mysqlType",
        F.posexplode_outer("data").alias("row", "after"), "old",
    ).withColumn("before", F.col("old")[F.col("row")]).drop("old")


def _drs_rows(msgs: DataFrame) -> DataFrame:
    return _rows_exploded(msgs, _dotted("database", "table"), F.col("type"), "data", "old")


def _cloudcanal_rows(msgs: DataFrame) -> DataFrame:
    return _rows_exploded(msgs, _dotted("db", "table"), F.col("action"), "data", "before")


# -- one row per message ----------------------------------------------------------------------------------------

DEBEZIUM_SCHEMA = _struct(payload=_struct(before=ROW, after=ROW, op=S, ts_ms=L,
                                          source=_struct(db=S, table=S, pos=L)))
DEBEZIUM_BSON_SCHEMA = _struct(before=S, after=S, updateDescription=_struct(updatedFields=S), op=S, ts_ms=L,
                               source=_struct(db=S, collection=S, ord=L))
DATAWORKS_SCHEMA = _struct(schema=_struct(source=_struct(dbName=S, tableName=S)),
                           payload=_struct(before=_struct(dataColumn=ROW), after=_struct(dataColumn=ROW),
                                           sequenceId=S, op=S))
DRS_MONGO_SCHEMA = _struct(id=L, op=S, db=S, coll=S, value=S, where=S, es=L)
MAXWELL_SCHEMA = _struct(database=S, table=S, type=S, ts=L, data=ROW, old=ROW)
OGG_SCHEMA = _struct(table=S, op_type=S, pos=S, before=ROW, after=ROW)
OMS_SCHEMA = _struct(allMetaData=_struct(db=S, table_name=S, storeDataSequence=L), recordType=S, prevStruct=ROW,
                     postStruct=ROW)
OMS_DATAWORKS_SCHEMA = _struct(schema=_struct(source=_struct(dbName=S, table=S)),
                               payload=_struct(op=S, scn=S, before=_struct(data=ROW), after=_struct(data=ROW)))
OMS_SHAREPLEX_SCHEMA = _struct(meta=_struct(op=S, table=S, scn=S), data=ROW, key=ROW)

c = F.col


def _dataworks_rows(msgs: DataFrame) -> DataFrame:
    # An update is two messages (UPDATE_BEFOR, UPDATE_AFTER); a plain job keeps the after image only.
    return _rows_per_message(msgs.filter(c("payload.op") != "UPDATE_BEFOR"),
                             _dotted("schema.source.dbName", "schema.source.tableName"), c("payload.op"),
                             c("payload.before.dataColumn"), c("payload.after.dataColumn"))


JSON_PEERS: dict[str, JsonPeer] = {
    "canal-json": JsonPeer(CANAL_SCHEMA, _canal_rows),
    "drs-json": JsonPeer(DRS_SCHEMA, _drs_rows),
    "drs-json-c": JsonPeer(DRS_SCHEMA, _drs_rows),
    "drs-gaussdb": JsonPeer(DRS_GAUSSDB_SCHEMA, _drs_rows),
    "cloudcanal-json": JsonPeer(CLOUDCANAL_SCHEMA, _cloudcanal_rows),
    "debezium-json": JsonPeer(DEBEZIUM_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("payload.source.db", "payload.source.table"), c("payload.op"), c("payload.before"),
        c("payload.after"))),
    # MongoDB documents stay the Extended JSON strings the connector ships (no ``bson`` package here).
    "debezium-bson": JsonPeer(DEBEZIUM_BSON_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("source.db", "source.collection"), c("op"), c("before"),
        F.coalesce(c("after"), c("updateDescription.updatedFields")))),
    "drs-mongo": JsonPeer(DRS_MONGO_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("db", "coll"), c("op"), c("where"), c("value"))),
    "dataworks-json": JsonPeer(DATAWORKS_SCHEMA, _dataworks_rows),
    "maxwell-json": JsonPeer(MAXWELL_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("database", "table"), c("type"), c("old"), c("data"))),
    "ogg-json": JsonPeer(OGG_SCHEMA, lambda m: _rows_per_message(
        m, c("table"), c("op_type"), c("before"), c("after"))),
    "oms-default": JsonPeer(OMS_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("allMetaData.db", "allMetaData.table_name"), c("recordType"), c("prevStruct"),
        c("postStruct"))),
    "oms-extend-column-type": JsonPeer(OMS_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("allMetaData.db", "allMetaData.table_name"), c("recordType"),
        F.map_filter("prevStruct", lambda k, v: k != "__light_type"),
        F.map_filter("postStruct", lambda k, v: k != "__light_type"))),
    "oms-dataworks": JsonPeer(OMS_DATAWORKS_SCHEMA, lambda m: _rows_per_message(
        m, _dotted("schema.source.dbName", "schema.source.table"), c("payload.op"), c("payload.before.data"),
        c("payload.after.data"))),
    "oms-shareplex": JsonPeer(OMS_SHAREPLEX_SCHEMA, lambda m: _rows_per_message(
        m, c("meta.table"), c("meta.op"), c("key"), c("data"))),
}


# -- re-encode ---------------------------------------------------------------------------------------------------

def reencode_canal_to_oms(spark: SparkSession, archive: Path, out: Path) -> None:
    msgs = spark.read.text(str(archive)).select(F.from_json("value", CANAL_SCHEMA).alias("m")).select("m.*")
    rows = _canal_rows(msgs)
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


def _json_replay(fmt: str) -> Callable[[SparkSession, Path, Path], None]:
    return lambda spark, archive, out: _replay_json(JSON_PEERS[fmt], spark, archive, out)


REPLAY: dict[str, Callable[[SparkSession, Path, Path], None]] = {
    **{fmt: _json_replay(fmt) for fmt in JSON_PEERS}, **avro_peers.REPLAY}
REENCODE = {("canal-json", "oms-default"): reencode_canal_to_oms,
            ("dts-avro", "oms-default"): avro_peers.reencode_dts_to_oms}
