"""`cdc-replay verify` as a user runs it: on a real replay of a Canal archive (multi-row messages, a corrupt line,
re-encoding), against a state holding the source's true final rows (written here from the simulated source, so
the test does not depend on merge)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_codecs import Op, get_codec
from cdc_jobs import cli
from cdc_jobs.io.reports import accounting_path
from cdc_jobs.commands.sample import simulate, write_archive

pytestmark = pytest.mark.spark
SEED = 20240101
DAY_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z: the sample's full sync is at DAY_MS - 1h, changes after


def write_packed(events, path: Path, rows_per_message: int) -> int:
    """Full-sync rows packed several per Canal message (data[] with n rows), as Canal writes a batch."""
    codec = get_codec("canal-json")
    lines = []
    for i in range(0, len(events), rows_per_message):
        chunk = [e.with_(position=e.position.__class__("sync", offset=i, index=j))
                 for j, e in enumerate(events[i:i + rows_per_message])]
        by_table = {}
        for e in chunk:
            by_table.setdefault(e.qualified_table, []).append(e)
        for group in by_table.values():
            lines += [m.value for m in codec.encode(group)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(v + b"\n" for v in lines))
    return len(lines)


def write_state(state: Path, final: dict[str, list[dict]]) -> None:
    for table, rows in final.items():
        d = state / table
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), d / "part-00000.parquet")
    (state / "_state.json").write_text("{}")


def verify(*args: str) -> int:
    # The archive of `replayed` holds one corrupt record on purpose: 1 of ~70 is over the default 1% budget.
    return cli.main(["verify", "--max-dead-letters", "1", *args])


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    w = simulate(SEED, "2024-01-01", rows=12, changes=60)
    archive = root / "archive"
    n_full = write_packed(w.snapshot, archive / "full" / "part-00000.jsonl", rows_per_message=4)
    inc = archive / "incremental" / "part-00000.jsonl"
    n_inc = write_archive(w.changes, "canal-json", inc)
    with open(inc, "ab") as fh:  # one corrupt record: it must show up as a dead letter, not vanish
        fh.write(b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":\n')
    out = root / "replay"
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--max-dead-letters", "1",
                     "--to-format", "canal-json",
                     "--out", str(out)]) == 0
    state = root / "state"
    write_state(state, w.final)
    ops = Counter((e.qualified_table, e.op) for e in w.snapshot + w.changes)
    return {"root": root, "w": w, "replay": out, "state": state, "records": n_full + n_inc + 1,
            "full_messages": n_full, "ops": ops}


def load_report(path: Path) -> dict[str, dict]:
    rows = json.loads(path.read_text())
    assert isinstance(rows, list)
    return {r["table"]: r for r in rows}


def test_verify_passes_with_counts_and_accounting(replayed, tmp_path, capsys):
    report, page = tmp_path / "verification.json", tmp_path / "verification.html"
    rc = verify("--replay", str(replayed["replay"]), "--state", str(replayed["state"]), "--report", str(report),
                "--html", str(page))
    out = capsys.readouterr().out
    assert rc == 0, out
    tables = load_report(report)
    w, ops = replayed["w"], replayed["ops"]
    assert set(tables) == set(w.final)
    for name, rows in w.final.items():
        t = tables[name]
        assert (t["expected_rows"], t["actual_rows"], t["ok"]) == (len(rows), len(rows), True)
        # Canal has no snapshot marker: full-sync rows arrive as INSERT.
        assert t["snapshot"] == 0
        assert t["insert"] == ops[(name, Op.SNAPSHOT)] + ops[(name, Op.INSERT)]
        assert (t["update"], t["delete"]) == (ops[(name, Op.UPDATE)], ops[(name, Op.DELETE)])
        assert name in out
    acc = json.loads(accounting_path(report).read_text())
    assert acc["ok"] and acc["tables_ok"]
    (r,) = acc["replays"]
    sources = r["conservation"]["sources"]
    assert sum(s["records_read"] for s in sources) == replayed["records"]
    assert sum(s["dead_letters"] for s in sources) == 1
    # Records, not rows: the packed full sync is fewer messages than rows.
    full = next(s for s in sources if s["source"].endswith("full/part-00000.jsonl"))
    assert full["messages_with_events"] == replayed["full_messages"] < full["event_rows"] == len(w.snapshot)
    assert all(s["unaccounted"] == 0 for s in sources)
    enc = r["encoding"]
    assert enc["ok"] and enc["messages_written"] == enc["messages"] == replayed["records"] - 1
    html = page.read_text()
    assert all(name in html for name in w.final) and "FAIL" not in html
    assert "verification: PASSED" in out


def test_verify_fails_naming_the_table_whose_state_lost_a_row(replayed, tmp_path, capsys):
    state = tmp_path / "state"
    shutil.copytree(replayed["state"], state)
    f = state / "shop.order_items" / "part-00000.parquet"
    rows = pq.read_table(f)
    pq.write_table(rows.slice(1), f)
    report = tmp_path / "r.json"
    rc = verify("--replay", str(replayed["replay"]), "--state", str(state), "--report", str(report))
    err = capsys.readouterr().err
    n = len(replayed["w"].final["shop.order_items"])
    assert rc == 1
    assert f"table shop.order_items: expected {n} rows (implied by the events), state has {n - 1} (-1)" in err
    assert "shop.customers" not in err
    tables = load_report(report)
    assert tables["shop.customers"]["ok"] and not tables["shop.order_items"]["ok"]


def test_a_lost_event_file_is_unaccounted(replayed, tmp_path, capsys):
    replay = tmp_path / "replay"
    shutil.copytree(replayed["replay"], replay)
    lost = sorted((replay / "events" / "table_name=shop.customers").glob("*.parquet"))
    assert lost, "replay wrote no customer events"
    n_lost = sum(pq.read_metadata(f).num_rows for f in lost)
    for f in lost:
        f.unlink()
    report = tmp_path / "r.json"
    rc = verify("--replay", str(replay), "--state", str(replayed["state"]), "--report", str(report))
    err = capsys.readouterr().err
    assert rc == 1
    acc = json.loads(accounting_path(report).read_text())
    (r,) = acc["replays"]
    assert not r["ok"]
    assert any("unaccounted" in p for p in r["problems"]), r["problems"]
    assert any("shop.customers: counts.json says" in p for p in r["problems"])
    counts = json.loads((replay / "counts.json").read_text())
    counted = sum(sum(ops.values()) for ops in counts["events"].values()) + sum(counts["control"].values())
    found = sum(s["event_rows"] + s["control_rows"] for s in r["conservation"]["sources"])
    assert found == counted - n_lost
    assert f"replay {replay}" in err
    assert not load_report(report)["shop.customers"]["ok"]


def test_reference_counts_taken_at_snapshot_time_check_the_full_sync(replayed, tmp_path, capsys):
    w = replayed["w"]
    full = Counter(e.qualified_table for e in w.snapshot)
    ref = tmp_path / "reference.json"
    # taken between the full sync (DAY - 1h) and the first change (>= DAY); order_items is off by one
    ref.write_text(json.dumps({"taken_at": "2023-12-31T23:30:00Z", "tables": {
        "shop.customers": full["shop.customers"], "shop.order_items": full["shop.order_items"] + 1}}))
    report = tmp_path / "r.json"
    rc = verify("--replay", str(replayed["replay"]), "--state", str(replayed["state"]), "--reference", str(ref),
                "--report", str(report))
    err = capsys.readouterr().err
    assert rc == 1
    tables = load_report(report)
    c, o = tables["shop.customers"], tables["shop.order_items"]
    assert (c["reference_rows"], c["reference_expected_rows"], c["reference_ok"], c["ok"]) == \
        (full["shop.customers"], full["shop.customers"], True, True)
    assert (o["reference_expected_rows"], o["reference_ok"], o["ok"]) == (full["shop.order_items"], False, False)
    assert c["reference_taken_at"] == "2023-12-31T23:30:00.000Z"
    assert f"source has {full['shop.order_items'] + 1}" in err and "shop.order_items" in err
    assert "shop.customers" not in err


def test_usage_errors_are_one_line_and_never_show_a_password(tmp_path, capsys, monkeypatch):
    assert verify("--replay", str(tmp_path), "--state", str(tmp_path)) == 2
    assert "no counts.json" in capsys.readouterr().err
    d = tmp_path / "r"
    (d / "events").mkdir(parents=True)
    (d / "counts.json").write_text("{}")
    assert verify("--replay", str(d), "--state", str(tmp_path),
                  "--reference", "mysql+pymysql://root:s3cr3t@127.0.0.1/db") == 2
    err = capsys.readouterr().err
    assert "s3cr3t" not in err and "env:VARNAME" in err and "***" in err
    monkeypatch.delenv("NO_SUCH_REF", raising=False)
    assert verify("--replay", str(d), "--state", str(tmp_path), "--reference", "env:NO_SUCH_REF") == 2
    assert "NO_SUCH_REF is not set" in capsys.readouterr().err


def test_base_state_keys_match_event_keys(replayed, tmp_path, capsys):
    """A --base state (merge's canonical copy) that already holds the replay's rows: re-applying the same events
    must land on the same keys, not add rows (composite keys, key changes included)."""
    base = tmp_path / "base"
    assert cli.main(["merge", "--replay", str(replayed["replay"]), "--out", str(base)]) == 0
    report = tmp_path / "r.json"
    rc = verify("--replay", str(replayed["replay"]), "--base", str(base), "--state", str(replayed["state"]),
                "--report", str(report))
    assert rc == 0, capsys.readouterr().err
    tables = load_report(report)
    for name, rows in replayed["w"].final.items():
        assert tables[name]["base_rows"] == len(rows) == tables[name]["expected_rows"]


def test_split_update_format_accounts_fragments_and_two_messages_per_update(tmp_path, capsys):
    """DataWorks writes an update as two messages (before and after halves): replay assembles them into one
    event, and re-encoding writes two messages again. Both must be accounted for, in records and messages."""
    w = simulate(SEED + 1, "2024-01-01", rows=6, changes=30)
    archive = tmp_path / "archive" / "part-00000.jsonl"
    n_messages = write_archive(w.snapshot + w.changes, "dataworks-json", archive)
    replay = tmp_path / "replay"
    assert cli.main(["replay", "--source", str(archive), "--format", "dataworks-json", "--to-format",
                     "dataworks-json", "--out", str(replay)]) == 0
    state = tmp_path / "state"
    write_state(state, w.final)
    report = tmp_path / "r.json"
    assert verify("--replay", str(replay), "--state", str(state), "--report", str(report)) == 0, \
        capsys.readouterr().err
    acc = json.loads(accounting_path(report).read_text())
    (r,) = acc["replays"]
    (src,) = r["conservation"]["sources"]
    updates = sum(1 for e in w.changes if e.op is Op.UPDATE)
    assert src["records_read"] == n_messages and src["fragments"] == 2 * updates
    assert src["messages_with_events"] == n_messages - updates  # one record per assembled update is in events/
    rows = {(row["table"], row["op"]): row for row in r["encoding"]["rows"]}
    split = [row for (t, op), row in rows.items() if op.startswith("UPDATE ->")]
    assert split and all(row["messages"] == 2 * row["events_in"] == 2 * row["events_out"] for row in split)
    assert sum(row["events_in"] for row in split) == updates
