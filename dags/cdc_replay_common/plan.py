"""What each Spark task runs: the exact `cdc-replay` argument lists (the same as typing the CLI), derived from a
manual trigger's conf or from a pipeline and a daily interval. Pure functions over plain data; the only I/O is
checking that a merge base exists, so a missing day fails before Spark starts rather than inside it.

Secrets never appear here: the source database URL and Kafka client settings are looked up from Airflow
connections by the operator at execute time and handed to the job as environment variables.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import re
from typing import Any, Mapping

from .pipelines import SINK_RE, TABLE_RE, Pipeline, Pipelines

REFERENCE_ENV = "CDC_REPLAY_REFERENCE_URL"  # SQLAlchemy URL of the source database, for verify --reference
KAFKA_CONFIG_ENV = "CDC_REPLAY_KAFKA_CONFIG_JSON"  # Kafka client settings as a JSON object, for replay
REPORTS_ENV = "CDC_REPLAY_REPORTS_DIR"
OUTPUT_ENV = "CDC_REPLAY_OUTPUT_ROOT"


class ConfError(ValueError):
    """A manual trigger's conf cannot run; the message says which field and why."""


def spark_application() -> str:
    """Path of cdc_jobs/spark_main.py, found without importing the package (and so without pyspark)."""
    spec = importlib.util.find_spec("cdc_jobs")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the cdc_jobs package is not installed in this Airflow environment "
                           "(pip install -e <repo> or use the project image)")
    return os.path.join(list(spec.submodule_search_locations)[0], "spark_main.py")


