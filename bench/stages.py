"""Where a replay's time goes beside its peer: the replay cut into cumulative parts, each measured as its own run
on the same archive in one SparkSession (as ``bench.run`` measures whole steps).

    python -m bench.stages [--messages 200000] [--formats canal-json,debezium-json,...] [--repeat 2] [--json F]
                           [--to-format oms-default]

Parts, each including the ones before it:
- ``read``: the archive's records as RAW rows (the file reader alone, no decode), to a no-op sink;
- ``decode``: the DECODED rows (the codec, or the format's JVM decode where a replay would take it, and the
  assembly of multi-message events), to a no-op sink;
- ``replay``: the whole ``cdc-replay replay`` (events by table and the counts in one pass, dead letters);
- ``peer``: the hand-written one-format job (``bench/peers.py``) for the same archive.
With ``--to-format`` (the re-encode, ``cdc-replay replay --to-format``), after ``decode``:
- ``stored``: the DECODED rows kept as a re-encode keeps them (on disk: the events write and the encoder read
  them), and counted;
and after ``replay``:
- ``encode``: the stored rows' events encoded to the target as replay encodes them, to a no-op sink (beside
  ``stored``: the events' trip to the encoder and back);
- ``reencode``: the whole ``cdc-replay replay --to-format`` (the replay's outputs and the encoded ones);
- ``peer``: the hand-written re-encode (``bench.peers.REENCODE``).
The differences between neighbours say what each part costs (CPU seconds are the steadier number on a shared
machine); the peer's total is what the whole replay is held to (issue 37's targets are ratios to it).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Callable

from bench.run import Ctx, build_archive, measure, ours_reencode, ours_replay, peer_reencode, peer_replay


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def read_part(ctx: Ctx) -> None:
    from cdc_jobs.io.files import read_files

    _noop(read_files(ctx.spark, [str(ctx.archive)]))


def _replay_args(ctx: Ctx):
    """The arguments ``cdc-replay replay`` gets for this archive (``ours_replay``'s), parsed by the command's own
    parser, so the parts below read and decode through replay's own functions with replay's settings."""
    from cdc_jobs.cli import build_parser

    return build_parser().parse_args(["replay", "--source", str(ctx.archive), "--format", ctx.fmt,
                                      "--out", str(ctx.out)])


def _decoded(ctx: Ctx):
    """The DECODED rows replay stores: its ``read_source`` (no window, no checkpoint)."""
    from cdc_jobs.commands.replay import read_source

    return read_source(ctx.spark, _replay_args(ctx), None, None, None)[0]


def _schemas(ctx: Ctx):
    """Where the codec finds the archive's Avro schemas by id, as replay sets it (else every record of a
    registry format would be a quick dead letter)."""
    from cdc_jobs.commands.replay import codec_settings

    return codec_settings(_replay_args(ctx), None)


def decode_part(ctx: Ctx) -> None:
    with _schemas(ctx):
        _noop(_decoded(ctx))


def stored_part(ctx: Ctx) -> None:
    from cdc_jobs.commands.replay import CACHE

    with _schemas(ctx):
        stored = _decoded(ctx).persist(CACHE)
        try:
            refuse_dead_letters(ctx.fmt, stored)
        finally:
            stored.unpersist()


def encode_part(ctx: Ctx) -> None:
    """stored, then its events encoded to the target as replay encodes them (no window, every table)."""
    from cdc_jobs.commands.replay import CACHE

    with _schemas(ctx):
        stored = _decoded(ctx).persist(CACHE)
        try:
            _noop(_encoded(ctx, stored, refuse_dead_letters(ctx.fmt, stored)))
        finally:
            stored.unpersist()


def _encoded(ctx: Ctx, stored, rows: int):
    """The ENCODED rows of the stored rows' events, as replay makes them for ``ctx.to_format``."""
    from pyspark.sql import functions as F

    from cdc_codecs import get_codec
    from cdc_jobs.commands.replay import carried_ops, encoded_rows
    from cdc_jobs.schemas import EVENT_FIELDS, MARKER_KINDS

    target = get_codec(ctx.to_format)
    kept = stored.where(F.col("dl_reason").isNull() & ~F.col("op").isin(*MARKER_KINDS)).select(*EVENT_FIELDS)
    to_encode = kept.where(F.col("op").isin(carried_ops(target)))
    shuffle = int(ctx.spark.conf.get("spark.sql.shuffle.partitions"))
    return encoded_rows(to_encode, target, ctx.fmt, False, rows, shuffle)


def refuse_dead_letters(fmt: str, decoded) -> int:
    """The DECODED rows' count; RuntimeError when more than 1% are dead letters: a bench whose records fail to
    decode would time dead letters. (A few are expected: an archive cut at N messages can end inside a
    multi-message event.)"""
    rows = decoded.count()
    dead = decoded.where("dl_reason IS NOT NULL").count()
    if dead * 100 > rows:
        raise RuntimeError(f"{fmt}: {dead} of {rows} decoded rows are dead letters")
    return rows


