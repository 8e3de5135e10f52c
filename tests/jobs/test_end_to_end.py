"""Issue 2's check: a randomized workload (not in the repository), archived as canal-json and as oms-default, is
replayed, merged and verified with the CLI; the merged tables equal the source state row for row."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from cdc_codecs import get_codec
from cdc_codecs.registry import FORMATS
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive

pytestmark = pytest.mark.spark


def as_text(value) -> str | None:
    """Typed state value -> the canonical text the source database would print."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}.{value.microsecond:06d}"
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def state_rows(state: Path, table: str) -> list[dict]:
    rows = DeltaTable(str(state / table)).to_pyarrow_table().to_pylist()  # delta-rs: no Spark, no cdc-replay
    return sorted(({k: as_text(v) for k, v in r.items() if not k.startswith("_cdc_")} for r in rows),
                  key=lambda r: json.dumps(r, sort_keys=True))


def archive(w, fmt: str, root: Path) -> Path:
    suffix = ".dump.jsonl" if get_codec(fmt).capabilities.binary else ".jsonl"
    write_archive(w.snapshot, fmt, root / "full" / f"part-00000{suffix}")
    write_archive(w.changes, fmt, root / "incremental" / f"part-00000{suffix}")
    return root


def primary_key_args(fmt: str, database: str = "shop") -> list[str]:
    """The user declares what the format lacks, or keeps in the Kafka record key that JSON-lines files drop."""
    keyless = not get_codec(fmt).capabilities.primary_key or fmt == "debezium-bson"
    return [] if not keyless else [
        "--primary-key", f"{database}.customers=id", "--primary-key", f"{database}.order_items=order_id,line_no"]


def random_seed() -> int:
    return int(os.environ.get("CDC_REPLAY_TEST_SEED") or random.randrange(1 << 30))  # printed on failure


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_randomized_workload_merges_to_the_source_state(fmt, tmp_path):
    seed = random_seed()
    w = simulate(seed, "2024-03-05", rows=25, changes=150)
    root = archive(w, fmt, tmp_path / "archive")
    replay, state = tmp_path / "replay", tmp_path / "state"
    report = tmp_path / "verification.json"
    assert cli.main(["replay", "--source", str(root), "--format", fmt, *primary_key_args(fmt),
                     "--out", str(replay)]) == 0
    assert cli.main(["merge", "--replay", str(replay), "--out", str(state)]) == 0
    assert cli.main(["verify", "--replay", str(replay), "--state", str(state), "--report", str(report)]) == 0

    for table, rows in w.final.items():
        expected = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
        assert state_rows(state, table) == expected, f"{fmt} seed {seed}: {table} differs from the source"
    verdicts = {r["table"]: r for r in json.loads(report.read_text())}
    assert set(verdicts) == set(w.final)
    for table, rows in w.final.items():
        assert verdicts[table]["ok"] and verdicts[table]["actual_rows"] == len(rows), (seed, verdicts[table])


def test_a_corrupted_line_is_a_dead_letter_and_the_rest_still_merges(tmp_path):
    seed = random_seed()
    w = simulate(seed, "2024-03-05", rows=20, changes=80)
    root = archive(w, "canal-json", tmp_path / "archive")
    inc = root / "incremental" / "part-00000.jsonl"
    lines = inc.read_bytes().splitlines(keepends=True)
    # Corrupt the last line: the change it held is lost, everything before it must still apply.
    lines[-1] = lines[-1][: len(lines[-1]) // 2] + b"\n"
    inc.write_bytes(b"".join(lines))
    replay, state = tmp_path / "replay", tmp_path / "state"
    assert cli.main(["replay", "--source", str(root), "--format", "canal-json", "--out", str(replay)]) == 0
    dead = pq.read_table(replay / "dead_letters").to_pylist()
    assert [(d["pos_source"], d["pos_offset"]) for d in dead] == [(str(inc), len(lines))]
    assert cli.main(["merge", "--replay", str(replay), "--out", str(state)]) == 0
    assert cli.main(["verify", "--replay", str(replay), "--state", str(state)]) == 0

    # The state is the source's without the lost last change: its after image is not there (insert/update), its
    # before image is (update/delete). An update may change nothing (a column set to the value it had), so the
    # whole table is compared, not only the presence of one image.
    last = w.changes[-1]
    expected = {t: list(rows) for t, rows in w.final.items()}
    if last.after is not None:
        expected[last.qualified_table].remove(last.after)
    if last.before is not None:
        expected[last.qualified_table].append(last.before)
    for table, rows in expected.items():
        assert state_rows(state, table) == sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), f"seed {seed}"
