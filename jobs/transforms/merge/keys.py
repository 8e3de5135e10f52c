"""Events -> keyed work rows: which (table, key) each data event touches, in which role, and its identity.

A primary key (or a codec-declared row-id column) is the key. A table with neither is keyed by the SHA-256 of
the row's non-NULL (column, value) pairs (``[ROW_HASH, sha256]``). Roles: ``put`` (INSERT / SNAPSHOT: the image
replaces the row), ``del``, ``upd`` (partial image overlays the row), ``move_in`` (the new key of a key-changing
UPDATE: before overlaid with after); ``base`` marks a row of the ``--base`` state."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .order import rank_column
from ..key_lookup import per_key_column
from ..sequence import sequence_or_empty

ROW_HASH = "#row"  # first element of the key of a table without primary key: ["#row", sha256]
DATA_OPS = ("SNAPSHOT", "INSERT", "UPDATE", "DELETE")
IMAGE_TYPE = "map<string,string>"


def is_data_event() -> SparkColumn:
    """The events the merge applies as rows of a table (not DDL, not markers)."""
    return F.col("op").isin(*DATA_OPS) & F.col("table_name").isNotNull()


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


def event_hash(sequence: SparkColumn | str = "sequence", ddl: SparkColumn | str = "ddl") -> SparkColumn:
    """Content + sequence identity of an event (not its position): equal for re-sent copies. ``sequence`` and
    ``ddl`` are the event's own columns (a work row carries them under other names, see ``identity``)."""
    return F.sha2(F.to_json(F.struct(
        F.col("op"), F.col("table_name"),
        _sorted_entries(F.map_entries("before")).alias("b"), _sorted_entries(F.map_entries("after")).alias("a"),
        F.col(sequence).alias("sequence") if isinstance(sequence, str) else sequence.alias("sequence"),
        F.col("event_time_ms"), F.col(ddl).alias("ddl") if isinstance(ddl, str) else ddl.alias("ddl"))), 256)


def identity() -> SparkColumn:
    """The ``hash`` of a work row: stored for a ``--base`` row, else computed from the event's columns the work
    row carries. A merge computes it only for the rows it keeps (``latest``): hashing is a third of the cost of
    keying every event, and most events are superseded. A sequence-less row of a table without key (a full-sync
    row) cannot be told from an identical row but by its position: its identity includes the position, so
    identical rows are kept (a copy re-read from the same file line is still recognised; a copy re-sent
    elsewhere is not - documented)."""
    content = event_hash(F.when(~F.col("_no_sequence"), F.col("sequence")), "_ddl")
    positional = (F.try_element_at("_key", F.lit(1)) == F.lit(ROW_HASH)) & (F.size("sequence") == 0)
    computed = F.when(positional, F.sha2(F.concat_ws("\x00", content, F.col("pos_source"),
                                                      F.col("pos_partition").cast("string"),
                                                      F.col("pos_offset").cast("string"),
                                                      F.col("pos_index").cast("string")), 256)).otherwise(content)
    return F.coalesce(F.col("hash"), computed)


def content() -> SparkColumn:
    """What ``identity`` hashes, as a comparable value (no hash): equal for copies of one event within a key and
    sequence. Map entries are compared in stored order, so two copies whose images list columns in different
    orders compare unequal: the safe side (their key goes to the ordered apply, which compares identities)."""
    return F.struct("op", "role", F.map_entries("before"), F.map_entries("after"), "event_time_ms", "_ddl", "hash")


# ``hash`` is NULL on event rows until ``latest`` keeps them (``identity``); ``_ddl`` and ``_no_sequence`` are
# what it needs of the event besides the other columns.
WORK_COLUMNS = ["table_name", "_key", "_base", "_role_order", "role", "op", "rank", "sequence", "pos_source",
                "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format", "hash", "before", "after",
                "deleted", "_dup", "removed_columns", "replaces_row", "_ddl", "_no_sequence"]
SORT_COLUMNS = ["table_name", "_key", "_base", "rank", "sequence", "pos_source", "pos_partition", "pos_offset",
                "pos_index", "_role_order"]


def _key_values(pk: SparkColumn, first: SparkColumn, second: SparkColumn,
                known: Sequence[Sequence[str]]) -> SparkColumn:
    """The key's values: each key column from ``first`` when it has it, else from ``second``; the lists in
    ``known`` compiled (``key_lookup``)."""
    return per_key_column(pk, lambda k: F.when(F.map_contains_key(first, k), F.element_at(first, k))
                          .otherwise(F.element_at(second, k)), known)