PARTS: dict[str, Callable[[Ctx], None]] = {"read": read_part, "decode": decode_part, "replay": ours_replay,
                                           "peer": peer_replay}
REENCODE_PARTS: dict[str, Callable[[Ctx], None]] = {"read": read_part, "decode": decode_part, "stored": stored_part,
                                                    "replay": ours_replay, "encode": encode_part,
                                                    "reencode": ours_reencode, "peer": peer_reencode}


def stages(ctx: Ctx, repeat: int) -> dict:
    """Each part's best wall and CPU seconds (after one warm-up run of it)."""
    out = {"format": ctx.fmt, "messages": ctx.messages, "to_format": ctx.to_format}
    for name, fn in (REENCODE_PARTS if ctx.to_format else PARTS).items():
        m = measure(fn, ctx, repeat)
        out[name] = {"seconds": min(m["seconds"]), "cpu_seconds": min(m["cpu_seconds"]),
                     "load_average_1m": m["load_average_1m"]}
    return out


def _seconds(result: dict, parts) -> tuple[dict, dict]:
    """(CPU seconds, wall seconds) per part of one format's result."""
    return ({p: result[p]["cpu_seconds"] for p in parts}, {p: result[p]["seconds"] for p in parts})


def _ratio(cpu: dict, wall: dict, ours: str) -> str:
    return f"{round(cpu['peer'] / max(0.1, cpu[ours]), 2)} ({round(wall['peer'] / wall[ours], 2)})"


def table(results: list[dict]) -> str:
    """CPU seconds per part (wall in brackets), what each adds to the one before, and the replay's ratio."""
    head = ("| format | messages | read | + decode | + outputs = replay | peer | ratio peer/ours cpu (wall)"
            " | load 1m |")
    lines = [head, "|" + "---|" * 8]
    for r in results:
        cpu, wall = _seconds(r, PARTS)
        steps = [f"{cpu['read']} ({wall['read']})"]
        for before, part in (("read", "decode"), ("decode", "replay")):
            steps.append(f"+{round(cpu[part] - cpu[before], 1)}")
        steps[-1] += f" = {cpu['replay']} ({wall['replay']})"
        lines.append(f"| {r['format']} | {r['messages']:,} | " + " | ".join(steps) +
                     f" | {cpu['peer']} ({wall['peer']}) | {_ratio(cpu, wall, 'replay')} | "
                     f"{r['replay']['load_average_1m']} |")
    return "\n".join(lines)


def reencode_table(results: list[dict]) -> str:
    """For --to-format: the replay, what the encoder's trip adds to the stored rows, what the whole re-encode adds
    to the replay, the re-encode peer; the floor: the re-encode without its decode, beside the peer."""
    head = ("| format -> target | messages | replay | encode (+ on stored) | reencode (+ on replay) | peer | ratio "
            "peer/ours cpu (wall) | floor without decode | load 1m |")
    lines = [head, "|" + "---|" * 9]
    for r in results:
        cpu, wall = _seconds(r, REENCODE_PARTS)
        decode = cpu["decode"] - cpu["read"]
        floor = round(cpu["peer"] / max(0.1, cpu["reencode"] - decode), 2)
        lines.append(f"| {r['format']} -> {r['to_format']} | {r['messages']:,} | {cpu['replay']} | {cpu['encode']} "
                     f"(+{round(cpu['encode'] - cpu['stored'], 1)}) | {cpu['reencode']} "
                     f"(+{round(cpu['reencode'] - cpu['replay'], 1)}) | {cpu['peer']} | "
                     f"{_ratio(cpu, wall, 'reencode')} | {floor} | {r['reencode']['load_average_1m']} |")
    return "\n".join(lines)


def main() -> None:
    from cdc_codecs.registry import available_formats

    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--formats", default=",".join(available_formats()))
    ap.add_argument("--repeat", type=int, default=2, help="measured runs per part (after one warm-up)")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    ap.add_argument("--to-format", help="cut the re-encode to this format instead of the replay")
    args = ap.parse_args()

    from cdc_jobs.spark import session

    spark = session("cdc-replay bench stages")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            archive = build_archive(fmt, args.messages, Path(tmp) / fmt / "archive")
            ctx = Ctx(fmt, archive, args.to_format, Path(tmp) / fmt / "out", args.messages, spark)
            results.append(stages(ctx, args.repeat))
            show = reencode_table if args.to_format else table
            print(show(results[-1:]).splitlines()[-1], flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    print((reencode_table if args.to_format else table)(results))


if __name__ == "__main__":
    main()
