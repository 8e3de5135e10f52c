"""Run a randomized test over many seeds at once, outside CI: a seed that fails is a defect found, not noise.

    python tests/jobs/seed_sweep.py merge-formats --format dts-avro --seeds 1000-1199

``merge-canonical`` is ``test_merge``'s randomized workload, merged in one go and day by day (``--history``).
``merge-formats`` is ``test_merge_formats.test_workload_in_vendor_format_merges_day_by_day_to_the_source_state``
for many seeds in one go: each seed's workload gets its own database (``shop_<seed>``), the days of all seeds are
archived together, replayed and merged day by day with ``--base`` (3 replays and 3 merges whatever the number of
seeds), and every seed's tables are compared with its simulated source. Failing seeds are printed; keep them as
fixed cases of the test (``FIXED_SEEDS``). Results of the runs so far: tests/README.md.
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
    from test_merge_formats import archive_day
    from workload import generate

    workloads = {s: generate(s, n_changes=250) for s in seeds}
    n_days = len(next(iter(workloads.values())).days)
    base = None
    for d in range(n_days):
        archive = root / f"archive{d}"
        archive.mkdir()
        for s, w in workloads.items():
            events = [e.with_(database=f"shop_{s}") for e in w.days[d]]
            archive_day(events, fmt, archive / f"seed{s}")
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
    one go and day by day with ``--base --history``; both must equal the source, per seed."""
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="test", required=True)
    mf = sub.add_parser("merge-formats")
    mf.add_argument("--format", default="dts-avro")
    mf.add_argument("--seeds", default="0-199")
    mc = sub.add_parser("merge-canonical")
    mc.add_argument("--seeds", default="0-199")
    args = p.parse_args(argv)
    os.environ.setdefault("CDC_REPLAY_PROGRESS", "off")
    seeds = _seeds(args.seeds)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="seed-sweep-") as tmp:
        if args.test == "merge-formats":
            failures = merge_formats(args.format, seeds, Path(tmp))
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