# The event columns the merge keys and applies (``prepare_events`` reads no other); events equal in all of them but
# their offset and index are copies of one event (``copies.first_copies``).
EVENT_COLUMNS = ["table_name", "op", "before", "after", "primary_key", "row_id_column", "sequence", "pos_source",
                 "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format", "removed_columns",
                 "replaces_row", "ddl"]


def key_columns() -> SparkColumn:
    """The columns whose values key an event's rows: its primary key; for a table without one, the row-id column
    the codec names (a hidden column the source keeps per row) where an image has it; else none (the row hash)."""
    b = F.coalesce(F.col("before"), _empty_image())
    a = F.coalesce(F.col("after"), _empty_image())
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    row_id = F.col("row_id_column")
    return (F.when(F.size(pk) > 0, pk)
            .when(row_id.isNotNull() & (F.map_contains_key(a, row_id) | F.map_contains_key(b, row_id)),
                  F.array(row_id))
            .otherwise(F.array().cast("array<string>")))


def prepare_events(events: DataFrame, primary_keys: Sequence[Sequence[str]] = ()) -> DataFrame:
    """Data events -> one work row per (table, key) they touch, with the role each plays for that key.
    ``primary_keys``: the key column lists the tables declare, if known (only a speed-up: see ``_key_values``)."""
    known = sorted({tuple(k) for k in primary_keys if k})
    events = events.select(*EVENT_COLUMNS)
    b = F.coalesce(F.col("before"), _empty_image())
    a = F.coalesce(F.col("after"), _empty_image())
    pk_eff = key_columns()
    rowhash = F.size(pk_eff) == 0
    old_img = F.map_concat(F.map_filter(a, lambda k, v: ~F.map_contains_key(b, k)), b)
    new_img = F.map_concat(F.map_filter(b, lambda k, v: ~F.map_contains_key(a, k)), a)
    old_key = F.when(rowhash, F.array(F.lit(ROW_HASH), _image_hash(old_img))) \
        .otherwise(_key_values(pk_eff, b, a, known))
    new_key = F.when(rowhash, F.array(F.lit(ROW_HASH), _image_hash(new_img))) \
        .otherwise(_key_values(pk_eff, a, b, known))
    op = F.col("op")

    def part(key: str, role: str) -> SparkColumn:
        return F.struct(F.col(key).alias("k"), F.lit(role).alias("r"))

    # The keys are columns of their own: the split test and the parts read them, not recompute them.
    keyed = events.withColumn("_old_key", old_key).withColumn("_new_key", new_key)
    split = (op == "UPDATE") & (rowhash | ~F.col("_old_key").eqNullSafe(F.col("_new_key")))
    parts = (F.when(op.isin("SNAPSHOT", "INSERT"), F.array(part("_new_key", "put")))
             .when(op == "DELETE", F.array(part("_old_key", "del")))
             .when(split, F.array(part("_old_key", "del"), part("_new_key", "move_in")))
             .otherwise(F.array(part("_new_key", "upd"))))
    return (keyed
            .withColumn("_part", F.explode(parts))
            .select(
                "table_name",
                F.col("_part.k").alias("_key"),
                F.lit(1).alias("_base"),
                F.when(F.col("_part.r") == "del", 0).otherwise(1).alias("_role_order"),
                F.col("_part.r").alias("role"),
                "op",
                rank_column().alias("rank"),
                sequence_or_empty().alias("sequence"),
                "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format",
                F.lit(None).cast("string").alias("hash"),  # computed for the rows kept (``identity``)
                "before", "after",
                F.lit(False).alias("deleted"),
                F.lit(0).alias("_dup"),
                # Format-neutral facts the codec set: columns the change removes (absent afterwards, not NULL),
                # and an after image that replaces the whole row (a document replace).
                F.when(F.size("removed_columns") > 0, F.col("removed_columns")).alias("removed_columns"),
                F.coalesce("replaces_row", F.lit(False)).alias("replaces_row"),
                F.col("ddl").alias("_ddl"),
                F.col("sequence").isNull().alias("_no_sequence"),
            ))


def prepare_base(canonical_state: DataFrame) -> DataFrame:
    """Rows (and tombstones) of a ``--base`` state as work rows that sort first in their key group."""
    return canonical_state.select(
        "table_name", "_key", F.lit(0).alias("_base"), F.lit(0).alias("_role_order"), F.lit("base").alias("role"),
        "op", "rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms",
        "format", "hash", F.lit(None).cast(IMAGE_TYPE).alias("before"), F.col("image").alias("after"), "deleted",
        "_dup", F.lit(None).cast("array<string>").alias("removed_columns"), F.lit(False).alias("replaces_row"),
        F.lit(None).cast("string").alias("_ddl"), F.lit(False).alias("_no_sequence"))

