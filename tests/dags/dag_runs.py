"""What the tests of real DAG runs share (test_backfill, test_browser_ui): the archives they run on, the state a
user would build by hand to compare with, the merged tables as another engine reads them, and a reference
database. Each Spark task of a DAG run is a spark-submit with its own JVM, so the runs are few."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from pathlib import Path

from deltalake import DeltaTable


def table_rows(state: Path) -> dict[str, list]:
    """Every merged table's full contents (all columns, metadata included), in a canonical row order."""
    out = {}
    for table_dir in sorted(p for p in state.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        rows = DeltaTable(str(table_dir)).to_pyarrow_table().to_pylist()  # delta-rs, as another engine reads it
        out[table_dir.name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


REFERENCE_DB = "cdc_airflow_dag_run"  # a database of its own: other tests use the server too


@contextlib.contextmanager
def reference_tables(truth: dict):
    """The sample's final row counts as tables shop.* in a fresh local PostgreSQL database, dropped afterwards."""
    import sqlalchemy as sa

    server = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:5432/postgres", isolation_level="AUTOCOMMIT")
    with server.connect() as c:
        c.execute(sa.text(f"DROP DATABASE IF EXISTS {REFERENCE_DB}"))
        c.execute(sa.text(f"CREATE DATABASE {REFERENCE_DB}"))
    engine = sa.create_engine(f"postgresql+psycopg2://postgres@127.0.0.1:5432/{REFERENCE_DB}")
    with engine.begin() as c:
        c.execute(sa.text("CREATE SCHEMA shop"))
        for table, rows in truth.items():
            name = table.split(".")[1]
            c.execute(sa.text(f"CREATE TABLE shop.{name} (n int)"))
            if rows:
                c.execute(sa.text(f"INSERT INTO shop.{name} SELECT generate_series(1, {len(rows)})"))
    engine.dispose()
    try:
        yield
    finally:
        with server.connect() as c:
            c.execute(sa.text(f"DROP DATABASE IF EXISTS {REFERENCE_DB}"))
        server.dispose()


def daily_archive(path: Path) -> dict:
    """The sample database, its full sync at 2024-01-01 00:00 and its changes spread over two days."""
    from cdc_jobs.commands.sample import simulate, write_archive

    w = simulate(seed=11, day="2024-01-01", rows=30, changes=150)
    day0 = int(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    snapshot = [e.with_(event_time_ms=day0) for e in w.snapshot]
    # Stretch the day of changes over two days, order kept: [day0 + 1 min, day0 + 2 days - 2 min). Two days are
    # enough to prove the continuation (day 2 merges onto day 1's state) and keep the suite short: every task of
    # a DAG run starts its own Spark JVM.
    changes = [e.with_(event_time_ms=day0 + 60_000 + (e.event_time_ms - day0) * 1998 // 1000) for e in w.changes]
    assert {dt.datetime.fromtimestamp(e.event_time_ms / 1000, dt.timezone.utc).day for e in changes} == {1, 2}
    write_archive(snapshot + changes, "canal-json", path / "part-00000.jsonl")
    return w.final


def one_replay(archive: Path, until: str, out: Path) -> dict[str, list]:
    """`cdc-replay replay` of the archive from 2024-01-01 to `until`, then `merge`: the state a user would build
    by hand, as table_rows. The same CLI entry point, run in this test process on its shared Spark session (a
    `cdc-replay` subprocess per command would pay two more JVM start-ups for the same code)."""
    from cdc_jobs import cli

    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--since",
                     "2024-01-01T00:00:00Z", "--until", until, "--out", str(out / "replay")]) == 0
    assert cli.main(["merge", "--replay", str(out / "replay"), "--out", str(out / "state")]) == 0
    return table_rows(out / "state")
