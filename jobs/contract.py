"""The job contract: one typed definition per Spark job (`ReplayArgs`, `MergeArgs`, `VerifyArgs`).

Everything that names a job option is derived from these dataclasses, so an option added here is everywhere:

- ``jobs/cli.py`` builds its argparse subcommands from them (`add_arguments`);
- Airflow builds the exact ``spark-submit`` application arguments from an instance (`to_argv`), always in the
  ``--option=value`` form, so no value (even one starting with ``-``) can become an extra argument;
- the Airflow provider builds the `cdc_replay` trigger form's Params and the pipelines-file schema from the
  field metadata (`Option.form` / `Option.pipeline`), and a test drives every option through both.

A form/conf key is the option's name with underscores (``primary_key``, ``max_records_per_split``); the few
options that Airflow sets itself (output directories, the report path) say so in ``Option.wired``.

Pure Python with no imports beyond the standard library: the DAG processor imports it on every parse.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Sequence

KINDS = ("str", "list", "bool", "int", "choice")


@dataclass(frozen=True)
class Option:
    """How one job option looks on the CLI, in the trigger form and in the pipelines file."""

    help: str
    kind: str = "str"  # str | list (repeatable) | bool (flag) | int | choice
    required: bool = False
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    path: bool = False  # a filesystem path: confined to the configured roots when it comes from the form
    # Trigger form: the conf key (None: not a form field, see `wired`), its title and section.
    form: str | None = None
    title: str = ""
    section: str = ""
    # Pipelines file: dotted key of the pipeline entry that sets it (None: see `wired`).
    pipeline: str | None = None
    # Set by Airflow itself, not typed by a user: how (shown by the reachability test and the README).
    wired: str | None = None
    pattern: str | None = None  # a form/pipeline value must match this (whole value)
    # The form's field type when it differs from the CLI's: `html` is a switch there (the path is the reports
    # directory's), `source` one text box (a glob or a kafka:// URI covers several inputs).
    form_kind: str | None = None


def opt(default: Any = None, **kw: Any) -> Any:
    option = Option(**kw)
    if option.kind == "list":
        return field(default=(), metadata={"option": option})
    if option.kind == "bool":
        return field(default=bool(default), metadata={"option": option})
    return field(default=default, metadata={"option": option})


# A db.table glob: any characters (table names are not only ASCII) but spaces and commas, no leading '-'.
TABLE_GLOB = r"[^\s,\-][^\s,]*"
_NAME = r"[^\s,=\-][^\s,=]*"  # a column name, or a glob before '=' in a key spec
PRIMARY_KEY = _NAME + "=" + _NAME + "(," + _NAME + ")*"
DURATION = r"\d+[smhd]"
_LIMIT = r"(table:)?\d+(\.\d+)?%?"
DEAD_LETTER_BUDGET = f"(none|{_LIMIT}(,{_LIMIT})*)"  # jobs/transforms dead-letter budget syntax
# A Schema Registry base URL (credentials never in it: CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO or an Airflow connection)
REGISTRY_URL = r"https?://[A-Za-z0-9.\-_]+(:\d{1,5})?(/[A-Za-z0-9._~\-/]*)?"
SINK_URL = r"kafka://[A-Za-z0-9.\-_]+:\d{1,5}(,[A-Za-z0-9.\-_]+:\d{1,5})*/[A-Za-z0-9._\-]{1,249}"


@dataclass(frozen=True)
class JobArgs:
    command: ClassVar[str]

    @classmethod
    def options(cls) -> Iterator[tuple[str, Option, Any]]:
        """(field name, Option, default) in declaration order."""
        for f in dataclasses.fields(cls):
            yield f.name, f.metadata["option"], (() if f.metadata["option"].kind == "list" else f.default)

    @classmethod
    def flag(cls, name: str) -> str:
        return "--" + name.replace("_", "-")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        for name, o, default in cls.options():
            kw: dict[str, Any] = {"dest": name, "help": o.help}
            if o.metavar:
                kw["metavar"] = o.metavar
            if o.kind == "list":
                kw.update(action="append", default=[], required=o.required)
            elif o.kind == "bool":
                kw.update(action="store_true")
            else:
                kw.update(default=default, required=o.required)
                if o.kind == "int":
                    kw["type"] = int
                elif o.kind == "choice":
                    kw["choices"] = o.choices
            parser.add_argument(cls.flag(name), **kw)

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> "JobArgs":
        values = {}
        for name, o, _ in cls.options():
            v = getattr(ns, name)
            values[name] = tuple(v or ()) if o.kind == "list" else v
        return cls(**values)

    def to_argv(self) -> list[str]:
        """The subcommand and its options exactly as the CLI takes them. Every value is glued to its flag
        (``--tables=shop.*``): argparse then reads it as that option's value whatever it starts with."""
        argv = [self.command]
        for name, o, default in self.options():
            value = getattr(self, name)
            if o.kind == "list":
                argv += [f"{self.flag(name)}={v}" for v in value]
            elif o.kind == "bool":
                if value:
                    argv.append(self.flag(name))
            elif value is not None and value != default:
                argv.append(f"{self.flag(name)}={value}")
        return argv


