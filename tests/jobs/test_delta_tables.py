"""Merged state as Delta tables (cdc_jobs.io.delta_tables), as a user meets it: `verify --publish` keeps one stable
Delta table per source table holding the latest verified day, each earlier day one version back, re-runs add
nothing, a failed verification publishes nothing; Spark and delta-rs read the same rows."""

from __future__ import annotations

import json
import shutil

import pytest
from deltalake import DeltaTable

from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive

from state_tables import read_both  # beside the tests

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("merge")]

START, NOON, END = "2023-12-31T00:00:00Z", "2024-01-01T12:00:00Z", "2024-01-02T00:00:00Z"


def _day(archive, root, name, since, until, base=None):
    replay, state = root / name / "replay", root / name / "state"
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--since", since, "--until", until,
                     "--out", str(replay)]) == 0
    assert cli.main(["merge", "--replay", str(replay), *(["--base", str(base)] if base else []),
                     "--out", str(state)]) == 0
    return replay, state


def _verify(replay, state, base, tables, report) -> int:
    return cli.main(["verify", "--replay", str(replay), "--state", str(state), *(["--base", str(base)] if base else []),
                     "--report", str(report), "--publish", str(tables)])


def _rows(table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in table.to_pylist())


def _until(commit: dict) -> str:
    return json.loads(commit["userMetadata"])["cdc_replay"]["window"]["until"]


def test_published_tables_hold_the_latest_verified_day_and_earlier_days_by_version(spark, tmp_path, capsys):
    w = simulate(11, "2024-01-01", rows=10, changes=80)
    archive = tmp_path / "archive" / "part-00000.jsonl"
    write_archive(w.snapshot + w.changes, "canal-json", archive)
    tables = tmp_path / "tables"
    r1, s1 = _day(archive, tmp_path, "day1", START, NOON)
    assert _verify(r1, s1, None, tables, tmp_path / "v1.json") == 0
    r2, s2 = _day(archive, tmp_path, "day2", NOON, END, base=s1)
    assert _verify(r2, s2, s1, tables, tmp_path / "v2.json") == 0

    assert sorted(p.name for p in tables.iterdir()) == sorted(w.final)
    for name, final in w.final.items():
        latest = read_both(spark, tables / name)
        assert latest.num_rows == len(final), name
        assert _rows(latest) == _rows(read_both(spark, s2 / name)), name  # the latest verified day
        assert _rows(read_both(spark, tables / name, version=0)) == _rows(read_both(spark, s1 / name)), name
        # delta-rs sees the versions and the window each one holds, as DESCRIBE HISTORY shows them
        history = sorted(DeltaTable(str(tables / name)).history(), key=lambda c: c["version"])
        assert [_until(c) for c in history] == ["2024-01-01T12:00:00.000Z", "2024-01-02T00:00:00.000Z"], name
    capsys.readouterr()

    # Re-running the later day adds no version; re-running the earlier day does not move the tables back.
    assert _verify(r2, s2, s1, tables, tmp_path / "v2.json") == 0
    assert "unchanged, version 1" in capsys.readouterr().out
    assert _verify(r1, s1, None, tables, tmp_path / "v1.json") == 0
    assert "kept newer, version 1" in capsys.readouterr().out
    assert {DeltaTable(str(tables / n)).version() for n in w.final} == {1}

    # A state that lost a row (deleted through Delta: verify must read the current version, not every file in
    # the folder) fails verification and publishes nothing.
    bad = tmp_path / "bad"
    shutil.copytree(s2, bad)
    table = bad / "shop.customers"
    first = spark.sql(f"SELECT min(id) AS id FROM delta.`{table}`").first()["id"]
    spark.sql(f"DELETE FROM delta.`{table}` WHERE id = {first}")
    assert _verify(r2, bad, s1, tables, tmp_path / "v3.json") == 1
    assert "not published" in capsys.readouterr().err
    assert {DeltaTable(str(tables / n)).version() for n in w.final} == {1}


def test_a_writer_whose_table_changed_during_its_write_is_refused_and_the_first_commit_stays(spark, tmp_path):
    """Two writers of one stable table: Delta's optimistic commit refuses the one that finds a version committed
    after it started, so the table holds the other writer's rows, never a mix and never a silent overwrite. The
    other writer is delta-rs, committing from inside the Spark write's own job (after the transaction read its
    snapshot, before it commits): the race made deterministic."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from cdc_jobs.io import delta_tables

    table = tmp_path / "shop.customers"
    delta_tables.write_table(spark.range(3).withColumnRenamed("id", "n"), table, "delta")

    def other_writer_commits_first(batches):
        for batch in batches:
            if batch.num_rows and batch.column(0)[0].as_py() == 0:  # once, in the task holding n = 0
                write_deltalake(str(table), pa.table({"n": pa.array([100], pa.int64())}), mode="overwrite")
            yield batch

    ours = spark.range(0, 5, numPartitions=1).withColumnRenamed("id", "n").mapInArrow(
        other_writer_commits_first, "n long")
    # Delta's ConcurrentModificationException family (here ConcurrentAppendException: the other commit added
    # files this overwrite should have read).
    with pytest.raises(Exception, match=r"io\.delta\.exceptions\.Concurrent\w+Exception"):
        delta_tables.write_table(ours, table, "delta")
    assert DeltaTable(str(table)).version() == 1  # ours never committed
    assert DeltaTable(str(table)).to_pyarrow_table().column("n").to_pylist() == [100]
    assert sorted(r["n"] for r in delta_tables.read_table(spark, table).collect()) == [100]
