"""Benchmark: cdc-replay beside hand-written one-format Spark jobs ("peers", ``bench/peers.py``), on the same
generated archives, in one run and one SparkSession, so a busy shared machine hits both sides alike.

    python -m bench.run [--messages 1000000] [--formats canal-json,dts-avro,...] [--to-format oms-default]
                        [--steps replay,reencode,merge,merge-parquet] [--repeat 2] [--json out.json]

Per step and format it prints ours, peer and the ratio peer/ours (>= 1.0 means we are as fast), with wall and
CPU seconds (driver, JVM and Python workers together: the steadier number on a shared machine) and the peak RSS
of the driver (Python driver process + the local-mode Spark JVM, sampled). The SparkSession is started once for all steps;
each measured run is preceded by one warm-up of the same step (``--no-warmup`` skips those, for big archives or
every format in about an hour, and warms the session once instead: ``warm_session``); the best of ``--repeat``
runs counts.

A step is one function pair in ``STEPS``: ``ours(ctx)`` and ``peer(ctx)``, each doing one complete run into
``ctx.out``. The merge step measures `cdc-replay merge` (Delta tables) beside the hand-written ``row_number()``
upsert writing plain Parquet (``bench/merge_step.py``) on one shared replay of the archive; ``merge-parquet`` the
same merge with ``--state-format parquet`` beside the same peer.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from cdc_codecs import Position, get_codec
from cdc_codecs.registry import available_formats
from cdc_jobs.commands.sample import simulate


# -- archives ------------------------------------------------------------------------------------------------
# Each format in the form a user archives it: text formats as JSON lines; Avro formats without a registry as Avro
# container files (what an Avro topic archived to object storage looks like); Confluent-framed Avro as the Kafka
# dump of `cdc-replay archive` (base64 key/value per line) with the registry's schemas in ``_schemas``.

def _container_schema(fmt: str):
    """The writer schema of a format archived as Avro container files, or None."""
    if fmt == "dts-avro":
        from cdc_codecs.dts.dts_avro import RECORD15

        return RECORD15
    if fmt == "oms-avro":
        from cdc_codecs.oms.oms_avro import SCHEMA

        return SCHEMA
    return None


def _day_messages(fmt: str, schemas: Optional[Path] = None, rows: int = 500,
                  changes: int = 5000) -> list[tuple[Optional[bytes], bytes]]:
    """One simulated day (snapshot of ``rows`` rows and ``changes`` changes, two tables) encoded one event at a
    time, as (key, value); Avro schemas the codec makes by id go to ``schemas``."""
    from cdc_jobs.io import codec_env

    w = simulate(1, "2024-01-01", rows=rows, changes=changes)
    codec = get_codec(fmt)
    with codec_env.schemas_written_to(schemas or Path(tempfile.gettempdir()) / "bench-schemas"):
        return [(m.key, m.value) for e in w.snapshot + w.changes for m in codec.encode([e])]


def _write_parts(root: Path, messages: int, files: int, suffix: str, write: Callable[..., None]) -> Path:
    """``messages`` messages in ``files`` files (0: 100k messages each); ``write(fh, first, n)`` writes one."""
    root.mkdir(parents=True, exist_ok=True)
    per_file = -(-messages // files) if files else 100_000
    written, part = 0, 0
    while written < messages:
        n = min(per_file, messages - written)
        with open(root / f"part-{part:05d}{suffix}", "wb") as fh:
            write(fh, written, n)
        written += n
        part += 1
    return root


def build_archive(fmt: str, messages: int, root: Path, files: int = 0, rows: int = 500,
                  changes: int = 5000) -> Path:
    """Repeat one simulated day of ``fmt`` until the archive under ``root`` holds ``messages`` messages."""
    import base64

    encoded = _day_messages(fmt, root / "_schemas", rows, changes)
    pick = lambda first, n: (encoded[(first + i) % len(encoded)] for i in range(n))  # noqa: E731
    schema = _container_schema(fmt)
    if schema is not None:
        import fastavro

        from cdc_codecs.shared.avro import avro_loads

        records = [avro_loads(schema, value)[0] for _, value in encoded]
        return _write_parts(root, messages, files, ".avro", lambda fh, first, n: fastavro.writer(
            fh, schema, (records[(first + i) % len(records)] for i in range(n)), codec="null"))
    if get_codec(fmt).capabilities.binary:
        def dump(fh, first, n):
            for key, value in pick(first, n):
                line = {"value": base64.b64encode(value).decode()}
                if key is not None:
                    line["key"] = base64.b64encode(key).decode()
                fh.write(json.dumps(line).encode() + b"\n")

        return _write_parts(root, messages, files, ".dump.jsonl", dump)
    return _write_parts(root, messages, files, ".jsonl",
                        lambda fh, first, n: fh.writelines(value + b"\n" for _, value in pick(first, n)))


# -- measuring -----------------------------------------------------------------------------------------------

def _tree():
    import psutil

    me = psutil.Process(os.getpid())
    return me, me.children(recursive=True)


class PeakRss:
    """Peak RSS of the driver (this process + the Spark JVM) and CPU seconds of the whole process tree (driver,
    JVM, Python workers), sampled every 0.2 s. CPU is summed per process from its first to its last sample:
    Python workers come and go, and a tree total taken only at the start and end would miss or double-count
    them. Python workers are executors, not the driver, so their memory is not in the RSS."""

    def __init__(self) -> None:
        self.peak = 0
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def cpu_seconds(self) -> float:
        return sum(self._last[p] - self._first[p] for p in self._last)

    def _sample(self, first: bool = False) -> None:
        import psutil

        me, kids = _tree()
        rss = 0
        for p in [me, *kids]:
            try:
                t = p.cpu_times()
                cpu = t.user + t.system
                # a process seen for the first time after the start began within the measurement
                self._first.setdefault(p.pid, cpu if first else 0.0)
                self._last[p.pid] = cpu
                if p is me or "java" in p.name():
                    rss += p.memory_info().rss
            except psutil.Error:
                pass
        self.peak = max(self.peak, rss)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self) -> "PeakRss":
        self._sample(first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


@dataclass
class Ctx:
    """What a step needs: the archive, its format, the re-encode target, a scratch output dir, Spark."""

    fmt: str
    archive: Path
    to_format: Optional[str]
    out: Path
    messages: int
    spark: object = None


def measure(fn: Callable[[Ctx], None], ctx: Ctx, repeat: int, warmup: bool = True) -> dict:
    shutil.rmtree(ctx.out, ignore_errors=True)
    if warmup:
        fn(ctx)
    walls, cpus, rss = [], [], []
    for _ in range(repeat):
        shutil.rmtree(ctx.out, ignore_errors=True)
        with PeakRss() as peak:
            wall = time.perf_counter()
            fn(ctx)
            walls.append(round(time.perf_counter() - wall, 2))
        cpus.append(round(peak.cpu_seconds, 1))
        rss.append(round(peak.peak / 2**20))
    shutil.rmtree(ctx.out, ignore_errors=True)
    return {"seconds": walls, "cpu_seconds": cpus, "peak_driver_rss_mb": max(rss),
            "best_msgs_per_s": round(ctx.messages / min(walls)), "load_average_1m": round(os.getloadavg()[0], 1)}


# -- steps: ours and the peer, one function each -------------------------------------------------------------

def _cli(argv: list[str]) -> None:
    from cdc_jobs import cli

    with io.StringIO() as quiet:
        import contextlib

        with contextlib.redirect_stdout(quiet):
            assert cli.main(argv) == 0


def ours_replay(ctx: Ctx) -> None:
    _cli(["replay", "--source", str(ctx.archive), "--format", ctx.fmt, "--out", str(ctx.out)])


def peer_replay(ctx: Ctx) -> None:
    from bench.peers import REPLAY

    REPLAY[ctx.fmt](ctx.spark, ctx.archive, ctx.out)


def ours_reencode(ctx: Ctx) -> None:
    _cli(["replay", "--source", str(ctx.archive), "--format", ctx.fmt, "--to-format", ctx.to_format,
          "--out", str(ctx.out)])


def peer_reencode(ctx: Ctx) -> None:
    from bench.peers import REENCODE

    REENCODE[(ctx.fmt, ctx.to_format)](ctx.spark, ctx.archive, ctx.out)


def _replayed(ctx: Ctx) -> Path:
    """The merge step's input: one replay of the archive, made once per format and shared by both sides."""
    out = ctx.archive.parent / f"{ctx.fmt}-replayed"
    if not (out / "events").is_dir():
        _cli(["replay", "--source", str(ctx.archive), "--format", ctx.fmt, "--out", str(out)])
    return out


