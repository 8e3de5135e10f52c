"""`cdc-replay`: the same jobs Airflow runs, from a shell. Also the spark-submit entry point (spark_main.py).

Job modules are imported only when their subcommand runs, so `cdc-replay formats` and argument errors are
instant and do not start Spark.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from cdc_jobs.contract import MergeArgs, ReplayArgs, VerifyArgs

JOBS = {
    "replay": "cdc_jobs.commands.replay",
    "merge": "cdc_jobs.commands.merge",
    "verify": "cdc_jobs.commands.verify",
    "archive": "cdc_jobs.commands.archive",
    "sample": "cdc_jobs.commands.sample",
    "formats": "cdc_jobs.commands.formats",
}


SPARK_JOBS = {"replay", "merge", "verify", "archive"}


def _window_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="start of the event-time window, inclusive: ISO-8601 (with offset; none means "
                   "UTC) or epoch seconds/milliseconds")
    p.add_argument("--until", help="end of the event-time window, exclusive (same forms as --since)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cdc-replay", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # replay, merge and verify: their options are the job contract (cdc_jobs.contract), which Airflow's form,
    # pipelines file and spark-submit arguments are derived from too.
    for cls, text in ((ReplayArgs, "decode an archive (files or Kafka) into canonical events; optionally "
                       "re-encode them"),
                      (MergeArgs, "apply replayed events to table state"),
                      (VerifyArgs, "check per-table row counts and account for every record")):
        cls.add_arguments(sub.add_parser(cls.command, help=text))

    p = sub.add_parser("archive", help="dump a Kafka topic window to files in the dump format")
    p.add_argument("--source", required=True, help="kafka://HOST:PORT[,..]/TOPIC[,..]")
    _window_args(p)
    p.add_argument("--lookback", default="1h")
    p.add_argument("--kafka-config")
    p.add_argument("--schema-registry", help="archive the Avro schemas of Confluent wire-format records from this "
                   "registry into OUT/_schemas/ (credentials: CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO)")
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
        if args.command in SPARK_JOBS:
            # Stages, tasks, records read and rate while the job runs (jobs/progress.py): a bar on a
            # terminal, a plain line every few seconds in logs.
            from cdc_jobs.progress import Reporter

            with Reporter(f"cdc-replay {args.command}"):
                return int(module.run(args) or 0)
        return int(module.run(args) or 0)
    except Exception as exc:  # a job failure is reported as one clear line plus the exit code
        if getattr(exc, "user_facing", False) or exc.__class__.__name__ in {"UnknownFormatError", "DecodeError",
                                                                            "UsageError"}:
            print(f"cdc-replay {args.command}: {exc}", file=sys.stderr)
            return int(getattr(exc, "exit_code", 2))
        raise


if __name__ == "__main__":
    sys.exit(main())
