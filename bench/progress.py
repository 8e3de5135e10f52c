"""What progress reporting costs: the same replay with the progress thread off and on, alternating.

    python -m bench.progress [--messages 200000] [--repeat 3] [--interval 0.5]

The thread is polled every `--interval` seconds (default 0.5, ten times the default rate, to make any cost
visible). Reports wall time and CPU seconds of the whole process tree per run, median per mode, and the cost of
one poll (`SparkStatus.snapshot`) on the finished application. Compare on the same machine; bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.run import build_archive, process_tree_cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--format", default="canal-json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.5)
    a = ap.parse_args()
    from cdc_jobs import cli

    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
        root = Path(tmp)
        archive = build_archive(a.format, a.messages, root / "archive")
        argv = ["replay", "--source", str(archive), "--format", a.format, "--out", str(root / "out")]
        os.environ["CDC_REPLAY_PROGRESS"] = "off"
        cli.main(argv)  # warm-up: Spark start and worker imports are not what we measure
        results: dict[str, list[tuple[float, float]]] = {"off": [], "plain": []}
        os.environ["CDC_REPLAY_PROGRESS_INTERVAL"] = str(a.interval)
        for _ in range(a.repeat):
            for mode in ("off", "plain"):
                os.environ["CDC_REPLAY_PROGRESS"] = mode
                cpu, t = process_tree_cpu(), time.perf_counter()
                cli.main(argv)
                results[mode].append((time.perf_counter() - t, process_tree_cpu() - cpu))
        from pyspark import SparkContext

        from cdc_jobs.progress import SparkStatus

        status = SparkStatus(SparkContext._active_spark_context)
        status.snapshot(time.monotonic())
        t = time.perf_counter()
        for _ in range(20):
            status.snapshot(time.monotonic())
        poll_ms = (time.perf_counter() - t) / 20 * 1000

    print(f"\nprogress overhead, {a.messages:,} {a.format} messages, poll every {a.interval}s, {a.repeat} runs each:")
    for mode, runs in results.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"  progress {mode:5}: wall median {statistics.median(walls):6.2f}s {[round(w, 2) for w in walls]}, "
              f"cpu median {statistics.median(cpus):6.2f}s")
    print(f"  one poll on the finished application: {poll_ms:.1f} ms")


if __name__ == "__main__":
    main()