def ours_merge(ctx: Ctx) -> None:
    _cli(["merge", "--replay", str(_replayed(ctx)), "--out", str(ctx.out)])  # Delta tables (the default)


def ours_merge_parquet(ctx: Ctx) -> None:
    _cli(["merge", "--replay", str(_replayed(ctx)), "--state-format", "parquet", "--out", str(ctx.out)])


def peer_merge(ctx: Ctx) -> None:
    from bench.merge_step import peer_merge as upsert

    upsert(ctx.spark, _replayed(ctx), ctx.out)


STEPS: dict[str, tuple[Callable[[Ctx], None], Callable[[Ctx], None]]] = {
    "replay": (ours_replay, peer_replay),
    "reencode": (ours_reencode, peer_reencode),
    "merge": (ours_merge, peer_merge),
    # The same merge writing plain Parquet files: what Delta's log and statistics cost beside it.
    "merge-parquet": (ours_merge_parquet, peer_merge),
}
# Steps measured only for some formats (where their peers exist); replay runs for every format.
STEP_FORMATS = {"reencode": ("canal-json", "dts-avro"), "merge": ("canal-json", "dts-avro"),
                "merge-parquet": ("canal-json", "dts-avro")}


def warm_session(spark, root: Path, fmt: str, messages: int = 100_000) -> None:
    """One small replay of each side before anything is measured, for runs without a warm-up each
    (``--no-warmup``): without it the first format measured pays alone for the session's JIT and Python workers
    (a cold first replay took about twice a warm one's time, bench/RESULTS.md)."""
    from unittest import mock

    from cdc_jobs import jvm

    archive = build_archive(fmt, messages, root / "warm-up")
    ctx = Ctx(fmt, archive, None, root / "warm-up-out", messages, spark)
    # a small archive may stay below the JVM decode's threshold: warm the path the measured archives take
    forced = {"CDC_REPLAY_JVM_DECODE": "on"} if jvm.mode() == "auto" else {}
    with mock.patch.dict(os.environ, forced):  # the user's setting is back afterwards, also after a failure
        for side in STEPS["replay"]:
            side(ctx)
            shutil.rmtree(ctx.out, ignore_errors=True)
    shutil.rmtree(archive)


