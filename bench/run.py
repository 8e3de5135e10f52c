"""Throughput benchmark: decode (+ optionally re-encode) a generated archive with the real replay job.

    python -m bench.run [--messages 200000] [--format canal-json] [--to-format oms-default]

Prints messages/s for the pure codec (single process) and for the Spark replay on this machine. Targets live here,
not in timed tests: compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from cdc_codecs import Position, get_codec
from cdc_jobs.sample import simulate


def build_archive(fmt: str, messages: int, root: Path) -> Path:
    """Repeat one simulated day until the archive holds `messages` lines (files of 100k lines each)."""
    w = simulate(1, "2024-01-01", rows=500, changes=5000)
    codec = get_codec(fmt)
    encoded = [m.value for e in w.snapshot + w.changes for m in codec.encode([e])]
    root.mkdir(parents=True, exist_ok=True)
    written, part = 0, 0
    while written < messages:
        n = min(100_000, messages - written)
        with open(root / f"part-{part:05d}.jsonl", "wb") as fh:
            for i in range(n):
                fh.write(encoded[(written + i) % len(encoded)] + b"\n")
        written += n
        part += 1
    return root


def bench_codec(fmt: str, path: Path, limit: int = 100_000) -> float:
    codec = get_codec(fmt)
    lines = path.read_bytes().splitlines()[:limit]
    start = time.perf_counter()
    for i, line in enumerate(lines):
        codec.decode(line, Position(str(path), -1, i + 1))
    return len(lines) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--format", default="canal-json")
    ap.add_argument("--to-format")
    args = ap.parse_args()
    from cdc_jobs import cli

    with tempfile.TemporaryDirectory() as tmp:
        archive = build_archive(args.format, args.messages, Path(tmp) / "archive")
        size_mb = sum(f.stat().st_size for f in archive.iterdir()) / 1e6
        per_core = bench_codec(args.format, archive / "part-00000.jsonl")
        argv = ["replay", "--source", str(archive), "--format", args.format, "--out", str(Path(tmp) / "out")]
        if args.to_format:
            argv += ["--to-format", args.to_format]
        cli.main(argv)  # warm-up: Spark start and Python worker imports are not what we measure
        start = time.perf_counter()
        cli.main(argv)
        elapsed = time.perf_counter() - start
        print(json.dumps({"format": args.format, "to_format": args.to_format, "messages": args.messages,
                          "archive_mb": round(size_mb, 1), "codec_decode_msgs_per_s_one_core": round(per_core),
                          "replay_seconds": round(elapsed, 2),
                          "replay_msgs_per_s": round(args.messages / elapsed)}, indent=2))


if __name__ == "__main__":
    main()
