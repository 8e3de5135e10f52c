"""Randomized CDC workloads from a simulated source database, with the source's true final state.

``generate(seed)`` runs random operations over dict tables (composite keys, NULLs, key changes, partial
updates, deletes and re-inserts, a table without primary key holding identical rows, DDL that adds / renames /
drops a column, a truncate) and records the canonical events a CDC tool would emit. Delivery is messy on
purpose: events are spread over several Kafka-like partitions regardless of key, some are re-sent later (also
on a later day), a full sync with unknown position starts it, and one table's full sync is interleaved with
changes (sequence known). ``write_replay`` writes events the way `cdc-replay replay` lays them out.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Optional

from cdc_codecs.event import Column, Event, Op, Position

DB = "shop"
BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z

ORDERS_COLUMNS = [
    Column("tenant", "int", 4), Column("order_id", "bigint unsigned", -5), Column("amount", "decimal(12,2)", 3),
    Column("note", "varchar(50)", 12), Column("qty", "int", 4), Column("big", "bigint unsigned", -5),
    Column("payload", "blob", 2004), Column("created", "datetime(6)", 93), Column("day", "date", 91),
]
ITEMS_COLUMNS = [Column("sku", "varchar(20)", 12), Column("price", "decimal(10,4)", 3),
                 Column("name", "varchar(40)", 12), Column("stock", "int", 4)]
LOG_COLUMNS = [Column("level", "varchar(5)", 12), Column("msg", "varchar(40)", 12), Column("n", "int", 4)]


@dataclass
class Table:
    name: str
    columns: list[Column]
    primary_key: tuple[str, ...]
    rows: dict = field(default_factory=dict)  # key tuple -> row dict (primary key tables)
    bag: list = field(default_factory=list)  # rows of a table without primary key (duplicates allowed)

    @property
    def qualified(self) -> str:
        return f"{DB}.{self.name}"

    def key(self, row: dict) -> tuple:
        return tuple(row[k] for k in self.primary_key)


@dataclass
class Workload:
    seed: int
    days: list[list[Event]]  # events as delivered, per day (each day one replay directory)
    expected: dict[str, list[dict]]  # table -> final rows (canonical text), sorted
    columns: dict[str, list[str]]  # table -> final column names
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def events(self) -> list[Event]:
        return [e for d in self.days for e in d]


# The schema changes the workload makes (a format that carries no DDL or no truncate is tested without them).
DDL_KINDS = ("add", "rename", "truncate", "drop")


class _Source:
    def __init__(self, rng: random.Random, n_days: int, n_changes: int, ddl: tuple[str, ...] = DDL_KINDS):
        self.rng = rng
        self.ddl_kinds = ddl
        self.binlog, self.pos = 9, 990  # composite sequence (file, pos): crosses 9->10 and 999->1000 digits
        self.n_changes = n_changes
        self.n_days = n_days
        self.emitted: list[Event] = []  # in source (sequence) order
        self.tables = {
            "orders": Table("orders", list(ORDERS_COLUMNS), ("tenant", "order_id")),
            "items": Table("items", list(ITEMS_COLUMNS), ("sku",)),
            "log": Table("log", list(LOG_COLUMNS), ()),
        }
        self.next_order = 1
        self.deleted: list[tuple] = []

    # -- values ----------------------------------------------------------------------------------------
    def value(self, col: Column) -> Optional[str]:
        r = self.rng
        if col.name in ("note", "name", "title", "msg", "extra") and r.random() < 0.2:
            return None
        t = col.type_name
        if t == "int":
            return str(r.choice([0, -1, 2147483647, -2147483648, r.randint(-1000, 1000)]))
        if t == "bigint unsigned":
            return str(r.choice([18446744073709551615, 2 ** 63, r.randint(0, 10 ** 6)]))
        if t == "decimal(12,2)":
            return f"{r.randint(-10 ** 9, 10 ** 10) / 100:.2f}"
        if t == "decimal(10,4)":  # sources may drop trailing zeros ("12.3"): same value
            text = f"{r.randint(0, 10 ** 9) // 10000}.{r.randint(0, 9999):04d}"
            return text.rstrip("0").rstrip(".") if r.random() < 0.3 else text
        if t == "blob":
            return base64.b64encode(bytes(r.randrange(256) for _ in range(r.randint(0, 6)))).decode()
        if t == "datetime(6)":
            return (f"2024-0{r.randint(1, 9)}-1{r.randint(0, 9)} 1{r.randint(0, 9)}:0{r.randint(0, 9)}:59."
                    f"{r.randint(0, 999999):06d}")
        if t == "date":
            return f"20{r.randint(10, 29)}-0{r.randint(1, 9)}-2{r.randint(0, 8)}"
        if col.name == "level":
            return r.choice(["INFO", "WARN"])
        if col.name == "msg":
            return r.choice(["a", "b", "", "héllo"])
        return r.choice(["x", "", "ünïcode \"q\"", "y" * r.randint(1, 30)])

    def full_row(self, t: Table, key: dict) -> dict:
        row = {c.name: self.value(c) for c in t.columns}
        row.update(key)
        return row

    # -- emitting --------------------------------------------------------------------------------------
    def next_sequence(self) -> tuple[Decimal, ...]:
        self.pos += self.rng.randint(1, 7)
        if self.pos > 1010 and self.rng.random() < 0.05:
            self.binlog, self.pos = self.binlog + 1, 4
        return (Decimal(self.binlog), Decimal(self.pos))

    def emit(self, t: Table, op: Op, before=None, after=None, sequence=None, ddl=None) -> None:
        seq = self.next_sequence() if sequence is None else sequence
        n = len(self.emitted)
        self.emitted.append(Event(
            format="canonical", op=op, database=DB, table=t.name, position=Position("unassigned"),
            before=None if before is None else dict(before), after=None if after is None else dict(after),
            columns=tuple(t.columns) if op.is_data or op is Op.DDL else (), primary_key=t.primary_key,
            event_time_ms=BASE_MS + n * 1000, sequence=seq, ddl=ddl))

    # -- operations ------------------------------------------------------------------------------------
    def snapshot(self) -> None:
        """Full sync before the changes, position unknown (no sequence); its timestamps are *later* than the
        changes' (a snapshot row is read after they were committed elsewhere): merge must not trust them."""
        orders, log = self.tables["orders"], self.tables["log"]
        for _ in range(self.rng.randint(5, 12)):
            row = self.full_row(orders, {"tenant": str(self.rng.randint(1, 3)), "order_id": str(self.next_order)})
            self.next_order += 1
            orders.rows[orders.key(row)] = row
        for _ in range(self.rng.randint(3, 6)):
            row = self.full_row(log, {})
            log.bag.append(row)
            if self.rng.random() < 0.5:
                log.bag.append(dict(row))  # identical rows in a table without primary key
        for t in (orders, log):
            rows = list(t.rows.values()) if t.primary_key else list(t.bag)
            for row in rows:
                self.emit(t, Op.SNAPSHOT, after=row, sequence=())
        late = BASE_MS + 10 ** 9
        self.emitted = [e.with_(event_time_ms=late) if e.op is Op.SNAPSHOT else e for e in self.emitted]

    def items_snapshot_row(self) -> None:
        """Items' full sync runs *during* the changes with a known sequence (DRS INIT-like)."""
        items = self.tables["items"]
        unsynced = [k for k in items.rows if k not in self.items_synced]
        if unsynced:
            k = self.rng.choice(unsynced)
            self.items_synced.add(k)
            self.emit(items, Op.SNAPSHOT, after=items.rows[k])

    def change(self) -> None:
        r = self.rng
        t = self.tables[r.choice(["orders", "orders", "items", "log"])]
        if not t.primary_key:
            return self.change_bag(t)
        roll = r.random()
        if not t.rows or roll < 0.25:
            if t.name == "orders" and self.deleted and r.random() < 0.3:
                key = dict(zip(t.primary_key, self.deleted.pop()))  # re-insert of a deleted key
                if tuple(key.values()) in t.rows:
                    return
            elif t.name == "orders":
                key = {"tenant": str(r.randint(1, 3)), "order_id": str(self.next_order)}
                self.next_order += 1
            else:
                key = {"sku": f"sku-{r.randint(1, 40)}"}
                if (key["sku"],) in t.rows:
                    return
            row = self.full_row(t, key)
            t.rows[t.key(row)] = row
            self.emit(t, Op.INSERT, after=row)
            return
        k = r.choice(sorted(t.rows))
        old = t.rows[k]
        if roll < 0.35:
            del t.rows[k]
            if t.name == "orders":
                self.deleted.append(k)
            before = old if r.random() < 0.5 else {c: old[c] for c in t.primary_key}  # full or key-only image
            self.emit(t, Op.DELETE, before=before)
            return
        if roll < 0.42 and t.name == "orders":
            new = dict(old, order_id=str(self.next_order), qty=self.value(Column("qty", "int")))
            self.next_order += 1
            del t.rows[k]
            t.rows[t.key(new)] = new
            changed = {c: old[c] for c in new if new[c] != old[c]}
            before = old if r.random() < 0.5 else changed  # full before, or Canal-like `old`
            self.emit(t, Op.UPDATE, before=before, after=new)
            return
        cols = [c.name for c in t.columns if c.name not in t.primary_key]
        changed_cols = r.sample(cols, r.randint(1, min(3, len(cols))))
        new = dict(old)
        for c in changed_cols:
            col = next(x for x in t.columns if x.name == c)
            new[c] = None if r.random() < 0.25 else self.value(col)
        t.rows[k] = new
        keycols = {c: old[c] for c in t.primary_key}
        style = r.random()
        if style < 0.35:
            self.emit(t, Op.UPDATE, before=old, after=new)  # full images
        elif style < 0.7:
            self.emit(t, Op.UPDATE, before={c: old[c] for c in changed_cols}, after=new)  # Canal: partial old
        else:  # partial after (SharePlex, DTS EmptyObject, Mongo $set): key + changed columns only
            self.emit(t, Op.UPDATE, before={**keycols, **{c: old[c] for c in changed_cols}},
                      after={**keycols, **{c: new[c] for c in changed_cols}})

    def change_bag(self, t: Table) -> None:
        r = self.rng
        roll = r.random()
        if not t.bag or roll < 0.45:
            row = r.choice(t.bag) if t.bag and r.random() < 0.3 else self.full_row(t, {})
            t.bag.append(dict(row))
            self.emit(t, Op.INSERT, after=row)
        elif roll < 0.75:
            row = t.bag.pop(r.randrange(len(t.bag)))
            self.emit(t, Op.DELETE, before=row)
        else:
            i = r.randrange(len(t.bag))
            old = t.bag[i]
            new = dict(old, n=self.value(Column("n", "int")))
            t.bag[i] = new
            self.emit(t, Op.UPDATE, before=old, after=new)

    def ddl(self, kind: str) -> None:
        if kind == "add":
            t = self.tables["orders"]
            t.columns.append(Column("extra", "varchar(10)", 12))
            for row in t.rows.values():
                row["extra"] = None  # existing rows: NULL
            self.emit(t, Op.DDL, ddl="ALTER TABLE `orders` ADD COLUMN `extra` varchar(10) NULL AFTER `day`")
        elif kind == "rename":
            t = self.tables["items"]
            t.columns = [Column("title", c.type_name, c.jdbc_type) if c.name == "name" else c for c in t.columns]
            for k, row in t.rows.items():
                t.rows[k] = {("title" if c == "name" else c): v for c, v in row.items()}
            self.emit(t, Op.DDL, ddl="ALTER TABLE items RENAME COLUMN name TO title")
        elif kind == "drop":
            t = self.tables["orders"]
            t.columns = [c for c in t.columns if c.name != "note"]
            for row in t.rows.values():
                row.pop("note", None)
            self.emit(t, Op.DDL, ddl="alter table shop.orders drop column note")
        elif kind == "truncate":
            t = self.tables["log"]
            t.bag.clear()
            self.emit(t, Op.TRUNCATE, ddl="TRUNCATE TABLE log")

    def run(self) -> None:
        self.items_synced: set = set()
        self.snapshot()
        items = self.tables["items"]
        for i in range(8):  # rows that exist before items' full sync starts (no insert in the archive)
            row = self.full_row(items, {"sku": f"sku-{100 + i}"})
            items.rows[items.key(row)] = row
        ddl_at = {int(self.n_changes * f): k for f, k in ((0.3, "add"), (0.5, "rename"), (0.65, "truncate"),
                                                           (0.8, "drop")) if k in self.ddl_kinds}
        for i in range(self.n_changes):
            if i in ddl_at:
                self.ddl(ddl_at[i])
            if self.rng.random() < 0.15:
                self.items_snapshot_row()
            else:
                self.change()
        while len(self.items_synced) < len(items.rows):
            self.items_snapshot_row()  # finish items' full sync


