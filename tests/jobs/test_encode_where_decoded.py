"""A re-encode into a target that needs only per-key order is encoded by the decode tasks (``encode.encode_each``)
and its messages shuffled and sorted (``encode.in_key_order``): what a user gets must be exactly what encoding
after the events' shuffle gives (``encode.encode``): the same files with the same lines in the same order, the same
encode dead letters in the same files, and the same counts."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_codecs import get_codec
from cdc_codecs.event_schema import EVENT_ARROW
from cdc_codecs.registry import available_formats
from cdc_jobs import cli
from cdc_jobs.commands import replay as replay_command
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.schemas import ENCODED_KEYED_SPARK, ENCODED_SPARK, EVENT_SPARK
from cdc_jobs.transforms.encode import encode, encode_each, in_key_order, route_key, route_keys, routing_key

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


def _replay(monkeypatch, where_decoded: bool, *args: str) -> None:
    real = replay_command.events_here
    taken = []

    def spy(*a, **k):
        here = real(*a, **k)
        taken.append(here is not None and here.encode is not None)
        return here

    monkeypatch.setattr(replay_command, "events_here", spy)
    if not where_decoded:  # the decode tasks still write events/; only the encoding moves after the shuffle
        monkeypatch.setattr(replay_command, "encodes_where_decoded", lambda target: False)
    assert cli.main(["replay", *args]) == 0
    monkeypatch.undo()
    assert taken == [where_decoded]


def _outputs(out: Path) -> dict:
    """Every file a user reads of a re-encode, as they would compare them: files by name, lines in order."""
    got = {f.name: f.read_bytes() for f in sorted((out / "encoded").glob("part-*"))}
    for f in sorted((out / "encoded_dead_letters").glob("part-*.parquet")):
        got["encoded_dead_letters/" + f.name.split("-")[1]] = pq.read_table(f).to_pylist()
    counts = json.loads((out / "counts.json").read_text())
    got["counts"] = counts
    for scratch in (replay_command.ENCODING, replay_command.COUNTING, replay_command.TALLYING):  # never published
        assert not (out / scratch).exists()
    return got


def _same_both_ways(tmp_path: Path, monkeypatch, args: list[str]) -> dict:
    _replay(monkeypatch, True, *args, "--out", str(tmp_path / "decoded"))
    _replay(monkeypatch, False, *args, "--out", str(tmp_path / "after"))
    here, after = _outputs(tmp_path / "decoded"), _outputs(tmp_path / "after")
    assert here == after
    return here


@pytest.mark.parametrize("target", KEY_TARGETS)
def test_messages_encoded_where_decoded_are_the_files_encoding_after_the_shuffle_writes(archive, tmp_path,
                                                                                        monkeypatch, target):
    got = _same_both_ways(tmp_path, monkeypatch, ["--source", str(archive), "--format", "canal-json",
                                                  "--to-format", target])
    lines = [x for name, v in got.items() if name.startswith("part-") for x in v.splitlines()]
    assert len([k for k in got if k.startswith("part-")]) > 1  # several tasks, so the placement is compared too
    assert len(lines) == got["counts"]["encoded"]["messages"] > 250


def test_a_window_tables_and_encode_dead_letters_are_the_same_both_ways(tmp_path, monkeypatch):
    source = tmp_path / "archive" / "part-00000.jsonl"
    source.parent.mkdir()
    source.write_bytes(b"\n".join(debezium_lines() * 3) + b"\n")
    got = _same_both_ways(tmp_path, monkeypatch, ["--source", str(source), "--format", "debezium-json",
                                                  "--to-format", "dataworks-json", "--tables", "appdb.*"])
    dead = [r for k, v in got.items() if k.startswith("encoded_dead_letters/") for r in v]
    assert [(d["op"], d["el_field"]) for d in dead] == [("UPDATE", "payload.before")] * 3
    assert got["counts"]["encoded"]["dead_letters"] == 3


def test_the_routing_key_of_an_event_is_the_one_spark_computes():
    from cdc_jobs.spark import session

    images = [None, {}, {"id": "1"}, {"id": None}, {"id": ""}, {"id": "2", "k": "x"}, {"k": "y"}]
    rows = [(pk, b, a) for pk in (None, [], ["id"], ["id", "k"], ["k", "id"], ["missing"])
            for b in images for a in images]
    spark = session()
    frame = spark.createDataFrame(rows, "primary_key array<string>, before map<string,string>, "
                                        "after map<string,string>")
    want = [r[0] for r in frame.select(routing_key()).collect()]
    pairs = [(pk, None if b is None else list(b.items()), None if a is None else list(a.items())) for pk, b, a in rows]
    assert [route_key(*r) for r in pairs] == want  # images as the batch columns hold them: lists of pairs
    assert len(set(want)) > 6
    batch = pa.RecordBatch.from_pydict({"primary_key": [r[0] for r in pairs], "before": [r[1] for r in pairs],
                                        "after": [r[2] for r in pairs]},
                                       schema=pa.schema([f for f in EVENT_ARROW if f.name in ("primary_key", "before",
                                                                                             "after")]))
    assert route_keys(batch).to_pylist() == want  # column-wise, as encode_each computes them
    for start in (1, 50, 200):  # a slice of a batch: offsets into its lists and maps
        assert route_keys(batch.slice(start, 40)).to_pylist() == want[start:start + 40]


def test_the_sink_gets_the_same_keys_headers_and_order_from_every_task(archive, tmp_path):
    """What ``--sink`` sends is the ENCODED frame itself: the same rows (key, value, headers) in the same task, in
    the same order, both ways. Only ``pos_index`` may differ, and no output shows it: after the shuffle a message
    carries the index of the first event of its source message in that task, here its own event's."""
    from pyspark.sql import functions as F

    from cdc_jobs.spark import session

    assert cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path)]) == 0
    spark = session()
    events = spark.read.schema(EVENT_SPARK).parquet(str(tmp_path / "events"))
    columns = [c for c in ENCODED_SPARK.fieldNames() if c != "pos_index"]
    for target in ALL_KEY_TARGETS:  # in one process: every target's bytes
        carried = events.where(F.col("op").isin(replay_command.carried_ops(get_codec(target))))
        keyed = carried.mapInArrow(
            lambda batches, fmt=target: (b for b in (encode_each(fmt, x) for x in batches) if b is not None),
            ENCODED_KEYED_SPARK)
        # In random order first: the messages' order must come from their keys alone (an UPDATE's two DataWorks
        # messages share their event's place and differ in msg_index), not from the order they were written in.
        # (Checkpointed: Spark drops a sort that a shuffle follows.)
        shuffled = keyed.orderBy(F.rand(7)).localCheckpoint()
        got = [in_key_order(shuffled, 5), encode(carried, target, 5)]
        here, after = ([tuple(r) for r in df.select(F.spark_partition_id(), *columns).collect()] for df in got)
        assert here == after, target
        assert len({r[0] for r in here}) > 1 and all(r[columns.index("headers") + 1] for r in here
                                                     if r[columns.index("el_reason") + 1] is None)


def test_over_the_dead_letter_budget_no_message_is_published_and_no_scratch_is_left(archive, tmp_path, capsys):
    """The decode tasks encode before the budget is known; past it, what they encoded must go with the stage."""
    out = tmp_path / "out"
    rc = cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--to-format", "oms-default",
                   "--max-dead-letters", "0", "--out", str(out)])
    assert rc == 1 and "dead-letter budget exceeded (--max-dead-letters 0)" in capsys.readouterr().err
    assert not out.exists()
    rejected = Path(str(out) + ".rejected")
    assert {"REJECTED", "counts.json", "dead_letters"} <= {p.name for p in rejected.iterdir()}
    left = [p for p in tmp_path.rglob("*")
            if p.name in (replay_command.ENCODING, replay_command.COUNTING, replay_command.TALLYING, "encoded",
                          "events")]
    assert not left, left