def run_step(step: str, ctx: Ctx, repeat: int, warmup: bool = True) -> dict:
    ours, peer = STEPS[step]
    if step.startswith("merge"):  # the shared input replay is made before timing (without a warm-up, ours paid for it)
        _replayed(ctx)
    o, p = measure(ours, ctx, repeat, warmup), measure(peer, ctx, repeat, warmup)
    return {"step": step, "format": ctx.fmt, "to_format": ctx.to_format if step == "reencode" else None,
            "messages": ctx.messages, "ours": o, "peer": p,
            "ratio": round(min(p["seconds"]) / min(o["seconds"]), 2),
            "cpu_ratio": round(min(p["cpu_seconds"]) / max(0.1, min(o["cpu_seconds"])), 2)}


# -- codec alone (one process): the per-message floor beside the Spark numbers -------------------------------

def bench_codec(fmt: str, archive: Path, limit: int = 100_000) -> dict:
    if get_codec(fmt).capabilities.binary:
        return {}
    import orjson

    codec = get_codec(fmt)
    lines = next(p for p in sorted(archive.iterdir()) if p.is_file()).read_bytes().splitlines()[:limit]
    cpu = time.process_time()
    for line in lines:
        orjson.loads(line)
    floor = time.process_time() - cpu
    cpu = time.process_time()
    for i, line in enumerate(lines):
        codec.decode(line, Position("bench", -1, i + 1))
    return {"orjson_loads_msgs_per_cpu_s": round(len(lines) / floor),
            "decode_msgs_per_cpu_s": round(len(lines) / (time.process_time() - cpu))}


def table(results: list[dict]) -> str:
    head = ("| step | format | messages | ours s (cpu s) | peer s (cpu s) | ratio peer/ours wall (cpu) | "
            "peak driver RSS MB ours / peer | load 1m |")
    lines = [head, "|" + "---|" * 8]
    for r in results:
        o, p = r["ours"], r["peer"]
        name = r["step"] + (f" -> {r['to_format']}" if r["to_format"] else "")
        lines.append(f"| {name} | {r['format']} | {r['messages']:,} | {min(o['seconds'])} ({min(o['cpu_seconds'])}) | "
                     f"{min(p['seconds'])} ({min(p['cpu_seconds'])}) | {r['ratio']} ({r['cpu_ratio']}) | "
                     f"{o['peak_driver_rss_mb']} / {p['peak_driver_rss_mb']} | {o['load_average_1m']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--formats", default=",".join(available_formats()),
                    help="formats to measure (default: all); re-encode and merge only for " +
                    ", ".join(STEP_FORMATS["merge"]))
    ap.add_argument("--to-format", default="oms-default", help="target of the re-encode step")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--repeat", type=int, default=2, help="measured runs per side (after one warm-up)")
    ap.add_argument("--files", type=int, default=0, help="archive files (default: 100k messages per file)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the warm-up run per side (big archives, every format in an hour); the session is "
                         "still warmed once, by a small replay of the first format on each side")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    args = ap.parse_args()

    from cdc_jobs.spark import session

    spark = session("cdc-replay bench")
    results, codecs, failed = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        if args.no_warmup:
            warm_session(spark, Path(tmp), args.formats.split(",")[0])
        for fmt in args.formats.split(","):
            archive = build_archive(fmt, args.messages, Path(tmp) / fmt, args.files)
            codecs[fmt] = bench_codec(fmt, archive)
            ctx = Ctx(fmt, archive, args.to_format, Path(tmp) / "out", args.messages, spark)
            for step in args.steps.split(","):
                if fmt not in STEP_FORMATS.get(step, (fmt,)):
                    continue
                try:
                    results.append(run_step(step, ctx, args.repeat, not args.no_warmup))
                except Exception as exc:  # noqa: BLE001 - one broken step is reported; the others still run
                    failed.append(f"{step} {fmt}: {exc!r}")
                    print(f"FAILED {failed[-1]}", flush=True)
                    continue
                print(table(results[-1:]), flush=True)
            shutil.rmtree(archive)
            shutil.rmtree(archive.parent / f"{fmt}-replayed", ignore_errors=True)
    print(table(results))
    for line in failed:
        print(f"FAILED {line}")
    print(json.dumps({"codec_one_core": codecs}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "codec_one_core": codecs}, indent=1))


if __name__ == "__main__":
    main()
