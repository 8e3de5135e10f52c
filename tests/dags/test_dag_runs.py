"""Real DAG runs on local Spark and SQLite (`airflow dags test`, in a subprocess so Airflow's configuration is
this test's own). Slow: each Spark task is a spark-submit with its own JVM."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from .conftest import REPO, airflow_env

pytestmark = [pytest.mark.airflow, pytest.mark.xdist_group("airflow-runs")]  # the first test also needs db
BIN = Path(sys.executable).parent


def run(cmd: list[str], env: dict, log: Path, timeout: int = 1500) -> None:
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO)
    if proc.returncode != 0:
        tail = log.read_text()[-6000:]
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}; end of {log}:\n{tail}")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-home")
    run([str(BIN / "airflow"), "db", "migrate"], airflow_env(home), home / "migrate.log", timeout=600)
    return home


def table_rows(state: Path) -> dict[str, list]:
    """Every merged table's full contents (all columns, metadata included), in a canonical row order."""
    out = {}
    for table_dir in sorted(p for p in state.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        rows = DeltaTable(str(table_dir)).to_pyarrow_table().to_pylist()  # delta-rs, as another engine reads it
        out[table_dir.name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


def test_cdc_replay_dag_on_a_shareplex_archive_with_keys_from_the_form(home, tmp_path):
    """oms-shareplex names no key columns: the form's primary_key makes the archive mergeable from Airflow.
    Also: the progress lines reach the task log, and no secret of the run's connections shows anywhere."""
    archive, expected = tmp_path / "archive", tmp_path / "expected.json"
    run([str(BIN / "cdc-replay"), "sample", "--format", "oms-shareplex", "--out", str(archive), "--rows", "40",
         "--changes", "120", "--expected", str(expected)], airflow_env(home), tmp_path / "sample.log")
    out = tmp_path / "run"
    conf = {"source": str(archive), "format": "oms-shareplex", "to_format": "oms-default", "tables": ["shop.*"],
            "primary_key": ["shop.customers=id", "shop.order_items=order_id,line_no"], "out_dir": str(out),
            "reference_conn_id": "shop_reference", "kafka_config": "kafka_shop"}
    # Connections with passwords: a reference database whose URL carries one (a JSON counts file through
    # `sqlalchemy_url` would not), and Kafka SASL settings. PostgreSQL here trusts local connections, so the
    # password is carried and never checked: what matters is where it appears.
    truth = json.loads(expected.read_text())
    secret_db, secret_kafka = "pg-Secret-4711", "sasl-Secret-0815"
    env = airflow_env(
        home,
        AIRFLOW_CONN_SHOP_REFERENCE=json.dumps({"conn_type": "postgres", "host": "127.0.0.1", "port": 5432,
                                                "login": "postgres", "password": secret_db, "schema": REFERENCE_DB}),
        AIRFLOW_CONN_KAFKA_SHOP=json.dumps({"conn_type": "kafka", "login": "svc", "password": secret_kafka,
                                            "extra": {"security.protocol": "SASL_PLAINTEXT"}}))
    log = tmp_path / "dags-test.log"
    with reference_tables(truth):
        run([str(BIN / "airflow"), "dags", "test", "cdc_replay", "-c", json.dumps(conf)], env, log)
    reports = list((home / "reports" / "cdc_replay").glob("*/verification.json"))
    assert len(reports) == 1 and reports[0].with_suffix(".html").exists()
    results = {r["table"]: r for r in json.loads(reports[0].read_text())}
    assert set(results) == set(truth) == {"shop.customers", "shop.order_items"}
    for table, rows in truth.items():
        assert results[table]["ok"] and results[table]["actual_rows"] == len(rows), results[table]
        assert results[table]["reference_rows"] == len(rows), results[table]  # counted through the secret URL
    assert set(table_rows(out / "state")) == set(truth)
    assert (out / "replay" / "encoded").is_dir()  # the target format was written
    text = log.read_text()
    assert "--primary-key=shop.order_items=order_id,line_no" in text  # the job's exact arguments are logged
    assert "progress" in text  # the jobs' plain progress lines reach the task log
    # Secrets: not in the logs (task logs included), reports, counts.json or any other output file.
    logs = [log, *home.rglob("*.log")]
    outputs = [p for p in [*out.rglob("*"), *reports[0].parent.rglob("*")] if p.is_file()]
    for path in logs + outputs:
        data = path.read_bytes()
        for secret in (secret_db, secret_kafka):
            assert secret.encode() not in data, f"{secret} found in {path}"
    assert any(p.name == "counts.json" for p in outputs)


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
