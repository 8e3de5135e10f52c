"""Issue 39 as a user meets it: an archive with a damaged line (a canal-json INSERT without database and table)
replays with that line as a dead letter and merge and verify pass on the rest; and merge and verify treat their
inputs as untrusted: an output damaged by hand stops them with one clear line (exit 2), never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_codecs import records
from cdc_codecs.event import Event, Op, Position
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.schemas import EVENT_ARROW

pytestmark = pytest.mark.spark
FMT = "canal-json"
DAMAGED_LINE = b'{"type": "INSERT", "data": [{"id": 1e400}]}'


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    w = simulate(5, "2024-02-01", rows=20, changes=120)
    archive = root / "archive" / "part-00000.jsonl"
    n = write_archive(w.snapshot + w.changes, FMT, archive)
    with archive.open("ab") as fh:
        fh.write(DAMAGED_LINE + b"\n")
    replay, state = root / "replay", root / "state"
    rc_replay = cli.main(["replay", "--source", str(archive), "--format", FMT, "--out", str(replay)])
    rc_merge = cli.main(["merge", "--replay", str(replay), "--out", str(state)])
    return {"root": root, "archive": archive, "lines": n + 1, "replay": replay, "state": state,
            "rc": (rc_replay, rc_merge)}


def test_a_line_without_its_table_is_a_dead_letter_and_the_day_merges_and_verifies(day, tmp_path):
    assert day["rc"] == (0, 0)
    replay = day["replay"]
    [dead] = pq.read_table(replay / "dead_letters").to_pylist()
    assert dead["dl_field"] == "table" and dead["pos_offset"] == day["lines"] and dead["dl_raw"] == DAMAGED_LINE
    assert dead["dl_reason"].startswith(f"{FMT}: field 'table' at {day['archive']} line {day['lines']}:")
    assert not list((replay / "events").glob("table_name=__HIVE_DEFAULT_PARTITION__"))
    counts = json.loads((replay / "counts.json").read_text())
    assert counts["records_read"] == day["lines"] and counts["dead_letters"] == 1
    assert sorted(counts["events"]) == ["shop.customers", "shop.order_items"]  # no third, nameless table
    assert cli.main(["verify", "--replay", str(replay), "--state", str(day["state"]),
                     "--report", str(tmp_path / "v.json")]) == 0


def _damaged_copy(day, tmp_path) -> Path:
    copy = tmp_path / "replay"
    shutil.copytree(day["replay"], copy)
    return copy


def _no_table_event_file(replay: Path) -> None:
    """What the replay used to write for the damaged line: an INSERT with NULL database and table."""
    e = Event(format=FMT, op=Op.INSERT, database=None, table=None, position=Position("by-hand.jsonl", -1, 9),
              after={"id": "1e400"})
    part = replay / "events" / "table_name=__HIVE_DEFAULT_PARTITION__"
    part.mkdir(parents=True)
    row = {k: v for k, v in records.to_record(e).items() if k != "table_name"}  # the partition column
    schema = EVENT_ARROW.remove(EVENT_ARROW.get_field_index("table_name"))
    pq.write_table(pa.Table.from_pylist([row], schema=schema), part / "part-x.parquet")


def test_merge_and_verify_name_a_damaged_events_directory_instead_of_crashing(day, tmp_path, capsys):
    replay = _damaged_copy(day, tmp_path)
    _no_table_event_file(replay)
    capsys.readouterr()
    assert cli.main(["merge", "--replay", str(replay), "--out", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err
    assert f"--replay {replay}: events/ is damaged: 1 data events without a table" in err, err
    assert "by-hand.jsonl -1 9" in err and "Traceback" not in err
    # --tables: the nameless row is in no table merged, and still stops the merge
    assert cli.main(["merge", "--replay", str(replay), "--tables", "shop.customers",
                     "--out", str(tmp_path / "state")]) == 2
    assert f"--replay {replay}: events/ is damaged: 1 data events without a table" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()
    assert cli.main(["verify", "--replay", str(replay), "--state", str(day["state"]),
                     "--report", str(tmp_path / "v.json")]) == 2
    assert "events/ is damaged: 1 data events without a table" in capsys.readouterr().err


def test_a_replaced_part_file_or_state_file_is_named(day, tmp_path, capsys):
    replay = _damaged_copy(day, tmp_path)
    victim = next((replay / "events").rglob("*.parquet"))
    victim.write_bytes(b"this is not parquet\n" * 10)
    capsys.readouterr()
    assert cli.main(["merge", "--replay", str(replay), "--out", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err
    assert "cannot be read as the merge expects" in err and victim.name in err, err
    assert cli.main(["verify", "--replay", str(replay), "--state", str(day["state"]),
                     "--report", str(tmp_path / "v.json")]) == 2
    assert "cannot be read as the verify expects" in capsys.readouterr().err

    base = tmp_path / "base"
    shutil.copytree(day["state"], base)
    (base / "_state.json").write_text('{"format_version": ')
    assert cli.main(["merge", "--replay", str(day["replay"]), "--base", str(base),
                     "--out", str(tmp_path / "state2")]) == 2
    assert "_state.json is not JSON" in capsys.readouterr().err
