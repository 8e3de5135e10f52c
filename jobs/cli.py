"""`cdc-replay`: the same jobs Airflow runs, from a shell. Also the spark-submit entry point (spark_main.py).

Job modules are imported only when their subcommand runs, so `cdc-replay formats` and argument errors are
instant and do not start Spark.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

JOBS = {
    "replay": "cdc_jobs.replay",
    "merge": "cdc_jobs.merge",
    "verify": "cdc_jobs.verify",
    "archive": "cdc_jobs.archive",
    "sample": "cdc_jobs.sample",
    "formats": "cdc_jobs.formats_cmd",
}


def _window_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="start of the event-time window, inclusive: ISO-8601 (with offset; none means "
                   "UTC) or epoch seconds/milliseconds")
    p.add_argument("--until", help="end of the event-time window, exclusive (same forms as --since)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cdc-replay", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("replay", help="decode an archive (files or Kafka) into canonical events; optionally "
                       "re-encode them")
    p.add_argument("--source", required=True, action="append",
                   help="archive files (path, directory or glob; repeatable) or kafka://HOST:PORT[,..]/TOPIC[,..]")
    p.add_argument("--format", required=True, help="vendor format of the archived messages (see `formats`)")
    _window_args(p)
    p.add_argument("--tables", action="append", default=[],
                   help="db.table glob(s) to keep, e.g. 'shop.*' (repeatable or comma-separated); default all")
    p.add_argument("--primary-key", action="append", default=[], metavar="TABLES=COL[,COL]",
                   help="key columns of tables whose format does not name them (SharePlex, relational rows in "
                   "Mongo JSON), e.g. 'shop.order_items=order_id,line_no'; TABLES is a db.table glob; repeatable")
    p.add_argument("--to-format", help="re-encode the kept events into this format under OUT/encoded/")
    p.add_argument("--sink", help="also write the re-encoded messages to kafka://HOST:PORT/TOPIC")
    p.add_argument("--checkpoint", help="continue an earlier replay: its output directory or checkpoint.json; the window starts "
                   "where that replay's ended unless --since is given")
    p.add_argument("--lookback", default="1h",
                   help="Kafka only: how much earlier than --since to start reading, to cover the gap between a "
                   "record's Kafka timestamp and its source event time (e.g. 30m, 2h, 1d; default 1h)")
    p.add_argument("--kafka-config", help="file with Kafka client settings (security etc.), never secrets "
                   "on the command line; also CDC_REPLAY_KAFKA_CONFIG")
    p.add_argument("--max-records-per-split", type=int, default=200_000,
                   help="upper bound of records one Spark partition reads from one Kafka partition")
    p.add_argument("--out", required=True, help="output directory, replaced atomically")

    p = sub.add_parser("merge", help="apply replayed events to table state")
    p.add_argument("--replay", required=True, action="append", help="a replay output directory (repeatable)")
    p.add_argument("--base", help="state directory of an earlier merge to continue from")
    p.add_argument("--tables", action="append", default=[], help="db.table glob(s) to merge; default all")
    p.add_argument("--history", action="store_true", help="also write a type-2 history per table")
    p.add_argument("--out", required=True, help="state directory to write, replaced atomically")

    p = sub.add_parser("verify", help="check per-table row counts and account for every record")
    p.add_argument("--replay", required=True, action="append", help="replay output directory (repeatable)")
    p.add_argument("--state", required=True, help="state directory written by merge")
    p.add_argument("--base", help="the --base state the merge started from, if any")
    p.add_argument("--reference", help="source database SQLAlchemy URL (from an env var or Airflow connection, "
                   "not typed here if it holds a password) or a JSON file of counts")
    p.add_argument("--report", help="write the JSON report here (default STATE/verification.json)")
    p.add_argument("--html", help="also write an HTML report here")

    p = sub.add_parser("archive", help="dump a Kafka topic window to files in the dump format")
    p.add_argument("--source", required=True, help="kafka://HOST:PORT[,..]/TOPIC[,..]")
    _window_args(p)
    p.add_argument("--lookback", default="1h")
    p.add_argument("--kafka-config")
    p.add_argument("--out", required=True)

    p = sub.add_parser("sample", help="write a sample archive (a small database: full sync and a day of changes)")
    p.add_argument("--format", default="canal-json")
    p.add_argument("--out", required=True, help="directory for the archive files")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--day", default="2024-01-01", help="UTC day the changes happen on")
    p.add_argument("--rows", type=int, default=200, help="rows per table in the full sync")
    p.add_argument("--changes", type=int, default=600, help="change events during the day")
    p.add_argument("--expected", help="also write the source's final state as JSON here")

    sub.add_parser("formats", help="list the registered formats and their capabilities")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module = importlib.import_module(JOBS[args.command])
    try:
        return int(module.run(args) or 0)
    except Exception as exc:  # a job failure is reported as one clear line plus the exit code
        if getattr(exc, "user_facing", False) or exc.__class__.__name__ in {"UnknownFormatError", "DecodeError",
                                                                            "UsageError"}:
            print(f"cdc-replay {args.command}: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
