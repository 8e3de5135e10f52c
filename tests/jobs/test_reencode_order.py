"""Re-encode order. A target that needs only per-key order is encoded where the events were decoded
(``encode.in_source_order``): each key's messages come in the order its events were read, with no shuffle or sort,
and the messages, dead letters and counts are the ones encoding after the events' shuffle (``encode.encode``)
gives, only placed in other files. A target that groups rows or transactions is shuffled and sorted."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from cdc_codecs import get_codec
from cdc_codecs.registry import available_formats
from cdc_jobs import cli
from cdc_jobs.commands import replay as replay_command
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.schemas import ENCODED_SPARK, EVENT_SPARK
from cdc_jobs.transforms.encode import encode, in_source_order

from tests.jobs.test_reencode_split_and_dead_letters import debezium_lines

pytestmark = pytest.mark.spark



def _one_per_encoding_shape() -> list[str]:
    """The targets that need only per-key order, one per shape the two placements can differ on (binary files,
    two messages per update, keyed by primary key or not, rows packed in one message, transaction markers): the
    placement code is format-neutral, so a second target of one shape runs the same code on other bytes (the
    codec matrix covers every target's bytes)."""
    shapes: dict[tuple, str] = {}
    for f in ALL_KEY_TARGETS:
        c = get_codec(f).capabilities
        shapes.setdefault((c.binary, c.messages_per_update, c.primary_key, c.packs_rows, c.transactions), f)
    return sorted(shapes.values())


ALL_KEY_TARGETS = [f for f in available_formats() if get_codec(f).capabilities.order_scope == "key"]
KEY_TARGETS = _one_per_encoding_shape()


def _packed_canal(n: int, rows: list[dict], old: list[dict] | None, kind: str, es: int) -> bytes:
    """A Canal message carrying several rows: of one key, of several keys, a key change (``old`` has the id)."""
    return orjson.dumps({"data": rows, "database": "shop", "table": "packed", "es": es, "id": n, "isDdl": False,
                         "mysqlType": {"id": "int", "v": "varchar(10)"}, "old": old, "pkNames": ["id"], "sql": "",
                         "sqlType": {"id": 4, "v": 12}, "ts": es, "type": kind})


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("key-archive")
    w = simulate(11, "2024-01-01", rows=25, changes=250)
    write_archive(w.snapshot + w.changes, "canal-json", root / "part-00000.jsonl")
    es = 1704067200000
    lines = [
        _packed_canal(1, [{"id": "1", "v": "a"}, {"id": "2", "v": "b"}, {"id": "3", "v": "c"}], None, "INSERT", es),
        _packed_canal(2, [{"id": "1", "v": "a2"}, {"id": "1", "v": "a3"}, {"id": "2", "v": "b2"}],
                      [{"v": "a"}, {"v": "a2"}, {"v": "b"}], "UPDATE", es),
        _packed_canal(3, [{"id": "9", "v": "c"}], [{"id": "3"}], "UPDATE", es),  # key change 3 -> 9
        _packed_canal(4, [{"id": "2", "v": None}, {"id": "9", "v": "c"}], None, "DELETE", es),
        b'{"database":"shop","table":"packed","type":"INSERT","data":[{"id":"7"',  # a decode dead letter
    ]
    (root / "part-00001.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return root


def _replay(monkeypatch, in_order: bool, *args: str) -> None:
    real = replay_command.encodes_in_source_order
    taken = []

    def spy(*a, **k):
        taken.append(real(*a, **k) and in_order)
        return taken[-1]

    monkeypatch.setattr(replay_command, "encodes_in_source_order", spy)
    assert cli.main(["replay", *args]) == 0
    monkeypatch.undo()
    assert taken == [in_order]


def _outputs(out: Path) -> dict:
    """Every message and encode dead letter of a re-encode (in any file: the two ways place them differently),
    and the counts."""
    lines = sorted(x for f in (out / "encoded").glob("part-*") for x in f.read_bytes().splitlines())
    dead = sorted((r for f in (out / "encoded_dead_letters").glob("part-*.parquet")
                   for r in pq.read_table(f).to_pylist()),
                  key=lambda r: (r["pos_source"], r["pos_offset"], r["pos_index"] or 0))
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", "_cdc_replay.json", "checkpoint.json", "counts.json",
                                                      "dead_letters", "encoded", "encoded_dead_letters", "events"]
    return {"lines": lines, "dead": dead, "counts": json.loads((out / "counts.json").read_text()),
            "files": len(list((out / "encoded").glob("part-*")))}


def _same_both_ways(tmp_path: Path, monkeypatch, args: list[str]) -> dict:
    _replay(monkeypatch, True, *args, "--out", str(tmp_path / "in-order"))
    _replay(monkeypatch, False, *args, "--out", str(tmp_path / "shuffled"))
    here, after = _outputs(tmp_path / "in-order"), _outputs(tmp_path / "shuffled")
    assert {k: v for k, v in here.items() if k != "files"} == {k: v for k, v in after.items() if k != "files"}
    return here


@pytest.mark.parametrize("target", KEY_TARGETS)
def test_messages_encoded_in_source_order_are_the_messages_encoding_after_the_shuffle_writes(archive, tmp_path,
                                                                                             monkeypatch, target):
    got = _same_both_ways(tmp_path, monkeypatch, ["--source", str(archive), "--format", "canal-json",
                                                  "--to-format", target])
    assert got["files"] > 1  # one a source file
    assert len(got["lines"]) == got["counts"]["encoded"]["messages"] > 250


def test_a_window_tables_and_encode_dead_letters_are_the_same_both_ways(tmp_path, monkeypatch):
    source = tmp_path / "archive" / "part-00000.jsonl"
    source.parent.mkdir()
    source.write_bytes(b"\n".join(debezium_lines() * 3) + b"\n")
    got = _same_both_ways(tmp_path, monkeypatch, ["--source", str(source), "--format", "debezium-json",
                                                  "--to-format", "dataworks-json", "--tables", "appdb.*"])
    dead = got["dead"]
    assert [(d["op"], d["el_field"]) for d in dead] == [("UPDATE", "payload.before")] * 3
    assert got["counts"]["encoded"]["dead_letters"] == 3


def test_every_key_target_encodes_the_same_rows_in_source_order_as_after_the_shuffle(archive, tmp_path):
    """What ``--sink`` or the file lines take is the ENCODED frame: the same rows (key, value, headers, dead
    letters) both ways, for every key target's bytes. Only ``pos_index`` may differ, and no output shows it: after
    the shuffle a message carries the index of the first event of its source message, here its own event's."""
    from pyspark.sql import functions as F

    from cdc_jobs.spark import session

    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path)]) == 0
    spark = session()
    events = spark.read.schema(EVENT_SPARK).parquet(str(tmp_path / "events"))
    columns = [c for c in ENCODED_SPARK.fieldNames() if c != "pos_index"]
    for target in ALL_KEY_TARGETS:  # in one process: every target's bytes
        carried = events.where(F.col("op").isin(replay_command.carried_ops(get_codec(target))))
        here, after = (sorted((tuple(r) for r in df.select(*columns).collect()), key=repr)
                       for df in (in_source_order(carried, target), encode(carried, target, 5)))
        assert here == after, target
        assert all(r[columns.index("headers")] for r in here if r[columns.index("el_reason")] is None)


