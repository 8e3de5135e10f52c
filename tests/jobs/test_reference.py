"""Reference counts: where the URL comes from, that passwords never show, JSON count files, and counting real
MariaDB / PostgreSQL tables."""

from __future__ import annotations

import json
import uuid

import pytest
from services import missing

from cdc_jobs.io import reference as ref
from cdc_jobs.errors import UsageError


def test_env_and_airflow_connection_forms_resolve_to_driver_urls():
    env = {"REF": "mysql+pymysql://u:pw@db:3306/shop",
           "AIRFLOW_CONN_SHOP_MYSQL": "mysql://u:p%40ss@db:3306/shop?charset=utf8",
           "AIRFLOW_CONN_SHOP_PG": json.dumps({"conn_type": "postgres", "host": "pg", "login": "u",
                                               "password": "x/y", "port": 5432, "schema": "shop"})}
    assert ref.resolve("env:REF", env) == ("database", "mysql+pymysql://u:pw@db:3306/shop")
    kind, url = ref.resolve("conn:shop_mysql", env)
    assert kind == "database" and url.startswith("mysql+pymysql://u:") and url.endswith("@db:3306/shop")
    from sqlalchemy.engine import make_url

    assert make_url(url).password == "p@ss"  # Airflow URIs percent-encode the password
    kind, url = ref.resolve("conn:shop_pg", env)
    assert make_url(url).drivername == "postgresql+psycopg2" and make_url(url).password == "x/y"
    assert ref.resolve("/some/counts.json", env) == ("file", "/some/counts.json")


def test_password_on_the_command_line_is_refused_and_masked():
    with pytest.raises(UsageError) as exc:
        ref.resolve("mysql+pymysql://root:hunter2@127.0.0.1/db", {})
    assert "hunter2" not in str(exc.value) and "***" in str(exc.value) and "env:" in str(exc.value)
    with pytest.raises(UsageError, match="ABSENT_VAR is not set"):
        ref.resolve("env:ABSENT_VAR", {})
    with pytest.raises(UsageError, match="AIRFLOW_CONN_NOPE is not set"):
        ref.resolve("conn:nope", {})
    assert ref.mask_url("postgresql+psycopg2://u:s%2Fecret@h/db") == "postgresql+psycopg2://u:***@h/db"
    assert ref.scrub("failed for s/ecret and s%2Fecret", "postgresql+psycopg2://u:s%2Fecret@h/db") == \
        "failed for *** and ***"


def test_count_file_forms_and_errors(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"taken_at": "2024-01-01T00:00:00Z",
                             "tables": {"a.t": 3, "a.u": {"rows": 5, "taken_at": 1704070800000}}}))
    r = ref.load_file(str(f))
    assert r.counts == {"a.t": 3, "a.u": 5}
    assert r.as_of("a.t") == 1704067200000 and r.as_of("a.u") == 1704070800000
    f.write_text(json.dumps({"a.t": 7}))
    r = ref.load_file(str(f))
    assert r.counts == {"a.t": 7} and r.as_of("a.t") is None
    f.write_text(json.dumps({"tables": {"a.t": -1}}))
    with pytest.raises(UsageError, match=r"field 'tables.a.t': expected a row count"):
        ref.load_file(str(f))
    f.write_text(json.dumps({"taken_at": "yesterday", "tables": {}}))
    with pytest.raises(UsageError, match="taken_at"):
        ref.load_file(str(f))
    with pytest.raises(UsageError, match="neither a database URL nor an existing JSON file"):
        ref.load_file(str(tmp_path / "missing.json"))


# ----------------------------------------------------------------------------------------------- databases

def _mariadb():
    import pymysql

    try:
        return pymysql.connect(host="127.0.0.1", port=3306, user="root", connect_timeout=3, autocommit=True)
    except Exception as exc:  # pragma: no cover - depends on the machine
        missing(f"MariaDB is not reachable on 127.0.0.1:3306 as root: {exc}")


@pytest.mark.db
def test_count_mariadb_tables_in_one_snapshot_and_name_missing_ones():
    conn = _mariadb()
    db = f"cdcref_{uuid.uuid4().hex[:10]}"
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE `{db}`")
    try:
        cur.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO `{db}`.a VALUES (1), (2), (3)")
        cur.execute(f"CREATE TABLE `{db}`.`we.ird` (id INT)")
        r = ref.count_database(f"mysql+pymysql://root@127.0.0.1:3306/{db}",
                               [f"{db}.a", f"{db}.missing", f"{db}.x.y"])
        assert r.counts == {f"{db}.a": 3}
        assert "doesn't exist" in r.errors[f"{db}.missing"]
        assert "schema part" in r.errors[f"{db}.x.y"]
        assert r.taken_at_ms[f"{db}.a"] > 0 and r.as_of(f"{db}.a") is None  # live counts compare with the state
    finally:
        cur.execute(f"DROP DATABASE `{db}`")
        conn.close()


@pytest.mark.db
def test_wrong_password_error_does_not_show_the_password():
    _mariadb().close()
    with pytest.raises(UsageError) as exc:
        ref.load("env:REF_URL", ["x.y"], {"REF_URL": "mysql+pymysql://cdc_nobody:Sup3rS3cret@127.0.0.1:3306/x"})
    assert "Sup3rS3cret" not in str(exc.value) and "***" in str(exc.value)


@pytest.mark.db
def test_count_postgresql_schema_tables():
    import psycopg2

    try:
        conn = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=3)
    except Exception as exc:  # pragma: no cover
        missing(f"PostgreSQL is not reachable on 127.0.0.1:5432: {exc}")
    conn.autocommit = True
    schema = f"cdcref_{uuid.uuid4().hex[:10]}"
    cur = conn.cursor()
    cur.execute(f'CREATE SCHEMA "{schema}"')
    try:
        cur.execute(f'CREATE TABLE "{schema}".t (id int primary key)')
        cur.execute(f'INSERT INTO "{schema}".t SELECT generate_series(1, 4)')
        r = ref.count_database("postgresql+psycopg2://postgres@127.0.0.1:5432/postgres",
                               [f"postgres.{schema}.t", f"postgres.{schema}.gone", f"other.{schema}.t"])
        assert r.counts == {f"postgres.{schema}.t": 4}
        assert "does not exist" in r.errors[f"postgres.{schema}.gone"]
        assert "database 'other'" in r.errors[f"other.{schema}.t"]
    finally:
        cur.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()