def _deliver(rng: random.Random, emitted: list[Event], n_days: int, partitions: int, dup_rate: float
             ) -> list[list[Event]]:
    """Spread events over days (by source order) and partitions (ignoring keys), add late duplicates, and give
    every copy its archive position."""
    per_day: list[list[Event]] = [[] for _ in range(n_days)]
    changes = [e for e in emitted if e.sequence]
    snapshots = [e for e in emitted if not e.sequence]
    per_day[0].extend(snapshots)
    bounds = sorted(rng.sample(range(1, len(changes)), n_days - 1)) if n_days > 1 else []
    starts = [0] + bounds + [len(changes)]
    for d in range(n_days):
        per_day[d].extend(changes[starts[d]:starts[d + 1]])
    for d in range(n_days):
        for e in list(per_day[d]):
            # Copies of a change may be re-sent on the same or a later day. Snapshot rows without sequence are
            # only re-sent from the same file line (an overlapping replay of the same file): an identical row of
            # a table without key and without sequence cannot be told apart from a re-sent one.
            if e.sequence and rng.random() < dup_rate:
                per_day[rng.randrange(d, n_days)].append(e)
    out = []
    for d, events in enumerate(per_day):
        offsets = [0] * partitions
        placed = []
        rng.shuffle(events)  # partitions are not in sequence order either: the merge must sort
        for e in events:
            p = rng.randrange(partitions)
            offsets[p] += 1
            placed.append(e.with_(position=Position(f"cdc.day{d}", p, offsets[p])))
        out.append(placed)
    snapshot_copies = [e for e in out[0] if not e.sequence and rng.random() < dup_rate]
    out[-1].extend(snapshot_copies)  # the very same archive position replayed again
    return out


