"""events/ written by the decode tasks (``cdc_jobs.io.event_files``) is what Spark's writer makes of the same
replay: the same directories, file names, rows, schema, counts and checkpoints, and the Arrow window and table
tests give the Spark expressions' answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_jobs import cli
from cdc_jobs.commands import replay as replay_command
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.io.event_files import EventFiles, partition_dir
from cdc_jobs.schemas import EVENT_ARROW
from cdc_jobs.transforms.window import tables_filter, tables_mask, window_filter, window_mask

pytestmark = pytest.mark.spark

DAY = 1704067200000
# Table names Spark escapes in directory names, NULL-like ones, and line terminators Java's regex treats apart
# ('/', ':' and empty names are dead letters: they cannot name a state directory).
ODD = [("db=1", "t=%2"), ("null", "NULL"), ("sh op", "a b"), ("shop", "orders\u2028"),
       ("Shop", "Orders"), ("x", "y[1]^{#}'\"*?\\"), ("ünï", "cödé😀")]
PATTERNS = ["shop.*", "db=1.t=?2", "x.y*", "ünï.*", "shop.orders"]


def _canal_line(database: str, table: str, n: int, es: int) -> bytes:
    return orjson.dumps({"data": [{"id": str(n), "v": f"v{n}"}], "database": database, "table": table, "es": es,
                         "id": 0, "isDdl": False, "mysqlType": {"id": "int", "v": "varchar(10)"}, "old": None,
                         "pkNames": ["id"], "sql": "", "sqlType": {"id": 4, "v": 12}, "ts": es, "type": "INSERT"})


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("odd-archive")
    w = simulate(7, "2024-01-01", rows=20, changes=80)
    write_archive(w.snapshot + w.changes, "canal-json", root / "part-00000.jsonl")
    lines = [_canal_line(db, t, n, DAY + n * 3600_000) for n, (db, t) in enumerate(ODD * 3)]
    lines.insert(4, b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":"1"')  # a dead letter
    (root / "part-00001.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return root


def _replay(monkeypatch, spark_writes: bool, *args: str) -> None:
    if spark_writes:
        monkeypatch.setattr(replay_command, "events_here", lambda *a, **k: None)
    else:  # the decode tasks must write events/ here, or this test compares Spark's writer with itself
        real = replay_command.events_here
        monkeypatch.setattr(replay_command, "events_here", lambda *a, **k: real(*a, **k) or pytest.fail("no"))
    assert cli.main(["replay", *args]) == 0
    monkeypatch.undo()


def _files(out: Path) -> dict[str, list]:
    """Each file under events/ by its path: its rows (sorted) and its column types."""
    got = {}
    for dirpath, _, names in os.walk(out / "events"):
        for name in names:
            path = Path(dirpath) / name
            rel = str(path.relative_to(out))
            if name.endswith(".parquet"):
                t = pq.read_table(path, partitioning=None)
                got[rel] = [sorted(map(repr, t.to_pylist())), [str(f.type) for f in t.schema]]
            else:
                got[rel] = path.read_bytes()
    return got


def _same_outputs(a: Path, b: Path, dead_letters: int = 1) -> None:
    assert _files(a) == _files(b)
    for name in ("counts.json", "checkpoint.json"):
        assert json.loads((a / name).read_text()) == json.loads((b / name).read_text()), name
    dead = [sorted(map(repr, pq.read_table(d / "dead_letters").to_pylist())) for d in (a, b)]
    assert dead[0] == dead[1] and len(dead[0]) == dead_letters


@pytest.mark.parametrize("window", [[], ["--since", str(DAY + 5 * 3600_000), "--until", str(DAY + 17 * 3600_000)]])
def test_decode_tasks_write_the_events_spark_would(archive, tmp_path, monkeypatch, window):
    tables = ["--tables", ",".join(PATTERNS)] if window else []
    args = ["--source", str(archive), "--format", "canal-json", *window, *tables]
    _replay(monkeypatch, False, *args, "--out", str(tmp_path / "tasks"))
    _replay(monkeypatch, True, *args, "--out", str(tmp_path / "spark"))
    _same_outputs(tmp_path / "tasks", tmp_path / "spark")
    assert any("table_name=db%3D1.t%3D%252" in f for f in _files(tmp_path / "tasks"))


def test_a_continuation_and_its_re_encode_are_the_same_both_ways(archive, tmp_path, monkeypatch):
    day1 = ["--source", str(archive), "--format", "canal-json", "--until", str(DAY + 9 * 3600_000)]
    for how, spark_writes in (("tasks", False), ("spark", True)):
        _replay(monkeypatch, spark_writes, *day1, "--out", str(tmp_path / f"{how}1"))
        _replay(monkeypatch, spark_writes, "--source", str(archive), "--format", "canal-json", "--checkpoint",
                str(tmp_path / f"{how}1"), "--to-format", "oms-default", "--out", str(tmp_path / f"{how}2"))
    _same_outputs(tmp_path / "tasks1", tmp_path / "spark1")
    _same_outputs(tmp_path / "tasks2", tmp_path / "spark2", dead_letters=0)  # the bad line was day 1's
    encoded = [sorted((tmp_path / f"{how}2" / "encoded").glob("part-*")) for how in ("tasks", "spark")]
    assert [sorted(f.read_text().splitlines()) for f in encoded[0]] == \
        [sorted(f.read_text().splitlines()) for f in encoded[1]]


def test_events_read_back_with_the_schema_spark_infers(archive, tmp_path, monkeypatch):
    from cdc_jobs.spark import session

    _replay(monkeypatch, False, "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path / "a"))
    _replay(monkeypatch, True, "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path / "b"))
    spark = session()
    schemas = [spark.read.parquet(str(tmp_path / d / "events")).schema for d in ("a", "b")]
    assert schemas[0] == schemas[1]


def test_partition_directories_are_named_as_spark_names_them(tmp_path):
    from cdc_jobs.spark import session

    names = [None, "", "a.b c", "ä€😀",
             *("".join(chr(c) for c in range(i, min(i + 16, 128))) for i in range(1, 128, 16))]
    spark = session()
    spark.createDataFrame([(n, 1) for n in names], "table_name string, x int").write.partitionBy(
        "table_name").parquet(str(tmp_path / "spark"))
    made = {d for d in os.listdir(tmp_path / "spark") if d.startswith("table_name=")}
    assert made == {partition_dir(n) for n in names}


def test_arrow_window_and_table_tests_answer_as_the_spark_expressions():
    from cdc_jobs.spark import session

    spark = session()
    names = [None, *(".".join(p for p in pair if p) for pair in ODD), "shop.orders", "shop.orders\n", "shop.orders\r\n",
             "shop.orders\r", "shop.orders\u0085", "shop.orders\n\n", "db:1.t=x2", "db:1.t=%2\n"]
    df = spark.createDataFrame([(n,) for n in names], "table_name string")
    for patterns in ([], PATTERNS, ["*.orders"], ["[!s]*"]):
        want = [r[0] for r in df.select(tables_filter(patterns)).collect()]
        assert tables_mask(pa.array(names, pa.string()), patterns).to_pylist() == want, patterns
    times = [None, DAY - 1, DAY, DAY + 1, DAY + 10, DAY + 11]
    df = spark.createDataFrame([(t,) for t in times], "event_time_ms long")
    for since, until in ((None, None), (DAY, None), (None, DAY + 10), (DAY, DAY + 10)):
        want = [r[0] for r in df.select(window_filter(since, until)).collect()]
        assert window_mask(pa.array(times, pa.int64()), since, until).to_pylist() == want, (since, until)


def test_a_task_over_more_tables_than_it_keeps_open_loses_no_row(tmp_path):
    """Three tables interleaved over four batches with one file open at a time: every table's file closed to make
    room gets another, and each table's directory reads back all its rows in order."""
    def batch(start: int) -> pa.RecordBatch:
        rows = [{"table_name": ["a.t", "b.t", None, ""][(start + i) % 4], "op": "INSERT", "event_time_ms": start + i}
                for i in range(6)]
        return pa.RecordBatch.from_pylist(rows, schema=EVENT_ARROW)

    files = EventFiles(str(tmp_path), "job-1", 3, max_open=1)
    batches = [batch(n * 10) for n in range(4)]
    for b in batches:
        files.write(b)
    files.close()
    expected: dict[str, list[int]] = {}
    for b in batches:
        for row in b.to_pylist():
            expected.setdefault(partition_dir(row["table_name"]), []).append(row["event_time_ms"])
    got = {d.name: [t for f in sorted(d.glob("part-*.parquet"))
                    for t in pq.read_table(f, partitioning=None).column("event_time_ms").to_pylist()]
           for d in tmp_path.iterdir()}
    assert got == expected
    assert len(list((tmp_path / "table_name=a.t").glob("part-00003-job-1.c*.snappy.parquet"))) > 1
    assert not list(tmp_path.rglob("*.tmp"))