def test_over_the_dead_letter_budget_no_message_is_published(archive, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--to-format", "oms-default",
                   "--max-dead-letters", "0", "--out", str(out)])
    assert rc == 1 and "dead-letter budget exceeded (--max-dead-letters 0)" in capsys.readouterr().err
    assert not out.exists()
    rejected = Path(str(out) + ".rejected")
    assert {"REJECTED", "counts.json", "dead_letters"} <= {p.name for p in rejected.iterdir()}
    left = [p for p in tmp_path.rglob("*") if p.name in ("encoded", "events")]
    assert not left, left


def _ordered_archive(root: Path) -> Path:
    """Two files of one table; four keys changed in turn, each change's ``v`` its step. Keys 1-3 change in time
    order; key 4's event times run backwards, so for it the source order and the canonical (time) order differ."""
    es = 1704067200000
    for part, steps in enumerate((range(0, 40), range(40, 80))):
        lines = []
        for step in steps:
            key = step % 4 + 1
            first = step < 4
            at = es + (400_000 - step * 1000 if key == 4 else step * 1000)
            lines.append(_packed_canal(step + 1, [{"id": str(key), "v": str(step)}],
                                       None if first else [{"v": str(step - 4)}], "INSERT" if first else "UPDATE", at))
        (root / f"part-{part:05d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return root


def _steps_per_key(encoded: Path, fmt: str, out: Path) -> dict[str, list[int]]:
    """Each key's ``v`` values in the order a consumer reads the messages: files by name, lines in order."""
    from pyspark.sql import functions as F

    from cdc_jobs.spark import session

    assert cli.main(["replay", "--source", str(encoded), "--format", fmt, "--out", str(out)]) == 0
    rows = (session().read.schema(EVENT_SPARK).parquet(str(out / "events"))
            .select(F.col("after")["id"].alias("id"), F.col("after")["v"].alias("v"), "pos_source", "pos_offset",
                    "pos_index")
            .orderBy("pos_source", "pos_offset", "pos_index").collect())
    got: dict[str, list[int]] = {}
    for r in rows:
        got.setdefault(r["id"], []).append(int(r["v"]))
    return got


@pytest.mark.parametrize("target", ["oms-default", "canal-json"])
def test_each_key_keeps_its_source_order(tmp_path, target):
    """A key-order target (oms-default) keeps each key's messages in the order they were read, even where their
    times run backwards (key 4); a target that groups rows (canal-json) is sorted into canonical order, which is
    the source order wherever the times agree with it."""
    (tmp_path / "archive").mkdir()
    archive = _ordered_archive(tmp_path / "archive")
    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--to-format", target,
                     "--out", str(tmp_path / "out")]) == 0
    got = _steps_per_key(tmp_path / "out" / "encoded", target, tmp_path / "again")
    source = {str(k): [s for s in range(80) if s % 4 + 1 == k] for k in range(1, 5)}
    assert {k: got[k] for k in "123"} == {k: source[k] for k in "123"}
    sorted_by_time = list(reversed(source["4"]))
    assert got["4"] == (source["4"] if get_codec(target).capabilities.order_scope == "key" else sorted_by_time)
