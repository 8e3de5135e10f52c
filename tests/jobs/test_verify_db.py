"""End to end against the real MariaDB: a workload on two source tables, its changes archived as Canal JSON
(captured from the database itself: every event's images are read back from the table around the statement),
replay, merge, verify with the source database as reference."""

from __future__ import annotations

import json
import shutil
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from services import missing

from cdc_codecs import Column, Event, Op, Position, get_codec
from cdc_jobs import cli

pytestmark = [pytest.mark.db, pytest.mark.spark]

COLUMNS = {
    "customers": (Column("id", "int", 4), Column("name", "varchar(64)", 12), Column("balance", "decimal(12,2)", 3)),
    "order_items": (Column("order_id", "bigint", -5), Column("line_no", "int", 4), Column("sku", "varchar(16)", 12),
                    Column("qty", "int", 4)),
}
KEYS = {"customers": ("id",), "order_items": ("order_id", "line_no")}
DDL = {
    "customers": "CREATE TABLE {db}.customers (id INT PRIMARY KEY, name VARCHAR(64), balance DECIMAL(12,2))",
    "order_items": "CREATE TABLE {db}.order_items (order_id BIGINT, line_no INT, sku VARCHAR(16), qty INT, "
                   "PRIMARY KEY (order_id, line_no))",
}
BASE_MS = 1_735_689_600_000


def _text(v) -> str | None:
    return None if v is None else str(v)


