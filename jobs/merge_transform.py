"""The merge's pure parts: DDL parsing, schema evolution, the Spark transforms that key and order events, and the
per-key apply function that runs inside ``mapInArrow`` over key-sorted partitions.

Semantics (the contract users rely on; ``cdc_jobs.merge`` has the I/O):

Order. Within a table and key, events are applied by the *order key*
``(rank, sequence, pos_source, pos_partition, pos_offset, pos_index)``: ``sequence`` is the vendor's typed
ordering tuple compared as numbers component by component (Spark array order == Python tuple order: element by
element, a shorter prefix first), the archive position breaks ties. ``rank`` is 0 only for a SNAPSHOT row whose
position in the change stream is unknown (no vendor sequence): such a row is the baseline and every change of
its key wins over it, whatever the timestamps say. Snapshot rows that do carry a sequence are ordered by it.

Duplicates. An event's identity is a hash of its content and sequence (op, table, before, after, sequence,
event time), not its position: every later copy of an identity within a key is skipped, so re-sent messages
(at-least-once delivery, overlapping replays) never change the result. Across days the state remembers, per
key, the order key and identity of the last event applied (``--base``): events ordered at or before it are
already part of the base, and a late copy of the last event itself is recognised by its identity. Exception:
a row of a table *without* primary key that also has no sequence (a full-sync row) includes its archive
position in its identity, because two identical such rows are two rows; a copy re-read from the same file line
is still recognised, one re-sent at another position is not. Caveat: when a vendor's sequence is not unique
per event (e.g. only a millisecond time), identical events with the same sequence are one event (an A-B-A
sequence inside one millisecond would lose the second A).

Images. A column absent from an update's after image keeps its value; a column present as NULL becomes NULL.

Unknown keys. INSERT / SNAPSHOT of an existing key replace the row (the source must have held the new image).
UPDATE of a key with no row upserts ``before`` overlaid with ``after`` (the best the source tells; columns in
neither are NULL). DELETE of an absent key is a no-op. Deleted keys are kept as tombstones in ``_canonical/``
so a late duplicate of an older insert cannot resurrect them in a later ``--base`` run.

Key changes. An UPDATE whose key differs before/after becomes a delete of the old key and a write of the new
key with ``before`` overlaid by ``after`` (codecs with a full before or full after image give the whole row; a
format with partial images on both sides, e.g. SharePlex, leaves the columns in neither image NULL).

Tables without a primary key. When the image has DataWorks' ``#alibaba_rds_row_id#`` that column is the key.
Otherwise a row's identity is the SHA-256 of its non-NULL (column, value) pairs: INSERT adds one row with that
identity (duplicate rows are kept as separate rows), DELETE removes one matching row (none: no-op), UPDATE is a
delete of ``after``-overlaid-by-``before`` plus an insert of ``before``-overlaid-by-``after``. Such updates
need a before image; DROP/RENAME COLUMN changes the identity of rows inserted before it (documented limit).

DDL. ADD / DROP / RENAME / CHANGE / MODIFY COLUMN (MySQL and PostgreSQL spellings) and TRUNCATE / DROP TABLE
are applied to every row of the table at their position: ADD gives existing rows NULL (or the DDL's literal
DEFAULT), DROP removes the value, RENAME moves it, MODIFY only changes the declared type, TRUNCATE deletes all
rows. Other statements are kept in the DDL history as ``ignored``.

Documents (format ``drs-mongo``). Keyed by ``_id``; ``$set`` fields are a partial image; fields listed in
``vendor["unset"]`` are removed from the document (not set NULL); a ``replace`` record replaces the document.
Dotted ``$set`` paths stay one field (as the codec keeps them).

History (``--history``). Every applied change that alters a row emits a version (image + the event's order key
and time); deletes and TRUNCATE emit a marker that closes it. ``history_versions`` turns them into SCD type 2
rows (valid from / valid to in sequence and event-time terms, current flag); DDL does not create versions, and
a renamed column's older versions are read under the new name (``cdc_jobs.merge.rename_lineage``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import pyarrow as pa
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

ROW_ID = "#alibaba_rds_row_id#"
ROW_HASH = "#row"  # first element of the key of a table without primary key: ["#row", sha256]
DATA_OPS = ("SNAPSHOT", "INSERT", "UPDATE", "DELETE")
SCHEMA_OPS = ("DDL", "TRUNCATE")
IMAGE_TYPE = "map<string,string>"
ORDER_FIELDS = ["rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index"]

# ---------------------------------------------------------------------------------------------------------------
# Order keys


OrderKey = tuple  # (rank, (Decimal, ...), source, partition, offset, index)


def order_key(rank: int, sequence: Optional[Sequence[Decimal]], source: Optional[str], partition: Optional[int],
              offset: Optional[int], index: Optional[int]) -> OrderKey:
    return (rank or 0, tuple(sequence or ()), source or "", partition if partition is not None else -1,
            offset or 0, index or 0)


# ---------------------------------------------------------------------------------------------------------------
# DDL parsing (pure)

_STOP = {"null", "not", "default", "comment", "after", "first", "auto_increment", "primary", "unique", "key",
         "character", "charset", "collate", "generated", "as", "on", "references", "check", "constraint",
         "invisible", "visible", "storage", "column_format", "srid", "using", "identity"}
_NOT_COLUMN = {"index", "key", "primary", "unique", "constraint", "foreign", "fulltext", "spatial", "partition",
               "check", "period", "system", "default", "foreign"}
_TOKEN = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\[[^\]]*\]"
                    r"|[\w$#.+-]+(?:\s*\([^)]*\))?|\([^)]*\)|\S")


@dataclass(frozen=True)
class DdlAction:
    kind: str  # add | drop | rename | modify | truncate
    column: Optional[str] = None
    new_name: Optional[str] = None
    type_name: Optional[str] = None
    default: Optional[str] = None


def _unquote(ident: str) -> str:
    ident = ident.strip()
    if len(ident) >= 2 and ident[0] == ident[-1] and ident[0] in "`\"":
        q = ident[0]
        return ident[1:-1].replace(q + q, q)
    if len(ident) >= 2 and ident[0] == "[" and ident[-1] == "]":
        return ident[1:-1]
    return ident


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _literal(token: str) -> Optional[str]:
    if token.lower() == "null":
        return None
    if len(token) >= 2 and token[0] == token[-1] == "'":
        return token[1:-1].replace("''", "'").replace("\\'", "'")
    if re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", token):
        return token
    return None  # an expression (CURRENT_TIMESTAMP, now()): value unknown here, old rows get NULL


def _column_definition(tokens: list[str]) -> tuple[Optional[str], Optional[str]]:
    """``decimal(10,2) unsigned NOT NULL DEFAULT '0.00' AFTER x`` -> (type text, default literal)."""
    type_parts: list[str] = []
    i = 0
    while i < len(tokens) and not (type_parts and tokens[i].lower() in _STOP):
        type_parts.append(tokens[i])
        i += 1
    default = None
    for j in range(i, len(tokens) - 1):
        if tokens[j].lower() == "default":
            default = _literal(tokens[j + 1])
            break
    type_name = " ".join(type_parts) or None
    return type_name, default


def _spec(spec: str) -> Optional[DdlAction]:
    tokens = _TOKEN.findall(spec)
    low = [t.lower() for t in tokens]
    if not tokens:
        return None

    def skip(i: int, *words: str) -> int:
        while i < len(low) and low[i] in words:
            i += 1
        return i

    verb = low[0]
    if verb == "add":
        i = skip(1, "column")
        if i < len(low) and low[i] == "if":
            i = skip(i, "if", "not", "exists")
        if i >= len(tokens) or low[i] in _NOT_COLUMN or tokens[i].startswith("("):
            return None
        type_name, default = _column_definition(tokens[i + 1:])
        return DdlAction("add", _unquote(tokens[i]), type_name=type_name, default=default)
    if verb == "drop":
        i = skip(1, "column")
        if i < len(low) and low[i] == "if":
            i = skip(i, "if", "exists")
        if i >= len(tokens) or low[i] in _NOT_COLUMN:
            return None
        return DdlAction("drop", _unquote(tokens[i]))
    if verb == "rename" and len(low) >= 4 and low[1] == "column" and "to" in low:
        t = low.index("to")
        return DdlAction("rename", _unquote(tokens[2]), new_name=_unquote(tokens[t + 1]))
    if verb == "change":
        i = skip(1, "column")
        if i + 1 >= len(tokens):
            return None
        type_name, _ = _column_definition(tokens[i + 2:])
        old, new = _unquote(tokens[i]), _unquote(tokens[i + 1])
        return DdlAction("rename" if old != new else "modify", old, new_name=new if old != new else None,
                         type_name=type_name)
    if verb == "modify":
        i = skip(1, "column")
        if i >= len(tokens):
            return None
        type_name, _ = _column_definition(tokens[i + 1:])
        return DdlAction("modify", _unquote(tokens[i]), type_name=type_name)
    if verb == "alter":
        i = skip(1, "column")
        if i + 1 < len(low):
            j = skip(i + 1, "set", "data")
            if j < len(low) and low[j] == "type":
                type_name, _ = _column_definition(tokens[j + 1:])
                return DdlAction("modify", _unquote(tokens[i]), type_name=type_name)
    return None


_QNAME = r"(?:`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\w$#]+)(?:\s*\.\s*(?:`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\w$#]+))*"


def parse_ddl(sql: Optional[str], op: str = "DDL") -> list[DdlAction]:
    """The column-level effects of one DDL statement; ``[]`` when it changes no column (index, comment, ...)."""
    if op == "TRUNCATE":
        return [DdlAction("truncate")]
    text = re.sub(r"/\*.*?\*/", " ", sql or "", flags=re.S).strip().rstrip(";").strip()
    if re.match(r"truncate\b", text, re.I) or re.match(r"drop\s+table\b", text, re.I):
        return [DdlAction("truncate")]
    m = re.match(rf"alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?{_QNAME}\s+(.*)$", text, re.I | re.S)
    if not m:
        return []
    return [a for a in (_spec(s) for s in _split_top(m.group(1))) if a is not None]


# ---------------------------------------------------------------------------------------------------------------
# Schema evolution (pure, on small collected aggregates)


@dataclass
class ColumnDecl:
    name: str
    type_name: Optional[str] = None
    jdbc_type: Optional[int] = None

    def as_dict(self) -> dict:
        return {"name": self.name, "type_name": self.type_name, "jdbc_type": self.jdbc_type}


@dataclass(frozen=True)
class DdlEvent:
    order: OrderKey
    op: str
    ddl: Optional[str]
    event_time_ms: Optional[int]
    hash: str
    actions: tuple[DdlAction, ...]

    def history_entry(self) -> dict:
        rank, seq, src, part, off, idx = self.order
        return {"op": self.op, "ddl": self.ddl, "event_time_ms": self.event_time_ms,
                "sequence": [str(s) for s in seq], "rank": rank,
                "position": {"source": src, "partition": part, "offset": off, "index": idx},
                "hash": self.hash,
                "applied": [a.__dict__ for a in self.actions] if self.actions else "ignored"}


def _find(cols: list[ColumnDecl], name: str) -> Optional[int]:
    for i, c in enumerate(cols):
        if c.name == name:
            return i
    lowered = name.lower()
    for i, c in enumerate(cols):
        if c.name.lower() == lowered:
            return i
    return None


def evolve_columns(base: Sequence[ColumnDecl], lists: Iterable[tuple[OrderKey, OrderKey, Sequence[ColumnDecl]]],
                   ddls: Iterable[DdlEvent]) -> list[ColumnDecl]:
    """The table's columns after the run. ``lists`` are the distinct column lists the events declared, with the
    first and last order key each was seen at: a column appears (in list order) at the first sighting, takes
    the type of the latest declaration, and DDL adds/drops/renames/retypes at its own position. Ordering columns
    by first sighting makes ``--base`` + today give the same column order as merging everything at once."""
    cols = [ColumnDecl(c.name, c.type_name, c.jdbc_type) for c in base]
    steps: list[tuple[OrderKey, int, Any]] = []
    # At one order key the DDL goes first: a DDL event's own column list (Canal mysqlType, CloudCanal
    # tableChanges) already describes the table after the statement.
    for d in ddls:
        steps.append((d.order, 0, ("ddl", d.actions)))
    for first, last, decl in lists:
        steps.append((first, 1, ("appear", decl)))
        steps.append((last, 2, ("declare", decl)))
    steps.sort(key=lambda s: (s[0], s[1]))
    for _, _, (what, payload) in steps:
        if what in ("appear", "declare"):
            for c in payload:
                i = _find(cols, c.name)
                if i is None:
                    cols.append(ColumnDecl(c.name, c.type_name, c.jdbc_type))
                elif what == "declare" and (c.type_name or c.jdbc_type is not None):
                    cols[i] = ColumnDecl(cols[i].name, c.type_name, c.jdbc_type)
            continue
        for a in payload:
            i = _find(cols, a.column) if a.column else None
            if a.kind == "add" and i is None:
                cols.append(ColumnDecl(a.column, a.type_name))
            elif a.kind == "drop" and i is not None:
                cols.pop(i)
            elif a.kind == "rename" and i is not None and _find(cols, a.new_name) is not None:
                cols.pop(i)  # the new name is already known (declared earlier): keep that one
            elif a.kind == "rename" and i is not None:
                cols[i] = ColumnDecl(a.new_name, a.type_name or cols[i].type_name,
                                     None if a.type_name else cols[i].jdbc_type)
            elif a.kind == "modify" and i is not None and a.type_name:
                cols[i] = ColumnDecl(cols[i].name, a.type_name, None)
    return cols


# ---------------------------------------------------------------------------------------------------------------
# Spark transforms: events -> keyed work rows


def _empty_image() -> SparkColumn:
    return F.create_map().cast(IMAGE_TYPE)


def _image_hash(image: SparkColumn) -> SparkColumn:
    """Identity of a row without primary key: its non-NULL (column, value) pairs, sorted."""
    entries = F.filter(F.map_entries(image), lambda e: e["value"].isNotNull())
    return F.sha2(F.to_json(F.array_sort(entries)), 256)


def event_hash() -> SparkColumn:
    """Content + sequence identity of an event (not its position): equal for re-sent copies."""
    return F.sha2(F.to_json(F.struct(
        F.col("op"), F.col("table_name"),
        F.array_sort(F.map_entries("before")).alias("b"), F.array_sort(F.map_entries("after")).alias("a"),
        F.col("sequence"), F.col("event_time_ms"), F.col("ddl"))), 256)


def rank_column() -> SparkColumn:
    return F.when((F.col("op") == "SNAPSHOT") & (F.size(F.coalesce("sequence", F.array())) == 0), 0).otherwise(1)


WORK_COLUMNS = ["table_name", "_key", "_base", "_role_order", "role", "op", "rank", "sequence", "pos_source",
                "pos_partition", "pos_offset", "pos_index", "event_time_ms", "format", "hash", "before", "after",
                "deleted", "_dup", "unset", "doc_replace"]
SORT_COLUMNS = ["table_name", "_key", "_base", "rank", "sequence", "pos_source", "pos_partition", "pos_offset",
                "pos_index", "_role_order"]


def prepare_events(events: DataFrame) -> DataFrame:
    """Data events -> one work row per (table, key) they touch, with the role each plays for that key."""
    b = F.coalesce(F.col("before"), _empty_image())
    a = F.coalesce(F.col("after"), _empty_image())
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    pk_eff = (F.when(F.size(pk) > 0, pk)
              .when(F.map_contains_key(a, ROW_ID) | F.map_contains_key(b, ROW_ID), F.array(F.lit(ROW_ID)))
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
    mongo = F.from_json(F.col("vendor"), "struct<unset:map<string,string>,recordType:string>")
    is_mongo = F.col("format") == "drs-mongo"
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
                F.when(is_mongo, F.map_keys(mongo["unset"])).alias("unset"),
                F.coalesce(is_mongo & (mongo["recordType"] == "replace"), F.lit(False)).alias("doc_replace"),
            ))


def prepare_base(canonical_state: DataFrame) -> DataFrame:
    """Rows (and tombstones) of a ``--base`` state as work rows that sort first in their key group."""
    return canonical_state.select(
        "table_name", "_key", F.lit(0).alias("_base"), F.lit(0).alias("_role_order"), F.lit("base").alias("role"),
        "op", "rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms",
        "format", "hash", F.lit(None).cast(IMAGE_TYPE).alias("before"), F.col("image").alias("after"), "deleted",
        "_dup", F.lit(None).cast("array<string>").alias("unset"), F.lit(False).alias("doc_replace"))


def column_lists(events: DataFrame) -> DataFrame:
    """Small aggregate: per table, each distinct declared column list with its first and last order key."""
    order = F.struct(rank_column().alias("rank"), F.coalesce("sequence", F.array().cast("array<decimal(38,0)>"))
                     .alias("sequence"), "pos_source", "pos_partition", "pos_offset", "pos_index")
    pk = F.coalesce(F.col("primary_key"), F.array().cast("array<string>"))
    return (events.filter(F.size(F.coalesce("columns", F.array())) > 0)
            .groupBy("table_name", F.col("columns.name").alias("names"), F.col("columns.type_name").alias("types"),
                     F.col("columns.jdbc_type").alias("jdbc"), pk.alias("pk"))
            .agg(F.min(order).alias("first"), F.max(order).alias("last")))


def schema_events(events: DataFrame) -> DataFrame:
    """DDL / TRUNCATE events of named tables, deduplicated by content + sequence (first position wins)."""
    ddl = (events.filter(F.col("op").isin(*SCHEMA_OPS) & F.col("table_name").isNotNull())
           .withColumn("hash", event_hash()).withColumn("rank", F.lit(1)))
    first = F.min(F.struct("rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index",
                           "event_time_ms", "op", "ddl"))
    return ddl.groupBy("table_name", "hash").agg(first.alias("e")).select("table_name", "hash", "e.*")


# ---------------------------------------------------------------------------------------------------------------
# The per-key apply function (mapInArrow over partitions sorted by SORT_COLUMNS)

CANONICAL_ARROW = pa.schema([
    ("kind", pa.string()),  # "state" (row or tombstone) | "version" (history: a row version or a delete marker)
    ("table_name", pa.string()),
    ("_key", pa.list_(pa.string())),
    ("_dup", pa.int32()),  # occurrence number among identical rows of a table without primary key
    ("image", pa.map_(pa.string(), pa.string())),
    ("deleted", pa.bool_()),
    ("op", pa.string()),
    ("rank", pa.int32()),
    ("sequence", pa.list_(pa.decimal128(38, 0))),
    ("pos_source", pa.string()),
    ("pos_partition", pa.int32()),
    ("pos_offset", pa.int64()),
    ("pos_index", pa.int32()),
    ("event_time_ms", pa.int64()),
    ("format", pa.string()),
    ("hash", pa.string()),
])
CANONICAL_SPARK = from_arrow_schema(CANONICAL_ARROW)
_META = ["op", "rank", "sequence", "pos_source", "pos_partition", "pos_offset", "pos_index", "event_time_ms",
         "format", "hash"]


class _Output:
    def __init__(self, limit: int = 8192):
        self.rows: list[tuple] = []
        self.limit = limit

    def add(self, kind: str, table: str, key: list, dup: int, image: Optional[dict], deleted: bool,
            meta: tuple) -> None:
        self.rows.append((kind, table, key, dup, None if image is None else list(image.items()), deleted) + meta)

    @property
    def full(self) -> bool:
        return len(self.rows) >= self.limit

    def flush(self) -> pa.RecordBatch:
        columns = list(zip(*self.rows)) if self.rows else [[] for _ in CANONICAL_ARROW]
        batch = pa.RecordBatch.from_arrays(
            [pa.array(list(col), type=f.type) for col, f in zip(columns, CANONICAL_ARROW)], schema=CANONICAL_ARROW)
        self.rows = []
        return batch


def _rename(row: dict, old: str, new: str) -> None:
    if old not in row:
        match = [k for k in row if k.lower() == old.lower()]
        if not match:
            return
        old = match[0]
    row[new] = row.pop(old)


def _drop(row: dict, name: str) -> None:
    if name in row:
        del row[name]
        return
    for k in [k for k in row if k.lower() == name.lower()]:
        del row[k]


@dataclass
class _Group:
    """State of one (table, key) while its sorted events stream by."""

    table: str
    key: list
    ddls: Sequence[DdlEvent]
    history: bool
    out: _Output
    rowhash: bool = False
    row: Optional[dict] = None  # primary-key tables: the row, None = absent
    count: int = 0  # tables without primary key: how many identical rows
    meta: Optional[tuple] = None  # last applied data event: _META values
    base_order: Optional[OrderKey] = None
    base_hash: Optional[str] = None
    seen: set = field(default_factory=set)
    di: int = 0

    def __post_init__(self) -> None:
        self.rowhash = bool(self.key) and self.key[0] == ROW_HASH

    # -- DDL / TRUNCATE at their position ------------------------------------------------------------------
    def _ddls_until(self, order: Optional[OrderKey]) -> None:
        while self.di < len(self.ddls) and (order is None or self.ddls[self.di].order < order):
            d = self.ddls[self.di]
            self.di += 1
            if self.base_order is not None and d.order <= self.base_order:
                continue  # already reflected in the base row
            for a in d.actions:
                self._ddl(a, d)

    def _ddl(self, a: DdlAction, d: DdlEvent) -> None:
        exists = self.count > 0 if self.rowhash else self.row is not None
        if not exists:
            return
        if a.kind == "truncate":
            rank, seq, src, part, off, idx = d.order
            meta = ("TRUNCATE", rank, list(seq), src, part, off, idx, d.event_time_ms, None, d.hash)
            if self.history:
                for dup in range(self.count if self.rowhash else 1):
                    self.out.add("version", self.table, self.key, dup, None, True, meta)
            self.row, self.count = None, 0
            return
        row = self.row
        if a.kind == "add":
            if _find([ColumnDecl(k) for k in row], a.column) is None:
                row[a.column] = a.default
        elif a.kind == "drop":
            _drop(row, a.column)
        elif a.kind == "rename" and a.new_name:
            _rename(row, a.column, a.new_name)

    # -- events -------------------------------------------------------------------------------------------
    def feed(self, r: dict) -> None:
        order = order_key(r["rank"], r["sequence"], r["pos_source"], r["pos_partition"], r["pos_offset"],
                          r["pos_index"])
        meta = tuple(r[m] for m in _META)
        if r["role"] == "base":
            self._ddls_until(order)
            self.base_order = order if self.base_order is None else max(self.base_order, order)
            self.base_hash = r["hash"]
            self.meta = meta
            if not r["deleted"]:
                if self.rowhash:
                    self.count += 1
                self.row = dict(r["after"] or ())
            return
        if self.base_order is not None and order <= self.base_order:
            return  # ordered before the base state: already part of it
        h = r["hash"]
        if (h, r["role"]) in self.seen or h == self.base_hash:
            return  # a re-sent copy: content + sequence identical
        # With the role: both halves of an identity-preserving update of a key-less row land in this group.
        self.seen.add((h, r["role"]))
        self._ddls_until(order)
        role = r["role"]
        before = dict(r["before"] or ())
        after = dict(r["after"] or ())
        if self.rowhash:
            self._apply_rowhash(role, before, after, meta)
        else:
            self._apply_keyed(role, r["op"], before, after, r["unset"], r["doc_replace"], meta)
        self.meta = meta

    def _version(self, dup: int, image: Optional[dict], meta: tuple) -> None:
        if self.history:
            self.out.add("version", self.table, self.key, dup, None if image is None else dict(image),
                         image is None, meta)

    def _apply_keyed(self, role: str, op: str, before: dict, after: dict, unset: Optional[list],
                     doc_replace: bool, meta: tuple) -> None:
        old = self.row
        if role == "del":
            self.row = None
            if old is not None:
                self._version(0, None, meta)
            return
        if role == "put" or doc_replace:
            new = after
        elif role == "move_in" or old is None:
            new = {**before, **after}  # key change, or update of an unknown key: upsert what the event tells
        else:
            new = {**old, **after}  # partial image: absent columns keep their value, NULL sets NULL
        for f in unset or ():
            new.pop(f, None)  # MongoDB $unset removes the field
        self.row = new
        if new != old:
            self._version(0, new, meta)

    def _apply_rowhash(self, role: str, before: dict, after: dict, meta: tuple) -> None:
        if role == "del":
            if self.count > 0:
                self.count -= 1
                self._version(self.count, None, meta)
                if self.count == 0:
                    self.row = None
            return
        image = after if role == "put" else {**before, **after}
        if self.row is None:
            self.row = image
        self._version(self.count, image, meta)
        self.count += 1

    def finish(self) -> None:
        self._ddls_until(None)
        meta = self.meta
        if self.rowhash:
            if self.count == 0:
                self.out.add("state", self.table, self.key, 0, None, True, meta)
            for dup in range(self.count):
                self.out.add("state", self.table, self.key, dup, self.row, False, meta)
        else:
            self.out.add("state", self.table, self.key, 0, self.row, self.row is None, meta)


def make_applier(ddls_by_table: dict[str, list[DdlEvent]], history: bool
                 ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function: rows arrive sorted by SORT_COLUMNS, so one key group is contiguous (possibly
    across batches) and memory holds one group at a time."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out = _Output()
        group: Optional[_Group] = None
        current = None
        for batch in batches:
            cols = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
            names = list(cols)
            for i in range(batch.num_rows):
                r = {n: cols[n][i] for n in names}
                gk = (r["table_name"], tuple(r["_key"] or ()))
                if gk != current:
                    if group is not None:
                        group.finish()
                    current = gk
                    group = _Group(r["table_name"], list(r["_key"] or ()), ddls_by_table.get(r["table_name"], ()),
                                   history, out)
                group.feed(r)
                if out.full:
                    yield out.flush()
        if group is not None:
            group.finish()
        if out.rows:
            yield out.flush()

    return apply


def apply_events(work: DataFrame, partitions: int, ddls_by_table: dict[str, list[DdlEvent]],
                 history: bool) -> DataFrame:
    """Shuffle by (table, key), sort each partition by key then order key, apply per key: the canonical
    state (rows, tombstones) and, with ``history``, row versions."""
    return (work.select(*WORK_COLUMNS)
            .repartition(partitions, "table_name", "_key")
            .sortWithinPartitions(*SORT_COLUMNS)
            .mapInArrow(make_applier(ddls_by_table, history), CANONICAL_SPARK))


# ---------------------------------------------------------------------------------------------------------------
# History (type 2)


def history_versions(versions: DataFrame) -> DataFrame:
    """Version starts (+ delete markers) -> SCD type 2 rows: valid from this version's sequence/event time to
    the next version's (or delete's); the open one is current. Delete markers only close versions."""
    from pyspark.sql.window import Window

    w = Window.partitionBy("table_name", "_key", "_dup").orderBy(*ORDER_FIELDS)
    return (versions
            .withColumn("_to_sequence", F.lead("sequence").over(w))
            .withColumn("_to_event_time_ms", F.lead("event_time_ms").over(w))
            .withColumn("_to_rank", F.lead("rank").over(w))
            .filter(~F.col("deleted")))
