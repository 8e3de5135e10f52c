"""The pipelines file: named, validated replay pipelines that the DAGs run.

    version: 1
    defaults:                       # optional; any pipeline field, used where a pipeline leaves it out
      targets: {state_root: /data/cdc-state}
    pipelines:
      shop:
        description: the shop database, from the archived Canal topic
        source:
          archive: ../var/sample/archive          # file, directory or glob, or a list of them
          # or: kafka: {bootstrap: "broker:9092", topics: [shop.cdc], conn_id: kafka_shop, lookback: 1h}
        format: canal-json
        tables: ["shop.*"]                         # db.table globs; default: every table
        start: 2024-01-01                          # first daily interval: it starts from no state
        targets:
          state_root: ../var/pipelines             # <state_root>/<pipeline>/<yyyy-mm-dd>/{replay,state}
          to_format: oms-default                   # optional re-encode
          sink: kafka://broker:9092/shop.oms       # optional: also produce the re-encoded messages there
        merge: {enabled: true, history: false}
        reference_conn_id: shop_mysql              # optional Airflow connection of the source database
        # Any other option of replay/merge/verify, by its name with underscores (cdc_jobs.contract):
        primary_key: ["shop.order_items=order_id,line_no"]   # formats without key names (SharePlex, ...)
        lookback: 2h                               # Kafka: read this much before the window
        kafka_config: kafka_shop                   # Airflow connection id, or a settings file path
        schema_registry: http://registry:8081      # Confluent wire-format Avro: schemas by id (or `schemas:` folder)
        max_records_per_split: 200000
        max_dead_letters: "0.1%"                   # replay and verify; default: the jobs' built-in budget
        checkpoint: true                           # each day continues from the previous day's checkpoint
        html: true                                 # write the HTML verification report (default)
        # targets.sink_mode: transactional | idempotent

Relative paths are resolved against the directory of the pipelines file, so the same file works whatever the
working directory of the process that reads it. Every problem is reported as ``pipeline 'NAME': field 'PATH':
what is wrong``; one bad pipeline never hides the good ones (``load`` returns both).
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from cdc_jobs.contract import (DEAD_LETTER_BUDGET, DURATION, PRIMARY_KEY, REGISTRY_URL, SINK_URL, TABLE_GLOB,
                               pipeline_keys)

VARIABLE = "cdc_replay_pipelines"  # Airflow Variable holding the path of the pipelines file
ENV = "CDC_REPLAY_PIPELINES"  # fallback: environment variable with the path

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # used in paths and task labels
TABLE_RE = re.compile(f"^{TABLE_GLOB}$")  # one db.table glob; commas separate patterns on the CLI
BOOTSTRAP_RE = re.compile(r"^[^\s/,]+:\d+(,[^\s/,]+:\d+)*$")
TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
LOOKBACK_RE = re.compile(f"^{DURATION}$")
SINK_RE = re.compile(f"^{SINK_URL}$")
PRIMARY_KEY_RE = re.compile(f"^{PRIMARY_KEY}$")
BUDGET_RE = re.compile(f"^{DEAD_LETTER_BUDGET}$")

# The schema follows the job contract (cdc_jobs.contract): every option a pipeline may set has its dotted key
# there (`Option.pipeline`), so a new job option is accepted here without editing this file.
_CONTRACT_KEYS = pipeline_keys()
PIPELINE_KEYS = {"description", "source", "start", "targets", "merge"} | {k for k in _CONTRACT_KEYS if "." not in k}
SOURCE_KEYS = {"archive", "kafka"}
KAFKA_KEYS = {"bootstrap", "topics", "conn_id", "lookback"}
TARGET_KEYS = {"state_root"} | {k.split(".", 1)[1] for k in _CONTRACT_KEYS if k.startswith("targets.")}
MERGE_KEYS = {"enabled"} | {k.split(".", 1)[1] for k in _CONTRACT_KEYS if k.startswith("merge.")}
CONN_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,249}$")


class PipelineError(ValueError):
    """One field of one pipeline is wrong. The message names both, so a user can find it in a long file."""

    def __init__(self, pipeline: str, field_path: str, reason: str):
        super().__init__(f"pipeline '{pipeline}': field '{field_path}': {reason}")
        self.pipeline, self.field, self.reason = pipeline, field_path, reason


class PipelinesFileError(ValueError):
    """The file as a whole cannot be used (missing, not YAML, no `pipelines` mapping)."""


@dataclass(frozen=True)
class Pipeline:
    name: str
    format: str
    start: dt.date
    state_root: str  # already joined with the pipeline name: <state_root>/<name>
    archive: tuple[str, ...] = ()
    kafka_bootstrap: str | None = None
    kafka_topics: tuple[str, ...] = ()
    kafka_conn_id: str | None = None
    lookback: str | None = None
    tables: tuple[str, ...] = ()
    to_format: str | None = None
    sink: str | None = None
    merge: bool = True
    history: bool = False
    reference_conn_id: str | None = None
    description: str = ""
    primary_key: tuple[str, ...] = ()
    sink_mode: str | None = None
    checkpoint: bool = False  # continue each day's replay from the previous day's checkpoint
    kafka_config_file: str | None = None
    max_records_per_split: int | None = None
    max_dead_letters: str | None = None
    html: bool = True
    schema_registry: str | None = None
    schemas: str | None = None

    @property
    def sources(self) -> list[str]:
        """The `--source` values of `cdc-replay replay`."""
        if self.kafka_topics:
            return [f"kafka://{self.kafka_bootstrap}/{','.join(self.kafka_topics)}"]
        return list(self.archive)

    def day_dir(self, day: dt.date) -> str:
        return os.path.join(self.state_root, day.isoformat())


@dataclass
class Pipelines:
    """Result of loading a file: the valid pipelines, and one message per invalid one."""

    path: str
    valid: dict[str, Pipeline] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return sorted([*self.valid, *self.errors])


def _formats() -> Mapping[str, str]:
    # The registry is a plain dict of names -> module paths; importing it loads no codec.
    from cdc_codecs.registry import FORMATS

    return FORMATS


def _unknown(what: str, value: Any, known) -> str:
    close = difflib.get_close_matches(str(value), list(known), n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown {what} {value!r}{hint} (known: {', '.join(sorted(known))})"


class _Fields:
    """Typed accessors that raise PipelineError naming the pipeline and the dotted field path."""

    def __init__(self, pipeline: str, base_dir: Path):
        self.pipeline, self.base_dir = pipeline, base_dir

    def fail(self, path: str, reason: str) -> PipelineError:
        return PipelineError(self.pipeline, path, reason)

    def mapping(self, value: Any, path: str, allowed: set[str]) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a mapping, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                raise self.fail(f"{path}.{key}" if path else str(key), _unknown("field", key, allowed))
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern | None = None, what: str = "") -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, f"must be a non-empty string, got {value!r}")
        if pattern is not None and not pattern.match(value):
            raise self.fail(path, f"{value!r} is not {what or 'valid'}")
        return value

    def strings(self, value: Any, path: str, pattern: re.Pattern | None = None, what: str = "",
                allow_empty: bool = True) -> tuple[str, ...]:
        if value is None:
            value = []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.fail(path, f"must be a string or a list of strings, got {type(value).__name__}")
        if not value and not allow_empty:
            raise self.fail(path, "must not be empty")
        return tuple(self.string(v, f"{path}[{i}]", pattern, what) for i, v in enumerate(value))

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(path, f"must be true or false, got {value!r}")
        return value

    def fmt(self, value: Any, path: str) -> str:
        name = self.string(value, path)
        if name not in _formats():
            raise self.fail(path, _unknown("format", name, _formats()))
        return name

    def path(self, value: str) -> str:
        if "://" in value:  # a storage URI (s3a://, gs://, hdfs://, ...): taken as written
            return value
        p = Path(os.path.expanduser(value))
        return str(p if p.is_absolute() else (self.base_dir / p).resolve())


def _merged(defaults: dict, spec: dict) -> dict:
    """A pipeline's fields over the file's defaults (one level deep for the nested sections)."""
    out = dict(defaults)
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def parse_pipeline(name: Any, spec: Any, base_dir: Path, defaults: dict | None = None) -> Pipeline:
    """One pipeline entry -> Pipeline, or PipelineError naming the first wrong field."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PipelineError(str(name), "name", "must be 1-64 letters, digits, '_', '.' or '-', starting with a "
                            "letter or digit (it is used in directory names)")
    f = _Fields(name, base_dir)
    if not isinstance(spec, dict):
        raise f.fail("", f"the pipeline must be a mapping of fields, got {type(spec).__name__}")
    spec = f.mapping(_merged(defaults or {}, spec), "", PIPELINE_KEYS)

    source = f.mapping(spec.get("source"), "source", SOURCE_KEYS)
    if bool(source.get("archive")) == bool(source.get("kafka")):
        raise f.fail("source", "give exactly one of 'archive' (files) or 'kafka' (topics)")
    archive: tuple[str, ...] = ()
    bootstrap = conn_id = lookback = None
    topics: tuple[str, ...] = ()
    if source.get("archive"):
        archive = tuple(f.path(p) for p in f.strings(source["archive"], "source.archive", allow_empty=False))
    else:
        kafka = f.mapping(source["kafka"], "source.kafka", KAFKA_KEYS)
        bootstrap = f.string(kafka.get("bootstrap"), "source.kafka.bootstrap", BOOTSTRAP_RE,
                             "HOST:PORT[,HOST:PORT...]")
        topics = f.strings(kafka.get("topics"), "source.kafka.topics", TOPIC_RE, "a Kafka topic name",
                           allow_empty=False)
        if kafka.get("conn_id") is not None:
            conn_id = f.string(kafka["conn_id"], "source.kafka.conn_id")
        if kafka.get("lookback") is not None:
            lookback = f.string(str(kafka["lookback"]), "source.kafka.lookback", LOOKBACK_RE,
                                "a duration like 30m, 2h or 1d")

    fmt = f.fmt(spec.get("format"), "format")
    tables = f.strings(spec.get("tables"), "tables", TABLE_RE, "a db.table glob without spaces or commas")

    start = spec.get("start")
    if isinstance(start, str):
        try:
            start = dt.date.fromisoformat(start)
        except ValueError:
            raise f.fail("start", f"{start!r} is not a date (YYYY-MM-DD)") from None
    if isinstance(start, dt.datetime) or not isinstance(start, dt.date):
        raise f.fail("start", f"must be the date of the first daily interval (YYYY-MM-DD), got {start!r}")

    targets = f.mapping(spec.get("targets"), "targets", TARGET_KEYS)
    state_root = f.path(f.string(targets.get("state_root"), "targets.state_root"))
    to_format = f.fmt(targets["to_format"], "targets.to_format") if targets.get("to_format") else None
    sink = None
    if targets.get("sink"):
        sink = f.string(targets["sink"], "targets.sink", SINK_RE, "kafka://HOST:PORT/TOPIC")
        if to_format is None:
            raise f.fail("targets.sink", "a sink needs 'targets.to_format' (the format to produce)")

    merge = f.mapping(spec.get("merge"), "merge", MERGE_KEYS)
    reference = spec.get("reference_conn_id")
    if reference is not None:
        reference = f.string(reference, "reference_conn_id")
    description = spec.get("description") or ""
    if not isinstance(description, str):
        raise f.fail("description", "must be text")

    # Job options set by their own names (cdc_jobs.contract).
    primary_key = f.strings(spec.get("primary_key"), "primary_key", PRIMARY_KEY_RE,
                            "TABLES=COL[,COL] (e.g. shop.order_items=order_id,line_no)")
    if spec.get("lookback") is not None:
        if lookback is not None:
            raise f.fail("lookback", "given twice: here and as source.kafka.lookback")
        lookback = f.string(str(spec["lookback"]), "lookback", LOOKBACK_RE, "a duration like 30m, 2h or 1d")
    kafka_config_file = None
    if spec.get("kafka_config") is not None:
        value = f.string(spec["kafka_config"], "kafka_config")
        if _is_file_reference(value):
            kafka_config_file = f.path(value)
        elif conn_id is not None:
            raise f.fail("kafka_config", "given twice: here and as source.kafka.conn_id")
        elif not CONN_ID_RE.match(value):
            raise f.fail("kafka_config", f"{value!r} is neither an Airflow connection id nor a settings file path")
        else:
            conn_id = value
    sink_mode = targets.get("sink_mode")
    if sink_mode is not None:
        from cdc_jobs.contract import option

        choices = option("replay", "sink_mode").choices
        if sink_mode not in choices:
            raise f.fail("targets.sink_mode", f"must be one of {', '.join(choices)}, got {sink_mode!r}")
    max_records = spec.get("max_records_per_split")
    if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)
                                    or max_records < 1):
        raise f.fail("max_records_per_split", f"must be a positive whole number, got {max_records!r}")
    budget = spec.get("max_dead_letters")
    if budget is not None:
        budget = f.string(str(budget), "max_dead_letters", BUDGET_RE, "a count (100), a fraction (0.1%) or "
                          "per-table limits (1%,table:5%), or none")

    registry = spec.get("schema_registry")
    if registry is not None:
        registry = f.string(str(registry), "schema_registry", re.compile(REGISTRY_URL + r"\Z"),
                            "an http(s) URL without credentials")
    schemas = f.path(f.string(spec["schemas"], "schemas")) if spec.get("schemas") is not None else None

    return Pipeline(
        name=name, format=fmt, start=start, state_root=os.path.join(state_root, name), archive=archive,
        kafka_bootstrap=bootstrap, kafka_topics=topics, kafka_conn_id=conn_id, lookback=lookback,
        tables=tables, to_format=to_format, sink=sink,
        merge=f.boolean(merge.get("enabled"), "merge.enabled", True),
        history=f.boolean(merge.get("history"), "merge.history", False),
        reference_conn_id=reference, description=description, primary_key=primary_key, sink_mode=sink_mode,
        checkpoint=f.boolean(spec.get("checkpoint"), "checkpoint", False), kafka_config_file=kafka_config_file,
        max_records_per_split=max_records, max_dead_letters=budget,
        html=f.boolean(spec.get("html"), "html", True), schema_registry=registry, schemas=schemas,
    )


