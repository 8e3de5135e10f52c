"""`cdc-replay sample`: a small source database simulated in Python, archived in any format.

Two tables, ``shop.customers`` (key ``id``) and ``shop.order_items`` (composite key ``order_id, line_no``): a full
sync of each, then a day of changes (inserts, updates that set and clear NULLs, deletes, key changes). The files
are what a sync service would have archived; ``--expected`` writes what the source held at the end of the day, so
a replay + merge can be checked row for row.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Callable, Optional

from cdc_codecs import Column, Event, Op, Position, get_codec
from cdc_jobs.io import codec_env

DATABASE = "shop"


@dataclass
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    make_row: Callable[[random.Random, tuple], dict]
    next_key: Callable[[random.Random, "Table"], tuple]
    rows: dict[tuple, dict] = field(default_factory=dict)


def _customer(rng: random.Random, key: tuple) -> dict:
    return {
        "id": str(key[0]),
        "name": rng.choice(["Ana", "Bo", "Chen Wei", "Dara", "Émile", "Farah"]) + f" #{key[0]}",
        "email": None if rng.random() < 0.2 else f"user{key[0]}@example.com",
        "balance": f"{rng.randint(-10_000, 1_000_000) / 100:.2f}",
        "loyalty_points": str(rng.choice([0, 2**63 - 1, 2**64 - 1, rng.randint(0, 10_000)])),
        "created_at": f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                      f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}",
    }


def _order_item(rng: random.Random, key: tuple) -> dict:
    return {
        "order_id": str(key[0]),
        "line_no": str(key[1]),
        "sku": rng.choice(["A-1", "B-22", "C-333", "D-4444"]),
        "qty": str(rng.randint(1, 20)),
        "price": f"{rng.randint(1, 99_999)}.{rng.randint(0, 99):02d}",
        "note": None if rng.random() < 0.5 else rng.choice(["gift", "fragile", "", "rush \"asap\""]),
    }


def _tables() -> list[Table]:
    customers = Table(
        "customers",
        (Column("id", "int", 4), Column("name", "varchar(64)", 12), Column("email", "varchar(128)", 12),
         Column("balance", "decimal(12,2)", 3), Column("loyalty_points", "bigint unsigned", -5),
         Column("created_at", "datetime(6)", 93)),
        ("id",), _customer,
        lambda rng, t: (max((k[0] for k in t.rows), default=0) + 1,),
    )
    items = Table(
        "order_items",
        (Column("order_id", "bigint", -5), Column("line_no", "int", 4), Column("sku", "varchar(16)", 12),
         Column("qty", "int", 4), Column("price", "decimal(10,2)", 3), Column("note", "text", -1)),
        ("order_id", "line_no"), _order_item,
        lambda rng, t: (rng.randint(1000, 1000 + max(10, len(t.rows) // 2)), rng.randint(1, 9)),
    )
    return [customers, items]


@dataclass
class Workload:
    snapshot: list[Event]
    changes: list[Event]
    final: dict[str, list[dict]]


def simulate(seed: int, day: str, rows: int, changes: int) -> Workload:
    rng = random.Random(seed)
    tables = _tables()
    day_ms = int(datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp() * 1000)
    seq = 0

    def event(t: Table, op: Op, before: Optional[dict], after: Optional[dict], at_ms: Optional[int]) -> Event:
        nonlocal seq
        seq += 1
        return Event(format="canonical", op=op, database=DATABASE, table=t.name,
                     position=Position(source="sample", offset=seq), before=before, after=after,
                     columns=t.columns, primary_key=t.key, event_time_ms=at_ms,
                     sequence=(Decimal(seq),), transaction_id=None)

    snapshot: list[Event] = []
    for t in tables:
        while len(t.rows) < rows:
            key = t.next_key(rng, t)
            if key not in t.rows:
                t.rows[key] = t.make_row(rng, key)
        for key in sorted(t.rows):
            snapshot.append(event(t, Op.SNAPSHOT, None, dict(t.rows[key]), day_ms - 3_600_000))

    out: list[Event] = []
    times = sorted(rng.randrange(day_ms, day_ms + 86_400_000) for _ in range(changes))
    for at in times:
        t = rng.choice(tables)
        roll = rng.random()
        if roll < 0.3 or not t.rows:
            key = t.next_key(rng, t)
            if key in t.rows:
                continue
            t.rows[key] = t.make_row(rng, key)
            out.append(event(t, Op.INSERT, None, dict(t.rows[key]), at))
        elif roll < 0.75:
            key = rng.choice(sorted(t.rows))
            before = dict(t.rows[key])
            fresh = t.make_row(rng, key)
            changed = rng.sample([c.name for c in t.columns if c.name not in t.key], k=2)
            after = before | {c: (None if rng.random() < 0.3 else fresh[c]) for c in changed}
            t.rows[key] = after
            out.append(event(t, Op.UPDATE, before, dict(after), at))
        elif roll < 0.9:
            key = rng.choice(sorted(t.rows))
            out.append(event(t, Op.DELETE, t.rows.pop(key), None, at))
        else:  # primary-key change
            key = rng.choice(sorted(t.rows))
            new_key = t.next_key(rng, t)
            if new_key in t.rows:
                continue
            before = t.rows.pop(key)
            after = before | dict(zip(t.key, map(str, new_key)))
            t.rows[new_key] = after
            out.append(event(t, Op.UPDATE, before, dict(after), at))
    final = {f"{DATABASE}.{t.name}": [t.rows[k] for k in sorted(t.rows)] for t in tables}
    return Workload(snapshot, out, final)


def write_archive(events: list[Event], fmt: str, path: Path, schemas: Path | None = None) -> int:
    """Encode events in order into one archive file (JSON lines, or the dump format with keys for binary codecs).
    Avro schemas the codec makes by id (Confluent's wire format) are archived in ``schemas`` (default: ``_schemas``
    beside the file), where replay finds them."""
    import base64

    codec = get_codec(fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "wb") as fh, codec_env.schemas_written_to(schemas or path.parent / codec_env.SCHEMAS_DIR):
        for e in events:
            for m in codec.encode([e]):
                if codec.capabilities.binary:
                    line = {"value": base64.b64encode(m.value).decode()}
                    if m.key is not None:
                        line["key"] = base64.b64encode(m.key).decode()
                    fh.write(json.dumps(line).encode() + b"\n")
                else:
                    fh.write(m.value + b"\n")
                n += 1
    return n


def run(args: argparse.Namespace) -> int:
    w = simulate(args.seed, args.day, args.rows, args.changes)
    out = Path(args.out)
    suffix = ".dump.jsonl" if get_codec(args.format).capabilities.binary else ".jsonl"
    schemas = out / codec_env.SCHEMAS_DIR
    n_full = write_archive(w.snapshot, args.format, out / "full" / f"part-00000{suffix}", schemas)
    n_inc = write_archive(w.changes, args.format, out / "incremental" / args.day / f"part-00000{suffix}", schemas)
    if args.expected:
        Path(args.expected).parent.mkdir(parents=True, exist_ok=True)
        Path(args.expected).write_text(json.dumps(w.final, indent=1, sort_keys=True))
    print(f"sample archive ({args.format}): {n_full} full-sync and {n_inc} change messages for "
          f"{', '.join(w.final)} -> {out}")
    return 0
