"""Throughput benchmark: decode (+ optionally re-encode) a generated archive with the real replay job.

    python -m bench.run [--messages 200000] [--format canal-json] [--to-format oms-default] [--repeat 2]
                        [--files 2]

Prints messages/s for the pure codec (single process) and for the Spark replay on this machine, plain and, with
``--to-format``, re-encoding too. The machine is often shared, so besides wall time every run reports the CPU
seconds spent by the whole process tree (driver, JVM, Python workers): on a busy machine that is the steadier
number to compare. Targets live here, not in timed tests: compare runs on the same machine (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from cdc_codecs import Position, get_codec
from cdc_jobs.sample import simulate


def build_archive(fmt: str, messages: int, root: Path, files: int = 0) -> Path:
    """Repeat one simulated day until the archive holds `messages` lines, in `files` files (0: 100k lines
    each)."""
    w = simulate(1, "2024-01-01", rows=500, changes=5000)
    codec = get_codec(fmt)
    encoded = [m.value for e in w.snapshot + w.changes for m in codec.encode([e])]
    root.mkdir(parents=True, exist_ok=True)
    per_file = -(-messages // files) if files else 100_000
    written, part = 0, 0
    while written < messages:
        n = min(per_file, messages - written)
        with open(root / f"part-{part:05d}.jsonl", "wb") as fh:
            for i in range(n):
                fh.write(encoded[(written + i) % len(encoded)] + b"\n")
        written += n
        part += 1
    return root


def process_tree_cpu() -> float:
    """CPU seconds used so far by this process and its children (the Spark JVM and its Python workers)."""
    import psutil

    me = psutil.Process(os.getpid())
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:  # a worker that just exited
            pass
    return total


def bench_codec(fmt: str, path: Path, to_format: str | None, limit: int = 100_000) -> dict:
    codec = get_codec(fmt)
    lines = path.read_bytes().splitlines()[:limit]
    wall, cpu = time.perf_counter(), time.process_time()
    events = [e for i, line in enumerate(lines) for e in codec.decode(line, Position(str(path), -1, i + 1))]
    out = {"decode_msgs_per_s": round(len(lines) / (time.perf_counter() - wall)),
           "decode_msgs_per_cpu_s": round(len(lines) / (time.process_time() - cpu))}
    if to_format:
        target = get_codec(to_format)
        carried = [e for e in events if target.capabilities.carries(e.op)]
        cpu = time.process_time()
        target.encode(carried)
        out["encode_events_per_cpu_s"] = round(len(carried) / (time.process_time() - cpu))
    return out


def bench_replay(argv: list[str], out: Path, repeat: int, messages: int) -> dict:
    from cdc_jobs import cli

    shutil.rmtree(out, ignore_errors=True)
    cli.main(argv)  # warm-up: Spark start and Python worker imports are not what we measure
    walls, cpus = [], []
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        wall, cpu = time.perf_counter(), process_tree_cpu()
        cli.main(argv)
        walls.append(round(time.perf_counter() - wall, 2))
        cpus.append(round(process_tree_cpu() - cpu, 1))
    return {"seconds": walls, "cpu_seconds": cpus, "best_msgs_per_s": round(messages / min(walls)),
            "load_average_1m": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--format", default="canal-json")
    ap.add_argument("--to-format", help="also measure a replay that re-encodes into this format")
    ap.add_argument("--repeat", type=int, default=2, help="measured replays per variant (after one warm-up)")
    ap.add_argument("--files", type=int, default=0, help="archive files (default: 100k lines per file)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        archive = build_archive(args.format, args.messages, Path(tmp) / "archive", args.files)
        size_mb = sum(f.stat().st_size for f in archive.iterdir()) / 1e6
        codec = bench_codec(args.format, archive / "part-00000.jsonl", args.to_format)
        base = ["replay", "--source", str(archive), "--format", args.format, "--out", str(Path(tmp) / "out")]
        result = {"format": args.format, "to_format": args.to_format, "messages": args.messages,
                  "files": len(list(archive.iterdir())), "archive_mb": round(size_mb, 1),
                  "codec_one_core": codec, "replay": bench_replay(base, Path(tmp) / "out", args.repeat, args.messages)}
        if args.to_format:
            result["replay_to_format"] = bench_replay([*base, "--to-format", args.to_format], Path(tmp) / "out",
                                                      args.repeat, args.messages)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
