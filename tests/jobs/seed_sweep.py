"""Run a randomized test over many seeds at once, outside CI: a seed that fails is a defect found, not noise.

    python tests/jobs/seed_sweep.py merge-formats --format dts-avro --seeds 1000-1199

``merge-canonical`` is ``test_merge``'s randomized workload, merged in one go and day by day (``--history``).
``merge-formats`` is ``test_merge_formats.test_workload_in_vendor_format_merges_day_by_day_to_the_source_state``
for many seeds in one go: each seed's workload gets its own database (``shop_<seed>``), the days of all seeds are
archived together, replayed and merged day by day with ``--base`` (3 replays and 3 merges whatever the number of
seeds), and every seed's tables are compared with its simulated source. ``replay`` is
``test_replay``'s randomized archive, every seed in one archive the same way. ``end-to-end`` is ``test_end_to_end``'s
workload with all seeds in the same two tables, each seed in its own key range (``end_to_end`` says why). Failing
seeds are printed; keep them as fixed cases of the test (``FIXED_SEEDS``); say what a run found in the commit
that keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return out


def merge_formats(fmt: str, seeds: list[int], root: Path) -> list[tuple[int, str]]:
    from cdc_jobs import cli
    from test_merge_formats import archive_day, carried_ddl, in_own_topics
    from workload import generate

    workloads = {s: generate(s, n_changes=250, ddl=carried_ddl(fmt)) for s in seeds}
    n_days = len(next(iter(workloads.values())).days)
    base = None
    for d in range(n_days):
        archive = root / f"archive{d}"
        archive.mkdir()
        for s, w in workloads.items():
            archive_day(in_own_topics(w.days[d], f"shop_{s}"), fmt, archive / f"seed{s}")
        replay, state = root / f"replay{d}", root / f"state{d}"
        assert cli.main(["replay", "--source", str(archive), "--format", fmt, "--out", str(replay)]) == 0
        assert cli.main(["merge", "--replay", str(replay), "--out", str(state)]
                        + (["--base", str(base)] if base else [])) == 0
        base = state
    return compare(workloads, base, "day by day")


def compare(workloads: dict, state: Path, how: str) -> list[tuple[int, str]]:
    """(seed, what differs) for every table of every seed's workload whose merged rows differ from its source."""
    import pyarrow.parquet as pq

    from test_merge import expected_rows

    merged = json.loads((state / "_state.json").read_text())
    failures = []
    for s, w in workloads.items():
        for table, rows in w.expected.items():
            name = table.replace("shop.", f"shop_{s}.", 1)
            if name not in merged["tables"]:
                failures.append((s, f"{how}: {table} missing from the state"))
                continue
            columns = w.columns[table]
            got = sorted((tuple(r[c] for c in columns) for r in pq.read_table(state / name).to_pylist()), key=repr)
            want = expected_rows({"tables": {table: merged["tables"][name]}}, table, rows)
            if got != want:
                failures.append((s, f"{how}: {table}: {len(got)} rows, the source {len(want)}"))
    return failures


def merge_canonical(seeds: list[int], root: Path) -> list[tuple[int, str]]:
    """``test_merge``'s randomized workload (500 changes, 3 days, canonical events as replay writes them): merged in
    one go and day by day with ``--base --history``; both must equal the source, per seed.

    Each seed keeps its own database ``shop_<seed>`` (3 tables a seed, 4 merges): unlike ``end_to_end``, seeds
    cannot share tables by key range. The workload truncates the keyless ``shop.log`` (a shared table would lose
    every seed's rows), changes the tables' columns by DDL at seed-dependent points (one seed's ADD/RENAME/DROP
    would apply to the others' rows), and the keyless table has no key to offset (a marker column would change
    its schema). Its cost is the merge's per-table driver work: run a long sweep in ranges, each a whole result."""
    from cdc_jobs import cli
    from workload import generate, write_replay

    workloads = {s: generate(s, n_changes=500, n_days=3) for s in seeds}
    days = []
    for d in range(3):
        events = [e.with_(database=f"shop_{s}") for s, w in workloads.items() for e in w.days[d]]
        days.append(write_replay(events, root / f"day{d}"))
    runs = {"one go": root / "all"}
    assert cli.main(["merge", *[a for d in days for a in ("--replay", str(d))], "--history",
                     "--out", str(runs["one go"])]) == 0
    prev = None
    for i, day in enumerate(days):
        out = root / f"state{i}"
        assert cli.main(["merge", "--replay", str(day), "--history", "--out", str(out)]
                        + (["--base", str(prev)] if prev else [])) == 0
        prev = out
    runs["day by day"] = prev
    return [f for how, state in runs.items() for f in compare(workloads, state, how)]


