"""What each Spark task runs: the exact `cdc-replay` argument lists (the same as typing the CLI), derived from a
manual trigger's conf or from a pipeline and a daily interval, as `cdc_jobs.contract` dataclasses rendered with
`to_argv()`. Pure functions over plain data; the only I/O is
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

from cdc_jobs.contract import (DEAD_LETTER_BUDGET, DURATION, PRIMARY_KEY, REGISTRY_URL, MergeArgs, ReplayArgs, VerifyArgs,
                               form_keys)

from . import confine
from .confine import ConfError
from .pipelines import CONN_ID_RE, SINK_RE, TABLE_RE, Pipeline, Pipelines, _is_file_reference

REFERENCE_ENV = "CDC_REPLAY_REFERENCE_URL"  # SQLAlchemy URL of the source database, for verify --reference
REPORTS_ENV = "CDC_REPLAY_REPORTS_DIR"
OUTPUT_ENV = "CDC_REPLAY_OUTPUT_ROOT"
# Form fields that are not job options: which pipeline, where outputs go, whether to merge.
FORM_ONLY = {"pipeline", "out_dir", "merge"}

__all__ = ["ConfError", "manual_plan", "daily_plan", "spark_application"]


def spark_application() -> str:
    """Path of cdc_jobs/spark_main.py, found without importing the package (and so without pyspark)."""
    spec = importlib.util.find_spec("cdc_jobs")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the cdc_jobs package is not installed in this Airflow environment "
                           "(pip install -e <repo> or use the project image)")
    return os.path.join(list(spec.submodule_search_locations)[0], "spark_main.py")


def safe_run_id(run_id: str) -> str:
    """A run id usable in a Spark/Hadoop path: Hadoop rejects ':' in relative path components."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).strip("_.") or "run"  # never '.' or '..'


def reports_root() -> str:
    return os.environ.get(REPORTS_ENV) or os.path.join(
        os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "cdc-replay-reports")


def output_root() -> str:
    return os.environ.get(OUTPUT_ENV) or os.path.join(
        os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "cdc-replay-output")


def report_paths(dag_id: str, run_id: str, pipeline: str | None = None) -> tuple[str, str]:
    """$CDC_REPLAY_REPORTS_DIR/<dag_id>/<run_id>[/<pipeline>]/verification.{json,html} (the plugin lists these)."""
    for part in (dag_id, run_id, pipeline):
        if part is not None and (part in ("", ".", "..") or "/" in part or "\\" in part or "\x00" in part):
            raise ConfError(f"'run_id': {part!r} cannot name a report directory")
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




# -- manual runs (cdc_replay) ---------------------------------------------------------------------------------

def _list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def _checked_list(value: Any, field: str, regex: re.Pattern, what: str) -> list[str]:
    out = []
    for i, item in enumerate(_list(value)):
        try:
            text = confine.plain(item, field)
        except ConfError as exc:
            raise ConfError(str(exc).replace(f"'{field}':", f"'{field}'[{i}]:", 1)) from None
        if not regex.match(text):
            raise ConfError(f"'{field}'[{i}]: {text!r} is not {what}")
        out.append(text)
    return out


def _text(conf: Mapping[str, Any], key: str) -> str | None:
    value = conf.get(key)
    if value in (None, ""):
        return None
    return confine.plain(value, key) or None