@dataclass(frozen=True)
class ReplayArgs(JobArgs):
    command: ClassVar[str] = "replay"

    source: tuple[str, ...] = opt(
        kind="list", required=True, path=True, form="source", pipeline="source", form_kind="str",
        title="Ad-hoc source", section="Source",
        help="archive files (path, directory or glob; repeatable) or kafka://HOST:PORT[,..]/TOPIC[,..]")
    format: str | None = opt(
        required=True, form="format", pipeline="format", title="Source format", section="Source",
        help="vendor format of the archived messages (see `formats`)")
    since: str | None = opt(
        form="since", wired="daily DAG: the start of the data interval", title="Since (inclusive)",
        section="Window", help="start of the event-time window, inclusive: ISO-8601 (with offset; none means "
        "UTC) or epoch seconds/milliseconds")
    until: str | None = opt(
        form="until", wired="daily DAG: the end of the data interval", title="Until (exclusive)",
        section="Window", help="end of the event-time window, exclusive (same forms as --since)")
    tables: tuple[str, ...] = opt(
        kind="list", form="tables", pipeline="tables", title="Tables", section="Tables", pattern=TABLE_GLOB,
        help="db.table glob(s) to keep, e.g. 'shop.*' (repeatable or comma-separated); default all")
    primary_key: tuple[str, ...] = opt(
        kind="list", metavar="TABLES=COL[,COL]", form="primary_key", pipeline="primary_key",
        title="Primary keys", section="Tables", pattern=PRIMARY_KEY,
        help="key columns of tables whose format does not name them (SharePlex, relational rows in Mongo JSON), "
        "e.g. 'shop.order_items=order_id,line_no'; TABLES is a db.table glob; repeatable")
    to_format: str | None = opt(
        form="to_format", pipeline="targets.to_format", title="Target format", section="Target",
        help="re-encode the kept events into this format under OUT/encoded/")
    sink: str | None = opt(
        form="sink", pipeline="targets.sink", title="Sink", section="Target", pattern=SINK_URL,
        help="also write the re-encoded messages to kafka://HOST:PORT/TOPIC")
    sink_mode: str = opt(
        "transactional", kind="choice", choices=("transactional", "idempotent"), form="sink_mode",
        pipeline="targets.sink_mode", title="Sink mode", section="Target",
        help="how the sink writes to Kafka: 'transactional' (readers with read_committed see a run's messages "
        "all or none) or 'idempotent' (no duplicates per producer session, no atomicity); default transactional")
    checkpoint: str | None = opt(
        path=True, form="checkpoint", pipeline="checkpoint", title="Checkpoint", section="Window",
        help="continue an earlier replay: its output directory or checkpoint.json; the window starts where "
        "that replay's ended unless --since is given")
    lookback: str = opt(
        "1h", form="lookback", pipeline="lookback", title="Kafka lookback", section="Source", pattern=DURATION,
        help="Kafka only: how much earlier than --since to start reading, to cover the gap between a record's "
        "Kafka timestamp and its source event time (e.g. 30m, 2h, 1d; default 1h)")
    kafka_config: str | None = opt(
        path=True, form="kafka_config", pipeline="kafka_config", title="Kafka client settings",
        section="Source",
        help="file with Kafka client settings (security etc.), never secrets on the command line; also "
        "CDC_REPLAY_KAFKA_CONFIG")
    schema_registry: str | None = opt(
        form="schema_registry", pipeline="schema_registry", title="Schema Registry", section="Source",
        pattern=REGISTRY_URL,
        help="Confluent-compatible Schema Registry URL for formats in Confluent's wire format (Avro by schema id); "
        "credentials only from CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO (user:password) or an Airflow connection; also "
        "CDC_REPLAY_SCHEMA_REGISTRY")
    schemas: str | None = opt(
        path=True, form="schemas", pipeline="schemas", title="Archived schemas", section="Source",
        help="folder of archived Avro schemas (<id>.avsc, as `cdc-replay archive` writes them under _schemas/); "
        "default: the _schemas folders beside the archive files")
    max_records_per_split: int = opt(
        200_000, kind="int", form="max_records_per_split", pipeline="max_records_per_split",
        title="Max records per split", section="Source",
        help="upper bound of records one Spark partition reads from one Kafka partition")
    max_dead_letters: str | None = opt(
        metavar="SPEC", form="max_dead_letters", pipeline="max_dead_letters", title="Dead-letter budget",
        section="Verify", pattern=DEAD_LETTER_BUDGET,
        help="dead-letter budget: N (count) or P%% (of records read), 'table:' prefix for each table, "
        "comma-separated, all must hold, e.g. '100,0.1%%' or '1%%,table:5%%'; 'none' disables; default 1%% (an "
        "unreadable archive never passes)")
    out: str | None = opt(
        required=True, path=True, wired="<out_dir>/replay (form) or <state_root>/<pipeline>/<day>/replay",
        help="output directory, replaced atomically")