def _is_file_reference(value: str) -> bool:
    """`kafka_config` names a settings file (a path) or an Airflow connection (an id without slashes)."""
    return "/" in value or value.endswith((".json", ".properties", ".conf"))


def parse(document: Any, base_dir: Path, path: str = "<pipelines>") -> Pipelines:
    if not isinstance(document, dict):
        raise PipelinesFileError(f"{path}: expected a mapping with a 'pipelines' key, got "
                                 f"{type(document).__name__}")
    unknown = set(document) - {"version", "defaults", "pipelines"}
    if unknown:
        raise PipelinesFileError(f"{path}: {_unknown('top-level key', sorted(unknown)[0], ['version', 'defaults', 'pipelines'])}")
    if document.get("version", 1) != 1:
        raise PipelinesFileError(f"{path}: version {document['version']!r} is not supported (expected 1)")
    defaults = document.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise PipelinesFileError(f"{path}: 'defaults' must be a mapping")
    entries = document.get("pipelines")
    if not isinstance(entries, dict) or not entries:
        raise PipelinesFileError(f"{path}: 'pipelines' must be a non-empty mapping of name -> pipeline")
    result = Pipelines(path=path)
    for name, spec in entries.items():
        try:
            result.valid[str(name)] = parse_pipeline(name, spec, base_dir, defaults)
        except PipelineError as exc:
            result.errors[str(name)] = str(exc)
    return result


def load(path: str | os.PathLike) -> Pipelines:
    """Read and validate a pipelines file. Raises PipelinesFileError only for file-level problems."""
    import yaml  # only when a file is actually read

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelinesFileError(f"cannot read the pipelines file {str(p)!r}: {exc.strerror or exc}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PipelinesFileError(f"{p}: not valid YAML: {exc}") from None
    return parse(document, p.resolve().parent, str(p))


def configured_path(variable_value: str | None = None) -> str | None:
    """Where the pipelines file is: the Airflow Variable (its value passed in by the caller, which may read it
    from the metadata DB at run time; at parse time only its AIRFLOW_VAR_ env form is used), else the env var."""
    for value in (variable_value, os.environ.get("AIRFLOW_VAR_" + VARIABLE.upper()), os.environ.get(ENV)):
        if value and value.strip():
            return value.strip()
    return None