def manual_plan(conf: Mapping[str, Any], pipelines: Pipelines | None, *, dag_id: str, run_id: str,
                formats: Mapping[str, str]) -> dict[str, Any]:
    """Trigger-form values -> the three jobs' arguments, or ConfError naming the field. A chosen pipeline
    supplies every option it sets; non-empty form fields override it. Keys are the contract's form keys
    (`cdc_jobs.contract.form_keys`) plus pipeline, out_dir and merge."""
    unknown = sorted(set(conf) - set(form_keys()) - FORM_ONLY)
    if unknown:
        raise ConfError(f"'{unknown[0]}': not a field of this form (fields: "
                        f"{', '.join(sorted(set(form_keys()) | FORM_ONLY))})")
    name = _text(conf, "pipeline") or ""
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
    allowed = confine.roots([p.state_root for p in (pipelines.valid.values() if pipelines else [])])

    source = _list(conf.get("source")) if not isinstance(conf.get("source"), str) else [conf["source"].strip()]
    source = [confine.source(s, "source", allowed) for s in source if s]
    if source and pipe:
        raise ConfError("'source': give either a pipeline or an ad-hoc source, not both")
    if not source and not pipe:
        raise ConfError("'source': choose a pipeline or give an ad-hoc source (archive path/glob or "
                        "kafka://HOST:PORT/TOPIC)")

    fmt = _text(conf, "format") or (pipe.format if pipe else None)
    if not fmt:
        raise ConfError("'format': an ad-hoc source needs its vendor format")
    if fmt not in formats:
        raise ConfError(f"'format': unknown format {fmt!r}")
    to_format = _text(conf, "to_format") or (pipe.to_format if pipe else None)
    if to_format and to_format not in formats:
        raise ConfError(f"'to_format': unknown format {to_format!r}")
    sink = _text(conf, "sink") or (pipe.sink if pipe else None)
    if sink and not SINK_RE.match(sink):
        raise ConfError(f"'sink': {sink!r} is not kafka://HOST:PORT/TOPIC")
    if sink and not to_format:
        raise ConfError("'sink': producing to Kafka needs a target format ('to_format')")
    sink_mode = _text(conf, "sink_mode") or (pipe.sink_mode if pipe else None)
    if sink_mode and sink_mode not in ("transactional", "idempotent"):
        raise ConfError(f"'sink_mode': must be transactional or idempotent, got {sink_mode!r}")

    since = parse_instant(conf.get("since"), "since")
    until = parse_instant(conf.get("until"), "until")
    if since and until and since >= until:
        raise ConfError(f"'until' ({iso(until)}) must be after 'since' ({iso(since)})")
    tables = (_checked_list(conf.get("tables"), "tables", TABLE_RE, "a db.table glob (no spaces; one pattern "
                            "per entry)") or list(pipe.tables if pipe else []))
    primary_key = (_checked_list(conf.get("primary_key"), "primary_key", re.compile(f"^{PRIMARY_KEY}$"),
                                 "TABLES=COL[,COL] (e.g. shop.order_items=order_id,line_no)")
                   or list(pipe.primary_key if pipe else []))

    out_dir = _text(conf, "out_dir")
    if out_dir:
        out_dir = confine.path(out_dir, "out_dir", allowed)
    else:
        root = os.path.join(pipe.state_root, "manual") if pipe else output_root()
        out_dir = os.path.join(root, safe_run_id(run_id))
    base = _text(conf, "base")
    if base:
        base = confine.path(base, "base", allowed)
    checkpoint = _text(conf, "checkpoint")
    if checkpoint:
        checkpoint = confine.path(checkpoint, "checkpoint", allowed)

    kafka_conn_id = pipe.kafka_conn_id if pipe else None
    kafka_file = pipe.kafka_config_file if pipe else None
    kafka_config = _text(conf, "kafka_config")
    if kafka_config:
        if _is_file_reference(kafka_config):
            kafka_file, kafka_conn_id = confine.path(kafka_config, "kafka_config", allowed), None
        elif CONN_ID_RE.match(kafka_config):
            kafka_file, kafka_conn_id = None, kafka_config
        else:
            raise ConfError(f"'kafka_config': {kafka_config!r} is neither an Airflow connection id nor an "
                            "absolute settings file path")
    registry = _text(conf, "schema_registry") or (pipe.schema_registry if pipe else None)
    if registry:
        registry = confine.pattern(registry, "schema_registry", REGISTRY_URL, "an http(s) URL without credentials")
    schemas = _text(conf, "schemas")
    schemas = confine.path(schemas, "schemas", allowed) if schemas else (pipe.schemas if pipe else None)
    lookback = _text(conf, "lookback") or (pipe.lookback if pipe else None)
    if lookback:
        lookback = confine.pattern(lookback, "lookback", DURATION, "a duration like 30m, 2h or 1d")
    max_records = conf.get("max_records_per_split")
    if max_records in (None, ""):
        max_records = pipe.max_records_per_split if pipe else None
    elif isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
        raise ConfError(f"'max_records_per_split': must be a positive whole number, got {max_records!r}")
    budget = _text(conf, "max_dead_letters") or (pipe.max_dead_letters if pipe else None)
    if budget:
        budget = confine.pattern(budget, "max_dead_letters", DEAD_LETTER_BUDGET,
                                 "a count (100), a fraction (0.1%) or per-table limits (1%,table:5%), or none")
    reference = _text(conf, "reference_conn_id") or (pipe.reference_conn_id if pipe else None)
    if reference and not CONN_ID_RE.match(reference):
        raise ConfError(f"'reference_conn_id': {reference!r} is not an Airflow connection id")

    merge = _flag(conf, "merge", pipe.merge if pipe else True)
    history = _flag(conf, "history", pipe.history if pipe else False)
    html = _flag(conf, "html", pipe.html if pipe else True)
    replay_dir, state_dir = os.path.join(out_dir, "replay"), os.path.join(out_dir, "state")
    report, html_path = report_paths(dag_id, run_id)
    replay = ReplayArgs(
        source=tuple(source or pipe.sources), format=fmt, since=iso(since) if since else None,
        until=iso(until) if until else None, tables=tuple(tables), primary_key=tuple(primary_key),
        to_format=to_format, sink=sink, sink_mode=sink_mode or "transactional", checkpoint=checkpoint,
        lookback=lookback or "1h", kafka_config=kafka_file, max_records_per_split=max_records or 200_000,
        max_dead_letters=budget, schema_registry=registry, schemas=schemas, out=replay_dir)
    return _plan(
        pipeline=name or None, out_dir=out_dir, merge=merge, reference=reference, kafka_conn_id=kafka_conn_id,
        report=report, state_dir=state_dir, replay=replay,
        merge_args=MergeArgs(replay=(replay_dir,), base=base, tables=tuple(tables), history=history, out=state_dir),
        verify=VerifyArgs(replay=(replay_dir,), state=state_dir, base=base,
                          reference=f"env:{REFERENCE_ENV}" if reference else None, report=report,
                          html=html_path if html else None, max_dead_letters=budget))