@dataclass(frozen=True)
class MergeArgs(JobArgs):
    command: ClassVar[str] = "merge"

    replay: tuple[str, ...] = opt(
        kind="list", required=True, path=True, wired="the replay task's --out",
        help="a replay output directory (repeatable)")
    base: str | None = opt(
        path=True, form="base", wired="daily DAG: the previous day's state", title="Base state",
        section="Merge", help="state directory of an earlier merge to continue from")
    tables: tuple[str, ...] = opt(
        kind="list", form="tables", pipeline="tables", pattern=TABLE_GLOB,
        help="db.table glob(s) to merge; default all")
    history: bool = opt(
        False, kind="bool", form="history", pipeline="merge.history", title="Keep history", section="Merge",
        help="also write a type-2 history per table")
    out: str | None = opt(
        required=True, path=True, wired="<out_dir>/state (form) or <state_root>/<pipeline>/<day>/state",
        help="state directory to write, replaced atomically")


@dataclass(frozen=True)
class VerifyArgs(JobArgs):
    command: ClassVar[str] = "verify"

    replay: tuple[str, ...] = opt(
        kind="list", required=True, path=True, wired="the replay task's --out",
        help="replay output directory (repeatable)")
    state: str | None = opt(
        required=True, path=True, wired="the merge task's --out", help="state directory written by merge")
    base: str | None = opt(
        path=True, form="base", wired="daily DAG: the previous day's state",
        help="the --base state the merge started from, if any")
    reference: str | None = opt(
        form="reference_conn_id", pipeline="reference_conn_id", title="Reference database connection",
        section="Verify",
        help="source database SQLAlchemy URL (from an env var or Airflow connection, not typed here if it holds "
        "a password) or a JSON file of counts")
    report: str | None = opt(
        path=True, wired="$CDC_REPLAY_REPORTS_DIR/<dag>/<run>[/<pipeline>]/verification.json (the plugin's "
        "report pages read it there)",
        help="write the JSON report here (default STATE/verification.json)")
    html: str | None = opt(
        path=True, form="html", pipeline="html", form_kind="bool", title="HTML report", section="Verify",
        help="also write an HTML report here")
    max_dead_letters: str | None = opt(
        metavar="SPEC", form="max_dead_letters", pipeline="max_dead_letters", pattern=DEAD_LETTER_BUDGET,
        help="dead-letter budget verify checks (same SPEC as replay); default: the job's built-in budget")


JOBS: dict[str, type[JobArgs]] = {c.command: c for c in (ReplayArgs, MergeArgs, VerifyArgs)}


def form_keys() -> dict[str, list[tuple[str, str]]]:
    """conf key -> [(command, option name)] for every option a user sets in the trigger form."""
    keys: dict[str, list[tuple[str, str]]] = {}
    for cls in JOBS.values():
        for name, o, _ in cls.options():
            if o.form:
                keys.setdefault(o.form, []).append((cls.command, name))
    return keys


def pipeline_keys() -> dict[str, list[tuple[str, str]]]:
    """dotted pipelines-file key -> [(command, option name)]."""
    keys: dict[str, list[tuple[str, str]]] = {}
    for cls in JOBS.values():
        for name, o, _ in cls.options():
            if o.pipeline:
                keys.setdefault(o.pipeline, []).append((cls.command, name))
    return keys


def option(command: str, name: str) -> Option:
    return next(o for n, o, _ in JOBS[command].options() if n == name)


def parse(argv: Sequence[str]) -> JobArgs:
    """argv from `to_argv` -> the dataclass, through the CLI's own parser (tests: the round trip is exact)."""
    from cdc_jobs.cli import build_parser

    ns = build_parser().parse_args(list(argv))
    return JOBS[ns.command].from_namespace(ns)
