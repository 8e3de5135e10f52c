"""The per-key ordered apply: a ``mapInArrow`` function over partitions sorted by key then order key, for the
keys whose result depends on the whole sequence of their events (DDL at a position, tables without primary key,
history versions, ...). One key group is in memory at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from .canonical import CANONICAL_ARROW, CANONICAL_SPARK
from .ddl_parse import DdlAction
from .keys import ROW_HASH, WORK_COLUMNS
from .latest import DECIDED, DECIDED_IMAGE, decide
from .order import OrderKey, order_key
from .schema_evolution import ColumnDecl, DdlEvent, find_column
from ..gc_pause import paused_gc

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
        if a.kind == "truncate":
            self._truncate(d, exists)
            return
        if not exists:
            return
        row = self.row
        if a.kind == "add":
            if find_column([ColumnDecl(k) for k in row], a.column) is None:
                row[a.column] = a.default
        elif a.kind == "drop":
            _drop(row, a.column)
        elif a.kind == "rename" and a.new_name:
            _rename(row, a.column, a.new_name)

    def _truncate(self, d: DdlEvent, exists: bool) -> None:
        if self.meta is None:
            return  # no row and no tombstone of this key before the truncate: nothing to record
        rank, seq, src, part, off, idx = d.order
        meta = ("TRUNCATE", rank, list(seq), src, part, off, idx, d.event_time_ms, None, d.hash)
        if exists and self.history:
            for dup in range(self.count if self.rowhash else 1):
                self.out.add("version", self.table, self.key, dup, None, True, meta)
        self.row, self.count = None, 0
        # The truncate is the key's last change: its tombstone records the truncate's order, so that in a later
        # --base run an event ordered before it (a full-sync row re-sent elsewhere, a late change) is already
        # part of the base, as in one merge of everything. With the last data event's order instead, a
        # sequence-less full-sync row of a key-less table re-sent the next day came back after the truncate.
        self.meta = meta

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
            self._apply_keyed(role, r["op"], before, after, r["removed_columns"], r["replaces_row"], meta)
        self.meta = meta

    def _version(self, dup: int, image: Optional[dict], meta: tuple) -> None:
        if self.history:
            self.out.add("version", self.table, self.key, dup, None if image is None else dict(image),
                         image is None, meta)

    def _apply_keyed(self, role: str, op: str, before: dict, after: dict, removed: Optional[list],
                     replaces_row: bool, meta: tuple) -> None:
        old = self.row
        if role == "del":
            self.row = None
            if old is not None:
                self._version(0, None, meta)
            return
        if role == "put" or replaces_row:
            new = after
        elif role == "move_in" or old is None:
            new = {**before, **after}  # key change, or update of an unknown key: upsert what the event tells
        else:
            new = {**old, **after}  # partial image: absent columns keep their value, NULL sets NULL
        for f in removed or ():
            new.pop(f, None)  # a removed column (a document's unset field) is absent afterwards, not NULL
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
            decided = batch.column(DECIDED)
            if pc.any(decided).as_py():
                yield decided_state(batch.filter(decided))
                batch = batch.filter(pc.invert(decided))
            with paused_gc():  # one batch of rows as dicts (see gc_pause)
                cols = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
                names = list(cols)
                for i in range(batch.num_rows):
                    r = {n: cols[n][i] for n in names}
                    gk = (r["table_name"], tuple(r["_key"] or ()))
                    if gk != current:
                        if group is not None:
                            group.finish()
                        current = gk
                        group = _Group(r["table_name"], list(r["_key"] or ()),
                                       ddls_by_table.get(r["table_name"], ()), history, out)
                    group.feed(r)
                    if out.full:
                        yield out.flush()
        if group is not None:
            group.finish()
        if out.rows:
            yield out.flush()

    return apply


def decided_state(rows: pa.RecordBatch) -> pa.RecordBatch:
    """Rows of keys decided set-wise (``latest.decide``) -> their state rows, column by column."""
    n = rows.num_rows
    image = rows.column(DECIDED_IMAGE)
    columns = {"kind": pa.array(["state"] * n, pa.string()), "image": image, "deleted": image.is_null()}
    return pa.RecordBatch.from_arrays(
        [columns[f.name] if f.name in columns else rows.column(f.name).cast(f.type) for f in CANONICAL_ARROW],
        schema=CANONICAL_ARROW)


def apply_events(work: DataFrame, ddls_by_table: dict[str, list[DdlEvent]], history: bool) -> DataFrame:
    """Shuffle work rows by (table, key), sort each partition by key then order key once, decide what one event
    decides with window functions (``latest``), and apply the remaining keys event by event: the canonical state
    (rows, tombstones) and, with ``history``, row versions."""
    ddl_orders = {table: max(d.order for d in ds if d.actions)
                  for table, ds in ddls_by_table.items() if any(d.actions for d in ds)}
    rows = work.select(*WORK_COLUMNS)
    # No partition count: adaptive execution may then coalesce the shuffle's partitions to what the rows need
    # (``spark.sql.shuffle.partitions`` at most). Archives that repeat their events shrink to a fraction before it
    # (``copies``), and each task of the windows and the Python apply has a fixed cost (about 2 s less at 1M
    # events, 62k distinct).
    return (decide(rows.repartition("table_name", "_key"), ddl_orders, history)
            .mapInArrow(make_applier(ddls_by_table, history), CANONICAL_SPARK))