def replay_archive(seeds: list[int], root: Path) -> list[tuple[int, str]]:
    """``test_replay``'s randomized archive (a canal-json snapshot and day of changes with one corrupt line) for
    every seed in one source (each seed its own database ``shop_<seed>``), replayed once: exactly the corrupt lines
    are dead letters, the counts add up per source, a time window and table filter keeps what it should, and the
    events re-encoded to oms-default replay back to the same events."""
    import pyarrow.parquet as pq

    from cdc_codecs.records import from_record
    from cdc_jobs import cli
    from test_replay import archive_for, canonical

    archives = {s: archive_for(s, root / "archive" / f"seed{s}", database=f"shop_{s}") for s in seeds}
    failures: list[tuple[int, str]] = []
    out, back, window = root / "replay", root / "back", root / "window"
    assert cli.main(["replay", "--source", str(root / "archive"), "--format", "canal-json",
                     "--to-format", "oms-default", "--out", str(out)]) == 0
    dead = {(d["pos_source"], d["pos_offset"]) for d in pq.read_table(out / "dead_letters").to_pylist()}
    events = [from_record(r) for r in pq.read_table(out / "events").to_pylist()]
    counts = json.loads((out / "counts.json").read_text())
    for s, a in archives.items():
        mine = {d for d in dead if d[0].startswith(str(a["root"]) + "/")}
        if mine != {(str(a["inc"]), a["bad_line"])}:
            failures.append((s, f"dead letters {sorted(mine)}, expected line {a['bad_line']} of {a['inc']}"))
        total = len(a["workload"].snapshot) + len(a["workload"].changes)
        got = sum(e.database == f"shop_{s}" for e in events)
        if got != total - 1:
            failures.append((s, f"{got} events of {total} messages with one corrupt"))
    for src in counts["sources"]:
        if src["records"] != src["events"] + src["control"] + src["dead_letters"] + src["filtered_out"]:
            failures.append((-1, f"counts do not add up for {src}"))
    assert cli.main(["replay", "--source", str(out / "encoded"), "--format", "oms-default", "--out", str(back)]) == 0
    again = [from_record(r) for r in pq.read_table(back / "events").to_pylist()]
    strip = lambda evs: [(t, op, ms // 1000, bi, ai) for (t, op, ms, bi, ai) in canonical(evs)]
    for s in seeds:
        mine = lambda evs: sorted((e for e in strip(evs) if e[0].startswith(f"shop_{s}.")), key=repr)
        if mine(again) != mine(events):
            failures.append((s, "oms-default re-encoding replays back to other events"))
    since, until = 1704067200000 + 6 * 3600_000, 1704067200000 + 12 * 3600_000
    assert cli.main(["replay", "--source", str(root / "archive"), "--format", "canal-json", "--since", str(since),
                     "--until", str(until), "--tables", "shop_*.cust*", "--out", str(window)]) == 0
    kept = [from_record(r) for r in pq.read_table(window / "events").to_pylist()]
    for s, a in archives.items():
        expected = [e for e in a["workload"].changes if since <= e.event_time_ms < until and e.table == "customers"]
        got = [e for e in kept if e.database == f"shop_{s}"]
        if not (len(expected) - 1 <= len(got) <= len(expected)) or \
                not all(since <= e.event_time_ms < until and e.table == "customers" for e in got):
            failures.append((s, f"window: {len(got)} events, expected {len(expected)} (one may be the corrupt one)"))
    return failures


# end-to-end: every seed's key values in its own range of one shared ``shop`` database (see end_to_end).
SEED_KEY_SPAN = 1_000_000  # simulate's keys stay far below this: customers.id <= ~200, order_id <= ~1100
SEED_KEY_COLUMNS = {"customers": "id", "order_items": "order_id"}  # line_no (1-9) is not offset


def _offset_keys(row: dict | None, table: str, seed: int) -> dict | None:
    col = SEED_KEY_COLUMNS[table]
    if row is None or row.get(col) is None:
        return row
    key = int(row[col])
    assert 0 <= key < SEED_KEY_SPAN, f"{table}.{col}={key} is outside one seed's key span"
    return row | {col: str(seed * SEED_KEY_SPAN + key)}


def _seed_of(row: dict, table: str) -> int:
    return int(row[SEED_KEY_COLUMNS[table]]) // SEED_KEY_SPAN


def _shared_tables(seed: int, w):
    """The seed's workload in the shared ``shop`` tables: its key columns offset (before, after and final rows),
    and its sequence too: a source numbers a table's changes once, and a format may pair the halves of an update
    by table + sequence (dataworks-json's UPDATE_BEFOR/UPDATE_AFTER), which equal numbers of two seeds would mix."""
    from decimal import Decimal

    def move(e):
        assert all(0 <= s < SEED_KEY_SPAN for s in e.sequence), f"sequence {e.sequence} outside one seed's span"
        return e.with_(before=_offset_keys(e.before, e.table, seed), after=_offset_keys(e.after, e.table, seed),
                       sequence=tuple(Decimal(seed * SEED_KEY_SPAN) + s for s in e.sequence))
    final = {t: [_offset_keys(r, t.split(".", 1)[1], seed) for r in rows] for t, rows in w.final.items()}
    return type(w)([move(e) for e in w.snapshot], [move(e) for e in w.changes], final)


def end_to_end(fmt: str, seeds: list[int], root: Path, shared: bool = True) -> list[tuple[int, str]]:
    """``test_end_to_end``'s randomized workload in one format for every seed in one archive (a source folder per
    seed): replay, merge and verify once; every seed's rows equal its simulated source.

    Shared (the default): all seeds write the same two tables ``shop.customers`` / ``shop.order_items``, each seed
    with its integer key offset by ``seed * SEED_KEY_SPAN`` (``id``, ``order_id``; in before and after images, so
    key-changing updates move within the seed's range; the event sequence the same way, so it stays unique per
    table), and the merged rows are split back per seed by that range.
    A merge costs ~1-2 s of driver work per Delta table: a database per seed made 200 seeds 400 tables (canal-json
    did not finish in 95 min), shared it is 2. The offset is safe here because ``sample.simulate`` has only keyed
    tables, small positive keys far from the column types' limits (``int``, ``bigint``), no DDL and no truncate,
    so no seed's event can touch another seed's rows. ``--per-seed-databases`` keeps the exact key values of the
    test (a database ``shop_<seed>`` per seed) for a seed whose failure might depend on them. ``test_merge``'s
    workload (keyless table, truncate, DDL, 32-bit edge values in keys) stays a database per seed: see
    ``merge_canonical``."""
    from cdc_jobs import cli
    from test_end_to_end import archive, in_database, primary_key_args, state_rows
    from cdc_jobs.commands.sample import simulate

    assert not shared or (max(seeds) + 1) * SEED_KEY_SPAN <= 2**31 - 1, "offset keys must fit the int column"
    workloads = {s: simulate(s, "2024-03-05", rows=25, changes=150) for s in seeds}
    for s, w in workloads.items():
        placed = _shared_tables(s, w) if shared else in_database(w, f"shop_{s}")
        workloads[s] = placed
        archive(placed, fmt, root / "archive" / f"seed{s}")
    replay, state, report = root / "replay", root / "state", root / "verification.json"
    assert cli.main(["replay", "--source", str(root / "archive"), "--format", fmt,
                     *primary_key_args(fmt, "shop" if shared else "shop_*"), "--out", str(replay)]) == 0
    assert cli.main(["merge", "--replay", str(replay), "--out", str(state)]) == 0
    verified = cli.main(["verify", "--replay", str(replay), "--state", str(state), "--report", str(report)])
    verdicts = {r["table"]: r for r in json.loads(report.read_text())}
    failures = [] if verified == 0 else [(-1, f"verify exited {verified}")]
    expected = {}  # table -> seed -> rows
    for s, w in workloads.items():
        for table, rows in w.final.items():
            expected.setdefault(table, {})[s] = rows
    for table, per_seed in expected.items():
        if not (state / table).exists():
            failures += [(s, f"{fmt}: {table} missing from the state") for s in per_seed]
            continue
        got: dict[int, list[dict]] = {s: [] for s in per_seed}
        for r in state_rows(state, table):
            got.setdefault(_seed_of(r, table.split(".", 1)[1]) if shared else next(iter(per_seed)), []).append(r)
        for s, rows in per_seed.items():
            want = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
            if got.get(s) != want:
                failures.append((s, f"{fmt}: {table}: {len(got.get(s) or [])} rows, the source {len(want)}"))
        stray = set(got) - set(per_seed)
        if stray:
            failures.append((-1, f"{fmt}: {table}: rows with keys of no seed's range {sorted(stray)}"))
        v = verdicts.get(table)
        n = sum(len(rows) for rows in per_seed.values())
        if not v or not v["ok"] or v["actual_rows"] != n:
            failures.append((-1 if shared else next(iter(per_seed)), f"{fmt}: {table}: verify says {v}"))
    return failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="test", required=True)
    mf = sub.add_parser("merge-formats")
    mf.add_argument("--format", default="dts-avro")
    mf.add_argument("--seeds", default="0-199")
    mc = sub.add_parser("merge-canonical")
    mc.add_argument("--seeds", default="0-199")
    rp = sub.add_parser("replay")
    rp.add_argument("--seeds", default="0-199")
    ee = sub.add_parser("end-to-end")
    ee.add_argument("--format", default="all",
                    help="formats separated by commas, or all (one replay/merge/verify per format)")
    ee.add_argument("--seeds", default="0-49")
    ee.add_argument("--per-seed-databases", action="store_true",
                    help="a database shop_<seed> per seed (the test's exact keys; ~1-2 s per table) instead of "
                         "key ranges in one shared shop database")
    args = p.parse_args(argv)
    os.environ.setdefault("CDC_REPLAY_PROGRESS", "off")
    seeds = _seeds(args.seeds)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="seed-sweep-") as tmp:
        if args.test == "merge-formats":
            failures = merge_formats(args.format, seeds, Path(tmp))
        elif args.test == "replay":
            failures = replay_archive(seeds, Path(tmp))
        elif args.test == "end-to-end":
            from cdc_codecs.registry import FORMATS

            failures = []
            formats = sorted(FORMATS) if args.format == "all" else args.format.split(",")
            for fmt in formats:
                try:
                    found = end_to_end(fmt, seeds, Path(tmp) / fmt, shared=not args.per_seed_databases)
                except AssertionError as exc:  # a job that exited non-zero: the other formats still run
                    found = [(-1, f"{fmt}: {exc!r}")]
                print(f"  {fmt}: {len(seeds)} seeds, {len({s for s, _ in found})} failed "
                      f"({time.monotonic() - started:.0f} s so far)", flush=True)
                failures += found
        else:
            failures = merge_canonical(seeds, Path(tmp))
    failed = sorted({s for s, _ in failures})
    print(f"{args.test} {getattr(args, 'format', '')}: {len(seeds)} seeds, {len(failed)} failed "
          f"({time.monotonic() - started:.0f} s): {failed}")
    for s, why in failures:
        print(f"  seed {s}: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