def safe_run_id(run_id: str) -> str:
    """A run id usable in a Spark/Hadoop path: Hadoop rejects ':' in relative path components."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).strip("_") or "run"


def reports_root() -> str:
    return os.environ.get(REPORTS_ENV) or os.path.join(
        os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "cdc-replay-reports")


def output_root() -> str:
    return os.environ.get(OUTPUT_ENV) or os.path.join(
        os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "cdc-replay-output")


def report_paths(dag_id: str, run_id: str, pipeline: str | None = None) -> tuple[str, str]:
    """$CDC_REPLAY_REPORTS_DIR/<dag_id>/<run_id>[/<pipeline>]/verification.{json,html} (the plugin lists these)."""
    parts = [reports_root(), dag_id, run_id] + ([pipeline] if pipeline else [])
    base = os.path.join(*parts)
    return os.path.join(base, "verification.json"), os.path.join(base, "verification.html")


def parse_instant(value: Any, field: str) -> dt.datetime | None:
    """A date-time from the trigger form (ISO-8601, 'Z' or offset; naive means UTC) -> aware UTC datetime."""
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime):
        t = value
    else:
        try:
            t = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise ConfError(f"'{field}': {value!r} is not an ISO-8601 date-time such as 2024-01-01T00:00:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


# -- argument lists, one per subcommand, in the CLI's own terms ------------------------------------------------

def replay_args(*, sources: list[str], fmt: str, out: str, since: str | None = None, until: str | None = None,
                tables: tuple[str, ...] | list[str] = (), to_format: str | None = None, sink: str | None = None,
                lookback: str | None = None) -> list[str]:
    args = ["replay"]
    for s in sources:
        args += ["--source", s]
    args += ["--format", fmt]
    if since:
        args += ["--since", since]
    if until:
        args += ["--until", until]
    for t in tables:
        args += ["--tables", t]
    if to_format:
        args += ["--to-format", to_format]
    if sink:
        args += ["--sink", sink]
    if lookback:
        args += ["--lookback", lookback]
    return args + ["--out", out]


def merge_args(*, replays: list[str], out: str, base: str | None = None, tables: tuple[str, ...] | list[str] = (),
               history: bool = False) -> list[str]:
    args = ["merge"]
    for r in replays:
        args += ["--replay", r]
    if base:
        args += ["--base", base]
    for t in tables:
        args += ["--tables", t]
    if history:
        args.append("--history")
    return args + ["--out", out]


def verify_args(*, replays: list[str], state: str, report: str, html: str, base: str | None = None,
                reference: bool = False) -> list[str]:
    args = ["verify"]
    for r in replays:
        args += ["--replay", r]
    args += ["--state", state]
    if base:
        args += ["--base", base]
    if reference:
        # The job reads the URL from this environment variable, which the operator fills from the Airflow
        # connection at execute time: the secret is never on the command line or in rendered fields.
        args += ["--reference", f"env:{REFERENCE_ENV}"]
    return args + ["--report", report, "--html", html]


# -- manual runs (cdc_replay) ---------------------------------------------------------------------------------

def _tables(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    out = []
    for i, t in enumerate(items):
        t = str(t).strip()
        if not t:
            continue
        if not TABLE_RE.match(t):
            raise ConfError(f"'tables'[{i}]: {t!r} is not a db.table glob (no spaces; one pattern per entry)")
        out.append(t)
    return out


def manual_plan(conf: Mapping[str, Any], pipelines: Pipelines | None, *, dag_id: str, run_id: str,
                formats: Mapping[str, str]) -> dict[str, Any]:
    """Trigger-form values -> the three argument lists, or ConfError naming the field. A chosen pipeline
    supplies source, format, tables, targets and reference; non-empty form fields override it."""
    name = (conf.get("pipeline") or "").strip()
    pipe: Pipeline | None = None
    if name:
        if pipelines is None:
            raise ConfError(f"'pipeline': {name!r} was chosen but no pipelines file is configured "
                            "(Airflow Variable cdc_replay_pipelines or env CDC_REPLAY_PIPELINES)")
        if name in pipelines.errors:
            raise ConfError(f"'pipeline': {name!r} is invalid in {pipelines.path}: {pipelines.errors[name]}")
        if name not in pipelines.valid:
            raise ConfError(f"'pipeline': no pipeline {name!r} in {pipelines.path} "
                            f"(known: {', '.join(pipelines.names) or 'none'})")
        pipe = pipelines.valid[name]

    source = conf.get("source") or []
    if isinstance(source, str):
        source = [source]  # one path, glob or kafka:// URI (a Kafka URI lists its topics with commas)
    source = [str(s).strip() for s in source if str(s).strip()]
    if source and pipe:
        raise ConfError("'source': give either a pipeline or an ad-hoc source, not both")
    if not source and not pipe:
        raise ConfError("'source': choose a pipeline or give an ad-hoc source (archive path/glob or "
                        "kafka://HOST:PORT/TOPIC)")
    for s in source:
        if not s.startswith("kafka://") and not os.path.isabs(s):
            raise ConfError(f"'source': {s!r} must be an absolute path, glob or kafka:// URI (the Spark job "
                            "does not run in the directory you have in mind)")

    fmt = conf.get("format") or (pipe.format if pipe else None)
    if not fmt:
        raise ConfError("'format': an ad-hoc source needs its vendor format")
    if fmt not in formats:
        raise ConfError(f"'format': unknown format {fmt!r}")
    to_format = conf.get("to_format") or (pipe.to_format if pipe else None)
    if to_format and to_format not in formats:
        raise ConfError(f"'to_format': unknown format {to_format!r}")
    sink = conf.get("sink") or (pipe.sink if pipe else None)
    if sink and not SINK_RE.match(sink):
        raise ConfError(f"'sink': {sink!r} is not kafka://HOST:PORT/TOPIC")
    if sink and not to_format:
        raise ConfError("'sink': producing to Kafka needs a target format ('to_format')")

    since = parse_instant(conf.get("since"), "since")
    until = parse_instant(conf.get("until"), "until")
    if since and until and since >= until:
        raise ConfError(f"'until' ({iso(until)}) must be after 'since' ({iso(since)})")
    tables = _tables(conf.get("tables")) or list(pipe.tables if pipe else [])

    out_dir = (conf.get("out_dir") or "").strip()
    if out_dir and not os.path.isabs(out_dir):
        raise ConfError(f"'out_dir': {out_dir!r} must be an absolute path")
    if not out_dir:
        root = os.path.join(pipe.state_root, "manual") if pipe else output_root()
        out_dir = os.path.join(root, safe_run_id(run_id))
    base = (conf.get("base") or "").strip() or None
    if base and not os.path.isabs(base) and "://" not in base:
        raise ConfError(f"'base': {base!r} must be an absolute path of an earlier merge's state")

    merge = bool(conf.get("merge", True))
    history = bool(conf.get("history", pipe.history if pipe else False))
    reference = pipe.reference_conn_id if pipe else None
    reference = (conf.get("reference_conn_id") or "").strip() or reference
    replay_dir, state_dir = os.path.join(out_dir, "replay"), os.path.join(out_dir, "state")
    report, html = report_paths(dag_id, run_id)
    lookback = conf.get("lookback") or (pipe.lookback if pipe else None)
    return {
        "pipeline": name or None,
        "application": spark_application(),
        "out_dir": out_dir,
        "merge": merge,
        "reference_conn_id": reference,
        "kafka_conn_id": pipe.kafka_conn_id if pipe else None,
        "report": report,
        "replay_args": replay_args(sources=source or pipe.sources, fmt=fmt, out=replay_dir,
                                   since=iso(since) if since else None, until=iso(until) if until else None,
                                   tables=tables, to_format=to_format, sink=sink, lookback=lookback),
        "merge_args": merge_args(replays=[replay_dir], out=state_dir, base=base, tables=tables, history=history),
        "verify_args": verify_args(replays=[replay_dir], state=state_dir, base=base, report=report, html=html,
                                   reference=bool(reference)),
    }


# -- daily runs (cdc_daily_replay) ----------------------------------------------------------------------------

def daily_plan(pipe: Pipeline, start: dt.datetime, end: dt.datetime, *, dag_id: str, run_id: str,
               check_base: bool = True) -> dict[str, Any]:
    """One pipeline, one UTC data interval. Outputs go to <state_root>/<pipeline>/<yyyy-mm-dd>/{replay,state},
    so re-running an interval replaces exactly that day's outputs. The merge continues from the previous
    interval's state, except on the pipeline's first day (`start`), which starts from nothing."""
    day = start.astimezone(dt.timezone.utc).date()
    if day < pipe.start:
        return {"pipeline": pipe.name, "skip": f"pipeline {pipe.name!r} starts on {pipe.start}; nothing to do "
                f"for {day}"}
    day_dir = pipe.day_dir(day)
    replay_dir, state_dir = os.path.join(day_dir, "replay"), os.path.join(day_dir, "state")
    base = None
    if day > pipe.start:
        base = os.path.join(pipe.day_dir(day - dt.timedelta(days=1)), "state")
        # Outputs are published atomically, so an existing directory is a complete state.
        if check_base and pipe.merge and not os.path.isdir(base):
            raise ConfError(
                f"pipeline {pipe.name!r}: the previous day's state {base} does not exist, so {day} cannot "
                f"continue from it. Run (or backfill) cdc_daily_replay for {day - dt.timedelta(days=1)} first; "
                f"the pipeline's first day is {pipe.start}.")
    report, html = report_paths(dag_id, run_id, pipe.name)
    return {
        "pipeline": pipe.name,
        "skip": None,
        "day": day.isoformat(),
        "application": spark_application(),
        "merge": pipe.merge,
        "reference_conn_id": pipe.reference_conn_id,
        "kafka_conn_id": pipe.kafka_conn_id,
        "report": report,
        "replay_args": replay_args(sources=pipe.sources, fmt=pipe.format, out=replay_dir, since=iso(start),
                                   until=iso(end), tables=pipe.tables, to_format=pipe.to_format, sink=pipe.sink,
                                   lookback=pipe.lookback),
        "merge_args": merge_args(replays=[replay_dir], out=state_dir, base=base, tables=pipe.tables,
                                 history=pipe.history),
        "verify_args": verify_args(replays=[replay_dir], state=state_dir, base=base, report=report, html=html,
                                   reference=bool(pipe.reference_conn_id)),
    }
