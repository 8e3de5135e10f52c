"""Reference row counts from the source database (or a JSON file of counts) for `cdc-replay verify --reference`.

Where the value comes from (``--reference``):
  env:VAR        the environment variable VAR holds a SQLAlchemy URL or a JSON file path (how the DAG passes a
                 URL with a password: never on the command line, which every user of the host can read)
  conn:CONN_ID   an Airflow connection the DAG exported as ``AIRFLOW_CONN_<CONN_ID>`` (URI or JSON form);
                 mysql/mariadb become ``mysql+pymysql``, postgres ``postgresql+psycopg2``. Parsed here without
                 importing Airflow (jobs never do).
  URL            a SQLAlchemy URL typed directly, accepted only without a password
  PATH           a JSON file: {"taken_at": ISO-8601 or epoch, "tables": {"db.table": 12 | {"rows": 12,
                 "taken_at": ...}}} or simply {"db.table": 12}. ``taken_at`` says when the counts were taken:
                 verify then compares them with the rows the events imply *as of that time* (full-sync rows
                 always count), which is how a count taken at snapshot time checks the full sync.

A database is counted with one ``SELECT COUNT(*)`` per table inside one REPEATABLE READ transaction, so all
counts come from one snapshot; its time is recorded, and the counts are compared with the merged state.
Passwords never reach a report or a log: URLs are shown through ``mask_url`` and driver errors are scrubbed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional
from urllib.parse import quote, quote_plus, unquote, urlsplit

from cdc_jobs.errors import UsageError
from cdc_jobs.transforms.window import parse_instant

_SCHEMES = {
    "mysql": "mysql+pymysql", "mariadb": "mysql+pymysql", "mysql+pymysql": "mysql+pymysql",
    "mariadb+pymysql": "mysql+pymysql", "postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2",
    "postgresql+psycopg2": "postgresql+psycopg2",
}


@dataclass
class Reference:
    source: str  # what to show: a masked URL or the file path
    kind: str  # "database" | "file"
    counts: dict[str, int] = field(default_factory=dict)
    taken_at_ms: dict[str, Optional[int]] = field(default_factory=dict)  # when each count was taken, if known
    compare_as_of: bool = False  # file counts with a time: compare with the rows implied as of that time
    errors: dict[str, str] = field(default_factory=dict)  # table -> why it could not be counted

    def as_of(self, table: str) -> Optional[int]:
        return self.taken_at_ms.get(table) if self.compare_as_of else None


def mask_url(url: str) -> str:
    """The URL with its password replaced by ***; non-URLs unchanged."""
    if "://" not in url:
        return url
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy understands: mask anything between ':' and '@' in the netloc
        parts = urlsplit(url)
        if parts.password:
            return url.replace(f":{parts.password}@", ":***@", 1)
        return url


def _password(url: str) -> Optional[str]:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).password
    except Exception:
        return urlsplit(url).password


def scrub(text: str, url: str) -> str:
    """Driver messages may quote the URL; take every spelling of the password out."""
    pw = _password(url)
    if pw:
        pw = str(pw)
        for spelling in sorted({pw, unquote(pw), quote(pw, safe=""), quote_plus(pw)}, key=len, reverse=True):
            text = text.replace(spelling, "***")
    return text


def airflow_conn_to_url(value: str, conn_id: str) -> str:
    """An ``AIRFLOW_CONN_*`` value (URI or JSON) -> SQLAlchemy URL for pymysql/psycopg2."""
    from sqlalchemy.engine import URL, make_url

    value = value.strip()
    if value.startswith("{"):
        try:
            c = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--reference conn:{conn_id}: AIRFLOW_CONN_{conn_id.upper()} is not valid JSON: "
                             f"{exc.msg}") from None
        conn_type = str(c.get("conn_type", "")).lower()
        driver = _SCHEMES.get(conn_type)
        if driver is None:
            raise UsageError(f"--reference conn:{conn_id}: conn_type '{conn_type}' is not MySQL/MariaDB/PostgreSQL")
        return URL.create(driver, username=c.get("login"), password=c.get("password"), host=c.get("host"),
                          port=c.get("port"), database=c.get("schema")).render_as_string(hide_password=False)
    scheme = value.split("://", 1)[0].lower()
    driver = _SCHEMES.get(scheme)
    if driver is None:
        raise UsageError(f"--reference conn:{conn_id}: connection type '{scheme}' is not MySQL/MariaDB/PostgreSQL")
    url = make_url(driver + value[len(scheme):])
    return url.set(query={}).render_as_string(hide_password=False)  # Airflow extras are not driver options


def resolve(spec: str, env: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """``--reference`` -> ("database", url) or ("file", path)."""
    spec = spec.strip()
    if spec.startswith("env:"):
        var = spec[4:]
        value = env.get(var)
        if not value:
            raise UsageError(f"--reference env:{var}: environment variable {var} is not set")
        return ("database", value) if "://" in value else ("file", value)
    if spec.startswith(("conn:", "airflow-conn:")):
        conn_id = spec.split(":", 1)[1]
        var = f"AIRFLOW_CONN_{conn_id.upper()}"
        value = env.get(var)
        if not value:
            raise UsageError(f"--reference {spec}: environment variable {var} is not set (the DAG exports the "
                             f"connection there)")
        return "database", airflow_conn_to_url(value, conn_id)
    if "://" in spec:
        if _password(spec):
            raise UsageError(f"--reference {mask_url(spec)}: a password on the command line is visible to every "
                             f"user of this host; put the URL in an environment variable and pass env:VARNAME")
        return "database", spec
    return "file", spec


# ------------------------------------------------------------------------------------------------ counting

def _split(table: str, dialect: str, url_database: Optional[str]) -> tuple[Optional[str], str]:
    """db.table -> (schema to qualify with, table) in the dialect's terms."""
    parts = table.split(".")
    if dialect == "postgresql":
        if len(parts) == 3:
            if url_database and parts[0] != url_database:
                raise ValueError(f"is in database '{parts[0]}' but the reference connects to '{url_database}'")
            return parts[1], parts[2]
        if len(parts) == 2:
            return parts[0], parts[1]
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 1:
        return None, parts[0]
    raise ValueError("has a schema part, which MySQL/MariaDB tables do not have")