class Capture:
    """Runs statements and records what a binlog-based CDC tool would emit for them, as canonical events."""

    def __init__(self, cur, db: str):
        self.cur, self.db, self.messages = cur, db, []

    def _row(self, table: str, key: tuple) -> dict | None:
        cols = [c.name for c in COLUMNS[table]]
        where = " AND ".join(f"{k} = %s" for k in KEYS[table])
        self.cur.execute(f"SELECT {', '.join(cols)} FROM `{self.db}`.{table} WHERE {where}", key)
        r = self.cur.fetchone()
        return None if r is None else {c: _text(v) for c, v in zip(cols, r)}

    def _event(self, table, op, i, before, after) -> Event:
        n = len(self.messages)
        return Event(format="canonical", op=op, database=self.db, table=table,
                     position=Position("binlog", offset=n, index=i), before=before, after=after,
                     columns=COLUMNS[table], primary_key=KEYS[table], event_time_ms=BASE_MS + n * 1000,
                     sequence=(Decimal(n),))

    def insert(self, table: str, rows: list[tuple]) -> None:
        """One statement, several rows: one Canal message with data[] of all of them."""
        cols = [c.name for c in COLUMNS[table]]
        marks = ", ".join(["(" + ", ".join(["%s"] * len(cols)) + ")"] * len(rows))
        self.cur.execute(f"INSERT INTO `{self.db}`.{table} ({', '.join(cols)}) VALUES {marks}",
                         [v for r in rows for v in r])
        n = len(KEYS[table])
        self.messages.append([self._event(table, Op.INSERT, i, None, self._row(table, r[:n]))
                              for i, r in enumerate(rows)])

    def update(self, table: str, key: tuple, sets: dict) -> None:
        before = self._row(table, key)
        assign = ", ".join(f"{c} = %s" for c in sets)
        where = " AND ".join(f"{k} = %s" for k in KEYS[table])
        self.cur.execute(f"UPDATE `{self.db}`.{table} SET {assign} WHERE {where}", [*sets.values(), *key])
        new_key = tuple(sets.get(k, v) for k, v in zip(KEYS[table], key))
        self.messages.append([self._event(table, Op.UPDATE, 0, before, self._row(table, new_key))])

    def delete(self, table: str, key: tuple) -> None:
        before = self._row(table, key)
        where = " AND ".join(f"{k} = %s" for k in KEYS[table])
        self.cur.execute(f"DELETE FROM `{self.db}`.{table} WHERE {where}", key)
        self.messages.append([self._event(table, Op.DELETE, 0, before, None)])

    def archive(self, path: Path, skip: int | None = None) -> None:
        codec = get_codec("canal-json")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            for n, events in enumerate(self.messages):
                if n != skip:
                    for m in codec.encode(events):
                        fh.write(m.value + b"\n")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    import pymysql

    try:
        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", connect_timeout=3, autocommit=True)
    except Exception as exc:
        missing(f"MariaDB is not reachable on 127.0.0.1:3306 as root without password: {exc}")
    db = f"cdcverify_{uuid.uuid4().hex[:10]}"
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE `{db}`")
    try:
        for ddl in DDL.values():
            cur.execute(ddl.format(db=f"`{db}`"))
        cap = Capture(cur, db)
        cap.insert("customers", [(i, f"cust {i}", f"{i * 10}.5{i}") for i in range(1, 7)])
        cap.insert("order_items", [(100 + i // 3, i % 3 + 1, f"SKU-{i}", i + 1) for i in range(7)])
        cap.update("customers", (2,), {"balance": "-1.00", "name": None})
        cap.update("customers", (3,), {"id": 103})  # key change
        cap.insert("order_items", [(200, 1, "LATE", 9)])  # the single-row insert the last test drops
        late_insert = len(cap.messages) - 1
        cap.delete("customers", (5,))
        cap.update("order_items", (100, 2), {"qty": 50})
        cap.update("order_items", (101, 1), {"line_no": 9})  # key change of a composite key
        cap.delete("order_items", (102, 1))
        cap.insert("customers", [(7, "seven", None)])
        root = tmp_path_factory.mktemp("verify_db")
        cap.archive(root / "archive" / "binlog.jsonl")
        cap.archive(root / "archive_missing_insert" / "binlog.jsonl", skip=late_insert)
        yield {"db": db, "root": root, "url": f"mysql+pymysql://root@127.0.0.1:3306/{db}", "cur": cur}
    finally:
        cur.execute(f"DROP DATABASE `{db}`")
        conn.close()


def replay_and_merge(archive: Path, out: Path) -> tuple[Path, Path]:
    replay, state = out / "replay", out / "state"
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--out", str(replay)]) == 0
    assert cli.main(["merge", "--replay", str(replay), "--out", str(state)]) == 0
    return replay, state


@pytest.fixture(scope="module")
def merged(source):
    return replay_and_merge(source["root"] / "archive", source["root"] / "full")


def report_of(path: Path) -> dict[str, dict]:
    return {r["table"]: r for r in json.loads(path.read_text())}


def counts_in_db(source) -> dict[str, int]:
    out = {}
    for t in ("customers", "order_items"):
        source["cur"].execute(f"SELECT COUNT(*) FROM `{source['db']}`.{t}")
        out[f"{source['db']}.{t}"] = source["cur"].fetchone()[0]
    return out


def test_all_tables_ok_against_the_source_database(source, merged, tmp_path, capsys):
    replay, state = merged
    report = tmp_path / "v.json"
    rc = cli.main(["verify", "--replay", str(replay), "--state", str(state), "--reference", source["url"],
                   "--report", str(report), "--html", str(tmp_path / "v.html")])
    out = capsys.readouterr().out
    assert rc == 0, out
    tables = report_of(report)
    expected = counts_in_db(source)
    assert set(tables) == set(expected)
    for name, n in expected.items():
        t = tables[name]
        assert (t["expected_rows"], t["actual_rows"], t["reference_rows"], t["ok"]) == (n, n, n, True)
    assert (tables[f"{source['db']}.customers"]["insert"], tables[f"{source['db']}.customers"]["delete"]) == (7, 1)
    assert "root@127.0.0.1:3306" in out


def test_a_row_deleted_from_the_state_fails_that_table(source, merged, tmp_path, capsys):
    replay, state = merged
    broken = tmp_path / "state"
    shutil.copytree(state, broken)
    name = f"{source['db']}.customers"
    (part,) = sorted((broken / name).glob("*.parquet"))
    pq.write_table(pq.read_table(part).slice(1), part)
    rc = cli.main(["verify", "--replay", str(replay), "--state", str(broken), "--reference", source["url"],
                   "--report", str(tmp_path / "v.json")])
    err = capsys.readouterr().err
    n = counts_in_db(source)[name]
    assert rc == 1
    assert f"table {name}: expected {n} rows (implied by the events), state has {n - 1} (-1)" in err
    assert f"the source has {n} rows, the state has {n - 1}" in err
    assert f"{source['db']}.order_items" not in err


def test_an_insert_missing_from_the_archive_fails_against_the_reference(source, tmp_path, capsys):
    replay, state = replay_and_merge(source["root"] / "archive_missing_insert", tmp_path)
    report = tmp_path / "v.json"
    rc = cli.main(["verify", "--replay", str(replay), "--state", str(state), "--reference", source["url"],
                   "--report", str(report)])
    err = capsys.readouterr().err
    name = f"{source['db']}.order_items"
    n = counts_in_db(source)[name]
    assert rc == 1
    # replay and merge agree with each other; only the source shows the row the archive lost
    t = report_of(report)[name]
    assert (t["expected_rows"], t["actual_rows"], t["reference_rows"], t["ok"]) == (n - 1, n - 1, n, False)
    assert f"table {name}: the source has {n} rows, the state has {n - 1} (-1)" in err
    assert report_of(report)[f"{source['db']}.customers"]["ok"]