def _flag(conf: Mapping[str, Any], key: str, default: bool) -> bool:
    value = conf.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfError(f"'{key}': must be true or false, got {value!r}")
    return value


def _plan(*, pipeline: str | None, out_dir: str | None, merge: bool, reference: str | None,
          kafka_conn_id: str | None, report: str, state_dir: str, replay: ReplayArgs, merge_args: MergeArgs,
          verify: VerifyArgs, **extra: Any) -> dict[str, Any]:
    """What the task group needs, as plain JSON (it travels through XCom). Secrets are not in it: only the
    connection ids, which the operator's hooks resolve at execute time."""
    return {
        "pipeline": pipeline,
        "application": spark_application(),
        "out_dir": out_dir,
        "state_dir": state_dir,
        "tables": list(merge_args.tables),
        "merge": merge,
        "reference_conn_id": reference,
        "kafka_conn_id": kafka_conn_id,
        "report": report,
        "replay_args": replay.to_argv(),
        "merge_args": merge_args.to_argv(),
        "verify_args": verify.to_argv(),
        **extra,
    }


# -- daily runs (cdc_daily_replay) ----------------------------------------------------------------------------

def _output_exists(path: str) -> bool:
    """A committed output: a directory on POSIX, or a commit pointer on an object store (s3a://, gs://, ...)."""
    if "://" not in path or path.startswith("file://"):
        return os.path.isdir(path[len("file://"):] if path.startswith("file://") else path)
    from cdc_jobs.io.atomic import read_pointer  # pyarrow.fs only; the credentials are the task's environment

    return read_pointer(path) is not None


def daily_plan(pipe: Pipeline, start: dt.datetime, end: dt.datetime, *, dag_id: str, run_id: str,
               check_base: bool = True) -> dict[str, Any]:
    """One pipeline, one UTC data interval. Outputs go to <state_root>/<pipeline>/<yyyy-mm-dd>/{replay,state},
    so re-running an interval replaces exactly that day's outputs. The merge continues from the previous
    interval's state, except on the pipeline's first day (`start`), which starts from nothing; with
    `checkpoint: true` the replay also continues from the previous day's replay checkpoint."""
    day = start.astimezone(dt.timezone.utc).date()
    if day < pipe.start:
        return {"pipeline": pipe.name, "skip": f"pipeline {pipe.name!r} starts on {pipe.start}; nothing to do "
                f"for {day}"}
    day_dir = pipe.day_dir(day)
    replay_dir, state_dir = os.path.join(day_dir, "replay"), os.path.join(day_dir, "state")
    base = checkpoint = None
    if day > pipe.start:
        previous = pipe.day_dir(day - dt.timedelta(days=1))
        base = os.path.join(previous, "state")
        # Outputs are published atomically, so an existing directory is a complete state.
        if check_base and pipe.merge and not _output_exists(base):
            raise ConfError(
                f"pipeline {pipe.name!r}: the previous day's state {base} does not exist, so {day} cannot "
                f"continue from it. Run (or backfill) cdc_daily_replay for {day - dt.timedelta(days=1)} first; "
                f"the pipeline's first day is {pipe.start}.")
        if pipe.checkpoint:
            checkpoint = os.path.join(previous, "replay")
    report, html = report_paths(dag_id, run_id, pipe.name)
    replay = ReplayArgs(
        source=tuple(pipe.sources), format=pipe.format, since=iso(start), until=iso(end), tables=pipe.tables,
        primary_key=pipe.primary_key, to_format=pipe.to_format, sink=pipe.sink,
        sink_mode=pipe.sink_mode or "transactional", checkpoint=checkpoint, lookback=pipe.lookback or "1h",
        kafka_config=pipe.kafka_config_file, max_records_per_split=pipe.max_records_per_split or 200_000,
        max_dead_letters=pipe.max_dead_letters, schema_registry=pipe.schema_registry, schemas=pipe.schemas,
        out=replay_dir)
    return _plan(
        pipeline=pipe.name, out_dir=day_dir, merge=pipe.merge, reference=pipe.reference_conn_id,
        kafka_conn_id=pipe.kafka_conn_id, report=report, state_dir=state_dir, replay=replay,
        merge_args=MergeArgs(replay=(replay_dir,), base=base, tables=pipe.tables, history=pipe.history,
                             out=state_dir),
        verify=VerifyArgs(replay=(replay_dir,), state=state_dir, base=base,
                          reference=f"env:{REFERENCE_ENV}" if pipe.reference_conn_id else None, report=report,
                          html=html if pipe.html else None, max_dead_letters=pipe.max_dead_letters),
        skip=None, day=day.isoformat())
