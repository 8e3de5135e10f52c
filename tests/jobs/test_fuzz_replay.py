"""Issue 14 as a user meets it: a fuzzed archive through one Spark replay, and the dead-letter budget of replay and
verify (a 100% garbage archive used to replay with exit 0 and then pass verify).

One fuzzed replay (issue 14's crash: it died with OverflowError), two small garbage replays and one verify."""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_codecs import DecodeError, Position, get_codec
from cdc_codecs.contract import check_events
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.io.reports import accounting_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codecs"))
from fuzz import SEED, corpus  # noqa: E402

pytestmark = pytest.mark.spark
FMT = "canal-json"


def lines_of(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """A real day (the sample workload) with ~300 fuzzed messages and a 10 MB line mixed in."""
    root = tmp_path_factory.mktemp("fuzzed")
    w = simulate(11, "2024-02-01", rows=10, changes=60)
    good = root / "good.jsonl"
    write_archive(w.snapshot + w.changes, FMT, good)
    bad = [i.raw for i in corpus(FMT, 300)]
    mixed = lines_of(good) + bad
    random.Random(SEED).shuffle(mixed)
    archive = root / "archive" / "part-00000.jsonl"
    archive.parent.mkdir()
    archive.write_bytes(b"\n".join(mixed) + b"\n")
    good.unlink()
    out = root / "replay"
    rc = cli.main(["replay", "--source", str(archive), "--format", FMT, "--max-dead-letters", "none",
                   "--out", str(out)])
    return {"archive": archive, "lines": mixed, "out": out, "rc": rc}


def test_fuzzed_archive_replays_and_every_record_is_accounted_for(fuzzed):
    assert fuzzed["rc"] == 0
    out, lines, archive = fuzzed["out"], fuzzed["lines"], str(fuzzed["archive"])
    counts = json.loads((out / "counts.json").read_text())
    events = pq.read_table(out / "events").to_pylist()
    dead = pq.read_table(out / "dead_letters").to_pylist()
    # counts.json closes: records read = records with events + dead letters + control-only records
    assert counts["records_read"] == len(lines)
    [source] = counts["sources"]
    assert source["records"] == len(lines) and counts["dead_letters"] == len(dead)
    dead_at = {d["pos_offset"] for d in dead}
    event_at = {e["pos_offset"] for e in events}
    assert len(dead_at) == len(dead) and not dead_at & event_at
    assert dead_at | event_at == set(range(1, len(lines) + 1)), "a record vanished"
    # every dead letter names vendor, field and position and keeps the bytes as read
    for d in dead:
        assert d["dl_reason"].startswith(f"{FMT}: field '{d['dl_field']}' at {archive} line {d['pos_offset']}:")
        assert d["dl_raw"] == lines[d["pos_offset"] - 1]
    # the job decided exactly like the codec contract: nothing accepted that the codec refuses, and back
    codec = get_codec(FMT)
    expected_dead = set()
    for n, raw in enumerate(lines, start=1):
        try:
            check_events(FMT, codec.decode(raw, Position(archive, -1, n)))
        except DecodeError:
            expected_dead.add(n)
    assert dead_at == expected_dead
    assert 0.1 < len(dead) / len(lines) < 0.9
    assert counts["dead_letter_breakdown"]["total"] == len(dead)
    assert counts["dead_letter_budget"] == {"spec": "none", "ok": True, "checks": [], "problems": []}


def garbage_archive(root: Path, n: int = 40) -> Path:
    path = root / "garbage" / "part-00000.jsonl"
    path.parent.mkdir(parents=True)
    rng = random.Random(3)
    path.write_bytes(b"".join(b'{"not canal": %d, "x": "%s"}\n' % (i, b"z" * rng.randrange(9)) for i in range(n))
                     + b"\x00\xff garbage\n" * 5)
    return path


def test_an_unreadable_archive_fails_replay_and_keeps_the_previous_output(fuzzed, tmp_path, capsys):
    out = fuzzed["out"]  # the fuzzed replay's output is the "previous output" here (saves a Spark run)
    assert fuzzed["rc"] == 0
    before = (out / "counts.json").read_text()
    capsys.readouterr()

    garbage = garbage_archive(tmp_path)
    rc = cli.main(["replay", "--source", str(garbage), "--format", FMT, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "dead-letter budget exceeded (--max-dead-letters 1%)" in err
    assert "45 dead letters of 45 records read (100.00%), the budget 1% allows 0" in err
    assert "top reason: 40 x canal-json field" in err and "top reason: 5 x canal-json field '$': not JSON" in err
    assert f"top source: 45 in {garbage} (lines 1-45)" in err
    assert (out / "counts.json").read_text() == before, "the previous output must stay current"
    rejected = Path(str(out) + ".rejected")
    assert len(pq.read_table(rejected / "dead_letters")) == 45 and not (rejected / "events").exists()
    assert json.loads((rejected / "counts.json").read_text())["dead_letter_budget"]["ok"] is False
    assert f"{rejected}/ for inspection" in err

    # a count budget that the run stays within publishes; the stale rejected dead letters go away
    assert cli.main(["replay", "--source", str(garbage), "--format", FMT, "--max-dead-letters", "45,100%",
                     "--out", str(out)]) == 0
    assert not rejected.exists()
    assert json.loads((out / "counts.json").read_text())["dead_letters"] == 45

    # issue 14: that output used to pass verify; under the default budget it fails, naming the budget
    state = tmp_path / "state"
    state.mkdir()
    report = tmp_path / "verification.json"
    capsys.readouterr()
    rc = cli.main(["verify", "--replay", str(out), "--state", str(state), "--report", str(report),
                   "--html", str(tmp_path / "v.html")])
    captured = capsys.readouterr()
    assert rc == 1
    assert "dead-letter budget 1%: 45 dead letters of 45 records read (100.00%), the budget 1% allows 0" \
        in captured.err
    acc = json.loads(accounting_path(report).read_text())
    dead = acc["replays"][0]["dead_letters"]
    assert dead["total"] == 45 and dead["budget"]["ok"] is False
    assert [r["dead_letters"] for r in dead["by_reason"]] == [40, 5]
    assert dead["by_table"] == {"(unknown)": 45}
    assert dead["by_source"] == [{"source": str(garbage), "partition": -1, "dead_letters": 45,
                                  "first_offset": 1, "last_offset": 45}]
    page = (tmp_path / "v.html").read_text()
    assert "Dead letters: 45" in page and str(garbage) in page
    assert "dead letters: 45 (budget 1%: EXCEEDED)" in captured.out


def test_bad_budget_spec_is_a_usage_error(tmp_path, capsys):
    rc = cli.main(["replay", "--source", str(tmp_path), "--format", FMT, "--max-dead-letters", "lots",
                   "--out", str(tmp_path / "o")])
    assert rc == 2 and "--max-dead-letters 'lots': 'lots' is not a limit" in capsys.readouterr().err


def test_a_fuzzed_archive_of_every_format_goes_through_replay_merge_and_verify(tmp_path, capsys):
    """Issue 39: per format, its seed messages and their structure-aware mutations (``fuzz.structural``: fields
    dropped, nulled, retyped, nested, duplicated, out-of-range numbers, huge strings; Avro: missing writer
    fields, other union branches) in one archive, replayed; then one merge and one verify over all the replays.
    Every command exits 0 (no traceback), each replay accounts for every line, and verify's own checks (records
    read = events + dead letters + control + ..., state = what the events imply) pass. The state is plain
    Parquet (``--state-format parquet``): the fuzzed seeds name ~45 tables, and a Delta commit per table is what
    the other end-to-end tests exercise (here it cost a third of the merge and verify)."""
    from cdc_codecs import available_formats
    from fuzz import seed_messages, structural

    replays = []
    total = 0
    for fmt in available_formats():
        codec = get_codec(fmt)
        lines = [raw for _, raw in seed_messages(fmt)] + [i.raw for i in structural(fmt, 40)]
        if codec.capabilities.binary:  # the Kafka dump format: one JSON line per record, value in base64
            lines = [json.dumps({"value": base64.b64encode(raw).decode()}).encode() for raw in lines]
            archive = tmp_path / fmt / "part-00000.dump.jsonl"
        else:
            archive = tmp_path / fmt / "part-00000.jsonl"
        archive.parent.mkdir()
        archive.write_bytes(b"\n".join(lines) + b"\n")
        out = tmp_path / f"replay-{fmt}"
        assert cli.main(["replay", "--source", str(archive), "--format", fmt, "--max-dead-letters", "none",
                         "--out", str(out)]) == 0, fmt
        counts = json.loads((out / "counts.json").read_text())
        dead = pq.read_table(out / "dead_letters") if (out / "dead_letters").exists() else None
        assert counts["records_read"] == len(lines) and counts["sources"][0]["records"] == len(lines), fmt
        assert counts["dead_letters"] == (0 if dead is None else dead.num_rows) > 0, fmt
        replays += ["--replay", str(out)]
        total += len(lines)
    state = tmp_path / "state"
    assert cli.main(["merge", *replays, "--state-format", "parquet", "--out", str(state)]) == 0
    capsys.readouterr()
    report = tmp_path / "verification.json"
    rc = cli.main(["verify", *replays, "--state", str(state), "--max-dead-letters", "none", "--report", str(report)])
    out = capsys.readouterr()
    assert rc in (0, 1) and "Traceback" not in out.err, out.err[-2000:]
    # Every replay accounts for every record (records read = events + dead letters + control + ...) and its
    # event counts match counts.json. The row counts per table are not asserted: mutated seeds declare other keys
    # for the same table (pkNames, a key-less SharePlex table with partial updates), where merge and verify's
    # independent count read the rows differently (verify keys a key-less table by its whole image).
    acc = json.loads(accounting_path(report).read_text())
    assert [(r["replay"], r["problems"]) for r in acc["replays"] if not r["ok"]] == []
    assert len(acc["replays"]) == len(available_formats()) and total >= 14 * 40