def generate(seed: int, n_changes: int = 400, n_days: int = 3, partitions: int = 3,
             dup_rate: float = 0.1, ddl: tuple[str, ...] = DDL_KINDS) -> Workload:
    rng = random.Random(seed)
    src = _Source(rng, n_days, n_changes, ddl)
    src.run()
    days = _deliver(rng, src.emitted, n_days, partitions, dup_rate)
    expected, columns = {}, {}
    for t in src.tables.values():
        names = [c.name for c in t.columns]
        rows = list(t.rows.values()) if t.primary_key else t.bag
        expected[t.qualified] = sorted(({c: r.get(c) for c in names} for r in rows),
                                       key=lambda r: [(v is None, v or "") for v in r.values()])
        columns[t.qualified] = names
    counts = {"events": len(src.emitted), "delivered": sum(len(d) for d in days)}
    return Workload(seed, days, expected, columns, counts)


def write_replay(events: list[Event], directory: Path) -> Path:
    """Write events as `cdc-replay replay` does: DIR/events/table_name=<t>/ Parquet (EVENT schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cdc_codecs import records
    from cdc_jobs.schemas import EVENT_ARROW

    by_table: dict[str, list] = {}
    for e in events:
        by_table.setdefault(e.qualified_table or "__HIVE_DEFAULT_PARTITION__", []).append(records.to_record(e))
    for t, recs in by_table.items():
        part = directory / "events" / f"table_name={t}"
        part.mkdir(parents=True, exist_ok=True)
        # Several files per table, so events of one key are spread over files and Spark partitions.
        for i in range(0, len(recs), 97):
            pq.write_table(pa.Table.from_pylist(recs[i:i + 97], schema=EVENT_ARROW), part / f"part-{i:05d}.parquet")
    return directory
