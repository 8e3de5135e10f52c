"""Issue 2's check: a randomized workload (not in the repository), archived in every format, is replayed, merged
and verified with the CLI; the merged tables equal the source state row for row.

One scenario (one seed per run) in every format, each format's copy in a database of its own
(``shop_<format>``): a replay per format, then one merge and one verify over all the replays, as a user merges
the replays of several pipelines. Each format's tables are then checked in a test of its own. (One merge per
format cost ~1-2 s of driver work per Delta table and a merge's fixed cost eighteen times: 300 s of the suite.)
"""

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
from cdc_jobs.io.reports import accounting_path

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


def database_of(fmt: str) -> str:
    return "shop_" + fmt.replace("-", "_")


def in_database(w, database: str):
    """The workload with its database renamed (its tables ``<database>.<table>``)."""
    return type(w)([e.with_(database=database) for e in w.snapshot], [e.with_(database=database) for e in w.changes],
                   {t.replace("shop.", f"{database}.", 1): rows for t, rows in w.final.items()})


@pytest.fixture(scope="module")
def every_format(tmp_path_factory):
    """Replays of the scenario in every format, one merge and one verify of them all; what each command gave."""
    seed = random_seed()
    root = tmp_path_factory.mktemp("every-format")
    w = simulate(seed, "2024-03-05", rows=25, changes=150)
    workloads, replayed = {}, {}
    for fmt in sorted(FORMATS):
        workloads[fmt] = in_database(w, database_of(fmt))
        out = root / f"replay-{fmt}"
        replayed[fmt] = cli.main(["replay", "--source", str(archive(workloads[fmt], fmt, root / fmt)), "--format",
                                  fmt, *primary_key_args(fmt, database_of(fmt)), "--out", str(out)]), out
    replays = [a for rc, out in replayed.values() if rc == 0 for a in ("--replay", str(out))]
    state, report = root / "state", root / "verification.json"
    merged = cli.main(["merge", *replays, "--out", str(state)])
    verified = cli.main(["verify", *replays, "--state", str(state), "--report", str(report)]) if merged == 0 else None
    return {"seed": seed, "workloads": workloads, "replayed": replayed, "merged": merged, "verified": verified,
            "state": state, "report": report}


# One worker runs them all: the fixture's replays, merge and verify happen once.
@pytest.mark.xdist_group("every-format")
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_randomized_workload_merges_to_the_source_state(fmt, every_format):
    seed, w = every_format["seed"], every_format["workloads"][fmt]
    rc, replay = every_format["replayed"][fmt]
    assert rc == 0, f"{fmt} seed {seed}: replay exited {rc}"
    assert every_format["merged"] == 0, f"seed {seed}: the merge of every format's replay exited " \
                                        f"{every_format['merged']}"
    state = every_format["state"]
    for table, rows in w.final.items():
        expected = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
        assert state_rows(state, table) == expected, f"{fmt} seed {seed}: {table} differs from the source"
    verdicts = {r["table"]: r for r in json.loads(every_format["report"].read_text())}
    assert {t for t in verdicts if t.startswith(database_of(fmt) + ".")} == set(w.final)
    for table, rows in w.final.items():
        assert verdicts[table]["ok"] and verdicts[table]["actual_rows"] == len(rows), (seed, verdicts[table])
    # verify's accounting of this format's replay: every record read is an event, a dead letter or control
    accounting = json.loads(accounting_path(every_format["report"]).read_text())
    [mine] = [r for r in accounting["replays"] if r["replay"] == str(replay)]
    assert mine["ok"], (seed, f"verify exited {every_format['verified']}", mine["problems"])


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
