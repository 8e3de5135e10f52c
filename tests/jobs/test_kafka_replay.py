"""End to end through the CLI: CDC archived in a Kafka topic -> `cdc-replay replay` -> re-encoded into another
topic (--sink) -> replayed again gives the same canonical events; a --checkpoint run picks up only what was
appended since."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_codecs import get_codec
from cdc_codecs.records import from_record
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def canonical(out: Path) -> list[tuple]:
    """What must survive a re-encode: table, op, key, images, event time (not the archive position)."""
    events = [from_record(r) for r in pq.read_table(out / "events").to_pylist()]
    return sorted(((e.qualified_table, e.op.value, e.event_time_ms, tuple(sorted((e.before or {}).items())),
                    tuple(sorted((e.after or {}).items()))) for e in events), key=repr)


def produce_events(broker, topic, events, partitions=3):
    """One Canal message per event, partitioned by its key like a CDC pipeline (all changes of a row in one
    partition, in order)."""
    codec = get_codec("canal-json")
    recs = []
    for e in events:
        for m in codec.encode([e]):
            recs.append((zlib.crc32(m.key) % partitions, m.key, m.value))
    broker.produce(topic, recs)
    return len(recs)


def test_kafka_replay_reencode_to_kafka_and_replay_again_gives_the_same_events(kafka_broker, tmp_path):
    b = kafka_broker
    b.create_topic("e2e-in", 3)
    b.create_topic("e2e-out", 3)
    w = simulate(23, "2024-01-01", rows=15, changes=60)
    n = produce_events(b, "e2e-in", w.snapshot + w.changes)
    cfg = tmp_path / "kafka.json"
    cfg.write_text(json.dumps({"linger_ms": 5}))  # a client config file, as a deployment has one

    first, second = tmp_path / "first", tmp_path / "second"
    assert cli.main(["replay", "--source", b.url("e2e-in"), "--format", "canal-json", "--to-format", "canal-json",
                     "--sink", b.url("e2e-out"), "--kafka-config", str(cfg), "--max-records-per-split", "20",
                     "--out", str(first)]) == 0
    counts = json.loads((first / "counts.json").read_text())
    assert counts["records_read"] == n and counts["dead_letters"] == 0
    assert {s["source"] for s in counts["sources"]} == {"e2e-in"}
    written = counts["encoded"]["sink"]["written"]
    assert written == counts["encoded"]["messages"] > 0
    assert counts["encoded"]["sink"]["mode"] == "transactional" and counts["encoded"]["sink"]["committed"] == written

    assert cli.main(["replay", "--source", b.url("e2e-out"), "--format", "canal-json", "--kafka-config", str(cfg),
                     "--out", str(second)]) == 0
    assert json.loads((second / "counts.json").read_text())["records_read"] == written
    assert canonical(second) == canonical(first)
    assert len(canonical(first)) == len(w.snapshot) + len(w.changes)

    # Continue from the first run's checkpoint after more changes were archived: only the new ones come.
    more = simulate(29, "2024-01-02", rows=3, changes=10)
    m = produce_events(b, "e2e-in", more.snapshot + more.changes)
    third = tmp_path / "third"
    assert cli.main(["replay", "--source", b.url("e2e-in"), "--format", "canal-json", "--kafka-config", str(cfg),
                     "--checkpoint", str(first / "checkpoint.json"), "--out", str(third)]) == 0
    assert json.loads((third / "counts.json").read_text())["records_read"] == m


def test_dts_avro_topic_window_replays_every_event_inside_exactly_once(kafka_broker, tmp_path):
    """Binary DTS Avro records over 3 partitions, record timestamps = source event times; the CLI replays from
    06:00 to 18:00 of the day with parallel splits: Kafka's timestamp index finds both edges from the record
    timestamps, and the replay's event-time filter keeps exactly the window's events."""
    b = kafka_broker
    b.create_topic("dts-in", 3)
    codec = get_codec("dts-avro")
    w = simulate(31, "2024-02-01", rows=10, changes=80)
    events = w.snapshot + w.changes
    recs = []
    for e in events:
        for m in codec.encode([e]):
            recs.append((zlib.crc32(m.key) % 3, m.key, m.value, [], e.event_time_ms))
    b.produce("dts-in", recs)
    since, until = 1706767200000, 1706810400000  # 2024-02-01T06:00Z to 18:00Z
    out = tmp_path / "out"
    assert cli.main(["replay", "--source", b.url("dts-in"), "--format", "dts-avro", "--since", str(since),
                     "--until", str(until), "--max-records-per-split", "15", "--out", str(out)]) == 0
    got = [from_record(r) for r in pq.read_table(out / "events").to_pylist()]
    # DTS carries event time in seconds and DATETIME fractions as integer microseconds (it cannot say whether the
    # source printed .415410 or .41541): compare those as values.
    value = lambda v: re.sub(r"(\.\d*?)0+$", r"\1", v) if v else v  # noqa: E731
    key = lambda e: (e.qualified_table, e.op.value, e.event_time_ms // 1000,  # noqa: E731
                     tuple(sorted((k, value(v)) for k, v in (e.after or e.before or {}).items())))
    expected = sorted((key(e) for e in events if since <= e.event_time_ms < until), key=repr)
    assert sorted((key(e) for e in got), key=repr) == expected
    positions = [(e.position.source, e.position.partition, e.position.offset) for e in got]
    assert len(set(positions)) == len(positions) and {p[1] for p in positions} == {0, 1, 2}
    # What Kafka's time index gives per partition: from the first record stamped at or after since - lookback
    # (1 h) to the first at or after until + lookahead (1 h), in offset order.
    read = 0
    for p in range(3):
        stamps = [r[4] for r in recs if r[0] == p]
        first = lambda t: next((i for i, ts in enumerate(stamps) if ts >= t), len(stamps))  # noqa: E731
        read += max(0, first(until + 3_600_000) - first(since - 3_600_000))
    counts = json.loads((out / "counts.json").read_text())
    assert 0 < counts["records_read"] == read < len(recs) and counts["dead_letters"] == 0
    assert counts["filtered_out"]["window"] == read - len(expected)


def test_a_corrupt_message_is_a_dead_letter_read_again_from_its_partition_only(kafka_broker, tmp_path):
    """A replay without --to-format writes the events and counts in one pass and reads the dead letters again
    from the partitions that had some, over the offsets it planned: exactly the corrupt message, with its bytes
    and position, beside every other message as an event."""
    b = kafka_broker
    b.create_topic("dl-in", 3)
    w = simulate(29, "2024-01-01", rows=10, changes=40)
    n = produce_events(b, "dl-in", w.snapshot + w.changes)
    corrupt = b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":"1"'
    b.produce("dl-in", [(1, b"k", corrupt)])
    out = tmp_path / "out"
    assert cli.main(["replay", "--source", b.url("dl-in"), "--format", "canal-json", "--max-dead-letters", "1",
                     "--out", str(out)]) == 0
    counts = json.loads((out / "counts.json").read_text())
    assert counts["records_read"] == n + 1 and counts["dead_letters"] == 1
    dead = pq.read_table(out / "dead_letters").to_pylist()
    partition_1 = next(s for s in counts["sources"] if s["partition"] == 1)
    assert [(d["pos_source"], d["pos_partition"], d["pos_offset"], d["dl_raw"]) for d in dead] == \
        [("dl-in", 1, partition_1["last_offset"], corrupt)]
    assert "canal-json" in dead[0]["dl_reason"]
    assert sum(sum(ops.values()) for ops in counts["events"].values()) + sum(counts["control"].values()) == n


# Canal messages the JVM declines (a DDL) or cannot parse (the dead letter), a DTS record it cannot read (the dead
# letter); the other formats': test_jvm_decode's.
CANAL_ODD = {"canal-json": {5: b'{"database":"shop","table":"t","type":"ALTER","isDdl":true,"es":1,"ts":2,"id":3,'
                               b'"sql":"ALTER TABLE t ADD c int","data":null,"old":null,"pkNames":null}',
                            8: b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":"1"'},
             "dts-avro": {8: b"\x02not a DTS record"}}


def kafka_outputs(out: Path) -> dict:
    """What a user reads of a Kafka replay: counts, and events and dead letters in topic, partition, offset order."""
    import pyarrow.dataset as ds

    got = {"counts": json.loads((out / "counts.json").read_text())}
    order = [(c, "ascending") for c in ("pos_source", "pos_partition", "pos_offset", "pos_index")]
    for sub in ("events", "dead_letters"):
        got[sub] = ds.dataset(out / sub, format="parquet", partitioning="hive").to_table().sort_by(order).to_pylist()
    if (out / "encoded").exists():
        got["encoded"] = sorted(line for p in (out / "encoded").glob("part-*") for line in p.read_bytes().splitlines())
    return got


@pytest.mark.parametrize("fmt, to_format", [("canal-json", None), ("maxwell-json", None), ("drs-json", None),
                                            ("oms-shareplex", None), ("dts-avro", None), ("drs-json", "oms-default")])
def test_a_topic_decoded_in_the_jvm_replays_as_the_python_path_does(kafka_broker, tmp_path, monkeypatch, fmt,
                                                                    to_format):
    """A topic of a format with a JVM decode (declared; dts-avro's twins), over two partitions, in splits smaller than
    the JVM's blocks: messages it takes, messages it declines (the codec decodes them), a broken one, a tombstone,
    keys and headers. Decoded in the JVM (RecordBlockDecode) or in Python, a user reads the same events, dead letters
    and counts, every record at its own topic, partition and offset."""
    from test_jvm_decode import ODD_LINES  # beside this file (tests/jobs is on sys.path)

    from cdc_jobs.transforms import jvm_decode

    b = kafka_broker
    topic = f"jvm-{fmt}-{to_format}"
    b.create_topic(topic, 2)
    w = simulate(7, "2024-01-01", rows=40, changes=200)
    codec = get_codec(fmt)
    messages = [m for e in w.snapshot + w.changes for m in codec.encode([e])]
    values = [m.value for m in messages]
    for i, line in {**ODD_LINES, **CANAL_ODD}[fmt].items():
        values[i] = line
    recs = [(i % 2, m.key, v, [("trace", str(i).encode())] if i % 3 == 0 else [], 1704067200000 + i)
            for i, (m, v) in enumerate(zip(messages, values))]
    recs.insert(10, (1, b"gone", None))  # a tombstone between the messages of partition 1
    b.produce(topic, recs)
    calls = []
    monkeypatch.setattr(jvm_decode, "decode_records",
                        lambda *a, _f=jvm_decode.decode_records: calls.append(1) or _f(*a))
    monkeypatch.setattr(jvm_decode, "RECORDS_PER_BLOCK", 64)  # blocks end inside a split, and at its end

    def replay(mode: str) -> dict:
        monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", mode)
        out = tmp_path / mode
        extra = ["--to-format", to_format] if to_format else []
        assert cli.main(["replay", "--source", b.url(topic), "--format", fmt, "--max-records-per-split", "150",
                         "--out", str(out), *extra]) == 0
        return kafka_outputs(out)

    jvm, python = replay("on"), replay("off")
    # one pass, then the dead letter's partition read again (a re-encode keeps the decoded rows instead)
    assert calls == ([1] if to_format else [1, 1]), "the replay did not decode in the JVM"
    assert ("encoded" in jvm) == bool(to_format)
    assert jvm["counts"]["records_read"] == len(recs) and jvm["counts"]["tombstones"] == 1
    assert jvm["counts"]["dead_letters"] == 1 and len(jvm["events"]) > 200
    assert {(e["pos_partition"], e["pos_key"]) for e in jvm["events"]} >= {(0, messages[0].key), (1, messages[1].key)}
    assert any(e["pos_headers"] for e in jvm["events"])
    assert jvm == python
