"""Events -> keyed work rows: which (table, key) each data event touches, in which role, and its identity.

A primary key (or a codec-declared row-id column) is the key. A table with neither is keyed by the SHA-256 of
the row's non-NULL (column, value) pairs (``[ROW_HASH, sha256]``). Roles: ``put`` (INSERT / SNAPSHOT: the image
replaces the row), ``del``, ``upd`` (partial image overlays the row), ``move_in`` (the new key of a key-changing
UPDATE: before overlaid with after); ``base`` marks a row of the ``--base`` state."""

from __future__ import annotations

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .order import rank_column

ROW_HASH = "#row"  # first element of the key of a table without primary key: ["#row", sha256]
DATA_OPS = ("SNAPSHOT", "INSERT", "UPDATE", "DELETE")
IMAGE_TYPE = "map<string,string>"


def _empty_image() -> SparkColumn:
    return F.create_map().cast(IMAGE_TYPE)


def _sorted_entries(entries: SparkColumn) -> SparkColumn:
    """Map entries sorted by key. ``sort_array`` (compiled ordering) rather than ``array_sort`` (a lambda
    comparator, evaluated interpreted per comparison, ~3x the CPU of the whole hash): the same array, because
    map entries are never NULL and their keys are unique, so the order is the keys' order in both."""
    return F.sort_array(entries)


def _image_hash(image: SparkColumn) -> SparkColumn:
    """Identity of a row without primary key: its non-NULL (column, value) pairs, sorted."""
    entries = F.filter(F.map_entries(image), lambda e: e["value"].isNotNull())
    return F.sha2(F.to_json(_sorted_entries(entries)), 256)


def event_hash() -> SparkColumn:
    """Content + sequence identity of an event (not its position): equal for re-sent copies."""
    return F.sha2(F.to_json(F.struct(
        F.col("op"), F.col("table_name"),
        _sorted_entries(F.map_entries("before")).alias("b"), _sorted_entries(F.map_entries("after")).alias("a"),
        F.col("sequence"), F.col("event_time_ms"), F.col("ddl"))), 256)


WORK_COLUMNS = ["table_name", "_key", "_base", "_role_order", "role", "op", "rank", "sequence", "pos_source",
                "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format", "hash", "before", "after",
                "deleted", "_dup", "removed_columns", "replaces_row"]
SORT_COLUMNS = ["table_name", "_key", "_base", "rank", "sequence", "pos_source", "pos_partition", "pos_offset",
                "pos_index", "_role_order"]


def prepare_events(events: DataFrame) -> DataFrame:
    """Data events -> one work row per (table, key) they touch, with the role each plays for that key."""
    b = F.coalesce(F.col("before"), _empty_image())
    a = F.coalesce(F.col("after"), _empty_image())
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    # A table without primary key may still have a row identity the codec names (a hidden row-id column).
    row_id = F.col("row_id_column")
    pk_eff = (F.when(F.size(pk) > 0, pk)
              .when(row_id.isNotNull() & (F.map_contains_key(a, row_id) | F.map_contains_key(b, row_id)),
                    F.array(row_id))
              .otherwise(F.array().cast("array<string>")))
    rowhash = F.size(pk_eff) == 0
    old_pk = F.transform(pk_eff, lambda k: F.when(F.map_contains_key(b, k), F.element_at(b, k))
                         .otherwise(F.element_at(a, k)))
    new_pk = F.transform(pk_eff, lambda k: F.when(F.map_contains_key(a, k), F.element_at(a, k))
                         .otherwise(F.element_at(b, k)))
    old_img = F.map_concat(F.map_filter(a, lambda k, v: ~F.map_contains_key(b, k)), b)
    new_img = F.map_concat(F.map_filter(b, lambda k, v: ~F.map_contains_key(a, k)), a)
    old_key = F.when(rowhash, F.array(F.lit(ROW_HASH), _image_hash(old_img))).otherwise(old_pk)
    new_key = F.when(rowhash, F.array(F.lit(ROW_HASH), _image_hash(new_img))).otherwise(new_pk)
    op = F.col("op")

    def part(key: SparkColumn, role: str) -> SparkColumn:
        return F.struct(key.alias("k"), F.lit(role).alias("r"))

    split = (op == "UPDATE") & (rowhash | ~old_key.eqNullSafe(new_key))
    parts = (F.when(op.isin("SNAPSHOT", "INSERT"), F.array(part(new_key, "put")))
             .when(op == "DELETE", F.array(part(old_key, "del")))
             .when(split, F.array(part(old_key, "del"), part(new_key, "move_in")))
             .otherwise(F.array(part(new_key, "upd"))))
    # A sequence-less row of a table without key (a full-sync row) cannot be told from an identical row but by
    # its position: its identity includes the position, so identical rows are kept (a copy re-read from the
    # same file line is still recognised; a copy re-sent elsewhere is not - documented).
    positional = rowhash & (F.size(F.coalesce("sequence", F.array())) == 0)
    ident = F.when(positional, F.sha2(F.concat_ws("\x00", event_hash(), F.col("pos_source"),
                                                  F.col("pos_partition").cast("string"),
                                                  F.col("pos_offset").cast("string"),
                                                  F.col("pos_index").cast("string")), 256)).otherwise(event_hash())
    return (events
            .withColumn("hash", ident)
            .withColumn("_part", F.explode(parts))
            .select(
                "table_name",
                F.col("_part.k").alias("_key"),
                F.lit(1).alias("_base"),
                F.when(F.col("_part.r") == "del", 0).otherwise(1).alias("_role_order"),
                F.col("_part.r").alias("role"),
                "op",
                rank_column().alias("rank"),
                F.coalesce("sequence", F.array().cast("array<decimal(38,0)>")).alias("sequence"),
                "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format", "hash",
                "before", "after",
                F.lit(False).alias("deleted"),
                F.lit(0).alias("_dup"),
                # Format-neutral facts the codec set: columns the change removes (absent afterwards, not NULL),
                # and an after image that replaces the whole row (a document replace).
                F.when(F.size("removed_columns") > 0, F.col("removed_columns")).alias("removed_columns"),
                F.coalesce("replaces_row", F.lit(False)).alias("replaces_row"),
            ))


def prepare_base(canonical_state: DataFrame) -> DataFrame:
    """Rows (and tombstones) of a ``--base`` state as work rows that sort first in their key group."""
    return canonical_state.select(
        "table_name", "_key", F.lit(0).alias("_base"), F.lit(0).alias("_role_order"), F.lit("base").alias("role"),
        "op", "rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms",
        "format", "hash", F.lit(None).cast(IMAGE_TYPE).alias("before"), F.col("image").alias("after"), "deleted",
        "_dup", F.lit(None).cast("array<string>").alias("removed_columns"), F.lit(False).alias("replaces_row"))