def _counted_rows(seed: int, n: int) -> pa.RecordBatch:
    """COUNTED rows and verdicts as a decode batch gives them, with every case ``summarise`` tells apart: dead
    letters, markers, control events, assembled rows, the second event of a record, NULL keys and times."""
    import random

    from cdc_jobs.schemas import COUNTED_ARROW

    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        dead = rnd.random() < 0.1
        op = rnd.choice(["INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "HEARTBEAT", "FRAGMENT", "TOMBSTONE"])
        rows.append({
            "format": "canal-json", "op": None if dead else op,
            "table_name": rnd.choice(["shop.a", "shop.b", None]),
            "event_time_ms": rnd.choice([None, rnd.randrange(10**12, 10**12 + 10**6)]),
            "pos_source": rnd.choice(["s1", "s2"]), "pos_partition": rnd.choice([0, 1, -1]),
            "pos_offset": rnd.randrange(0, 10**6), "pos_index": rnd.randrange(3),
            "dl_reason": f"bad {i}" if dead else None, "dl_field": "data" if dead else None,
            "dl_raw": bytes([i % 256]) * 3 if dead else None,
            "first_of_record": rnd.choice([True, False, None]),
            # as ``kept_array`` gives it: no verdict for dead letters and markers
            "kept": None if dead or op in ("FRAGMENT", "TOMBSTONE") else rnd.choice(
                ["kept", "window", "after_window", "tables"]),
        })
    return pa.RecordBatch.from_pylist(rows, schema=COUNTED_ARROW)


def test_the_tasks_tallies_summarise_as_the_rows_they_count(spark, tmp_path, monkeypatch):
    """The decode tasks count their rows themselves (``Tally``, a file per task) and the accounting sums the
    files without Spark: the same counts as ``summarise`` of the rows, however the rows fall into batches, chunks
    and tasks."""
    from pyspark.sql import functions as F

    from cdc_jobs.io.event_files import task_file
    from cdc_jobs.transforms.accounting import TALLY_ARROW, Tally, summarise, summarise_tallies

    monkeypatch.setattr(Tally, "CHUNK", 500)  # several chunks a task
    tasks = [[_counted_rows(1, 700), _counted_rows(2, 1), _counted_rows(3, 1300)], [_counted_rows(4, 900)], []]
    for task, batches in enumerate(tasks):
        tally = Tally()
        for batch in batches:
            tally.add(batch)
        table = tally.table()
        assert table.schema == TALLY_ARROW
        # one row per group: far fewer than the rows
        assert 0 < table.num_rows < sum(b.num_rows for b in batches) if batches else table.num_rows == 0
        part = task_file(str(tmp_path / "tallies"), task, TALLY_ARROW)
        part.write(table)
        part.close()
    rows = pa.Table.from_batches([b for batches in tasks for b in batches])
    expected = summarise(spark.createDataFrame(rows), F.lit(True), F.lit(True), None)
    assert expected["dead_letters"] == sum(1 for r in rows.column("dl_reason").to_pylist() if r is not None) > 0
    assert expected["filtered_out"]["window"] and expected["control"] and expected["tombstones"]
    assert summarise_tallies(str(tmp_path / "tallies")) == expected