def count_database(url: str, tables: Iterable[str]) -> Reference:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    masked = mask_url(url)
    ref = Reference(source=masked, kind="database")
    try:
        engine = create_engine(url, isolation_level="REPEATABLE READ", pool_pre_ping=False)
    except Exception as exc:  # unknown driver etc.
        raise UsageError(f"--reference {masked}: {scrub(str(exc), url)}") from None
    dialect = engine.dialect.name
    quote = engine.dialect.identifier_preparer.quote
    try:
        with engine.connect() as conn, conn.begin():
            taken = int(time.time() * 1000)
            for table in sorted(set(tables)):
                try:
                    schema, name = _split(table, dialect, engine.url.database)
                except ValueError as exc:
                    ref.errors[table] = f"table {table} {exc}"
                    continue
                qualified = f"{quote(schema)}.{quote(name)}" if schema else quote(name)
                try:
                    with conn.begin_nested():  # a missing table must not abort the other counts (PostgreSQL)
                        n = conn.execute(text(f"SELECT COUNT(*) FROM {qualified}")).scalar_one()
                except SQLAlchemyError as exc:
                    ref.errors[table] = scrub(f"cannot count {table}: {_first_line(exc)}", url)
                    continue
                ref.counts[table] = int(n)
                ref.taken_at_ms[table] = taken
    except SQLAlchemyError as exc:
        raise UsageError(f"--reference {masked}: {scrub(_first_line(exc), url)}") from None
    finally:
        engine.dispose()
    return ref


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).splitlines()[0]


def load_file(path: str) -> Reference:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--reference: '{path}' is neither a database URL nor an existing JSON file")
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"--reference {path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--reference {path}: expected an object of table counts")
    if "tables" in doc:
        tables, default_at = doc["tables"], doc.get("taken_at")
        if not isinstance(tables, dict):
            raise UsageError(f"--reference {path}: field 'tables': expected an object table -> count")
    else:
        tables, default_at = doc, None
    ref = Reference(source=str(p), kind="file", compare_as_of=True)
    default_ms = _instant(default_at, path, "taken_at")
    for table, value in tables.items():
        at = default_ms
        if isinstance(value, dict):
            at = _instant(value.get("taken_at"), path, f"tables.{table}.taken_at") if "taken_at" in value \
                else default_ms
            value = value.get("rows")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"--reference {path}: field 'tables.{table}': expected a row count (integer >= 0), "
                             f"got {value!r}")
        ref.counts[table] = value
        ref.taken_at_ms[table] = at
    return ref


def _instant(value: Any, path: str, field_name: str) -> Optional[int]:
    if value is None:
        return None
    return parse_instant(str(value), f"--reference {path}: field '{field_name}'")


def load(spec: str, tables: Iterable[str], env: Mapping[str, str] = os.environ) -> Reference:
    kind, value = resolve(spec, env)
    if kind == "database":
        return count_database(value, tables)
    return load_file(value)
