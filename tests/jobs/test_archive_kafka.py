"""`cdc-replay archive`: a topic window dumped to files holds exactly what reading the topic gives, keeps the
Kafka positions when the replay's file source reads it back, and is the same on every run."""

from __future__ import annotations

import base64
import json

import pytest

from cdc_jobs import cli
from cdc_jobs.io.kafka_config import ENV_FILE
from cdc_jobs.io.kafka_source import read_kafka
from cdc_jobs.io.files import read_files

from kafka_broker import SASL_PASSWORD, SASL_USER, wait_ms_boundary

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def raw_rows(df) -> list[tuple]:
    return sorted((r.pos_source, r.pos_partition, r.pos_offset, r.pos_timestamp_ms, r.pos_key, r.value,
                   tuple((h.key, h.value) for h in r.pos_headers)) for r in df.collect())


def _b64(v):
    return None if v is None else base64.b64decode(v)


@pytest.fixture(scope="module")
def topic(kafka_broker):
    name = "archive-src"
    kafka_broker.create_topic(name, 4)  # partition 3 stays empty
    kafka_broker.produce(name, [(i % 3, b"before-%d" % i, b"x") for i in range(6)])
    m1 = wait_ms_boundary()
    inside = [(i % 3, b"key-%d" % i, bytes([i, 0, 255, 10]) + b'"\n{', [("h", bytes([i, 128]))])
              for i in range(20)]
    inside += [(1, b"gone", None), (2, None, b"keyless")]  # a tombstone and a record without key
    kafka_broker.produce(name, inside)
    m2 = wait_ms_boundary()
    kafka_broker.produce(name, [(i % 3, b"after-%d" % i, b"y") for i in range(6)])
    wait_ms_boundary()
    return {"name": name, "m1": m1, "m2": m2, "inside": len(inside)}


def test_archive_window_equals_reading_the_topic_and_reads_back_with_positions(spark, kafka_broker, topic,
                                                                               tmp_path, monkeypatch):
    cfg = tmp_path / "client.json"
    cfg.write_text(json.dumps({"client_id": "archive-test"}))
    monkeypatch.setenv(ENV_FILE, str(cfg))  # settings come from the environment, not the command line
    out = tmp_path / "dump"
    args = ["archive", "--source", kafka_broker.url(topic["name"]), "--since", str(topic["m1"]),
            "--until", str(topic["m2"]), "--lookback", "0", "--out", str(out)]
    assert cli.main(args) == 0

    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert files == [f"{topic['name']}/partition={p}/part-00000.jsonl" for p in range(4)]
    assert (out / topic["name"] / "partition=3" / "part-00000.jsonl").read_bytes() == b""
    assert (out / "_SUCCESS").exists() and not list(out.parent.glob(".dump.*"))

    lines = [json.loads(line) for f in files for line in (out / f).read_text().splitlines()]
    assert set(lines[0]) == {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}
    from_files = sorted((d["topic"], d["partition"], d["offset"], d["timestamp"], _b64(d["key"]), _b64(d["value"]),
                         tuple((h["key"], _b64(h["value"])) for h in d["headers"])) for d in lines)
    from_topic = raw_rows(read_kafka(spark, kafka_broker.url(topic["name"]), topic["m1"], topic["m2"], 0, 5, {}))
    assert from_files == from_topic and len(from_files) == topic["inside"]
    assert any(v is None for *_, v, _ in from_files)  # the tombstone is archived as "value": null

    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["records"] == topic["inside"] and manifest["tombstones"] == 1
    assert sum(p["records"] for p in manifest["partitions"]) == topic["inside"]

    # The replay's file source reads the dump with the Kafka positions, so the two sources are interchangeable.
    assert raw_rows(read_files(spark, [str(out)])) == from_topic

    # Same window again (more records were appended meanwhile): byte-identical archive.
    before = {f: (out / f).read_bytes() for f in files}
    kafka_broker.produce(topic["name"], [(0, b"later", b"z")])
    assert cli.main(args) == 0
    assert {f: (out / f).read_bytes() for f in files} == before


def test_archive_of_a_missing_topic_fails_with_a_clear_message(kafka_broker, tmp_path, capsys):
    out = tmp_path / "none"
    assert cli.main(["archive", "--source", kafka_broker.url("not-there"), "--out", str(out)]) == 2
    assert "topic 'not-there' does not exist" in capsys.readouterr().err
    assert not out.exists()


def test_archive_takes_sasl_settings_from_the_kafka_config_file(kafka_broker, topic, tmp_path, monkeypatch):
    """The broker's SASL_PLAINTEXT listener refuses clients without credentials; the Java-style settings of a
    client config file (sasl.jaas.config) get in. Nothing of them is on the command line."""
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                   "org.apache.kafka.common.security.plain.PlainLoginModule required "
                   f'username="{SASL_USER}" password="{SASL_PASSWORD}";\n')
    monkeypatch.setenv(ENV_FILE, str(cfg))
    out = tmp_path / "dump"
    args = ["archive", "--source", kafka_broker.sasl_url(topic["name"]), "--since", str(topic["m1"]),
            "--until", str(topic["m2"]), "--lookback", "0", "--out", str(out)]
    assert cli.main(args) == 0
    assert json.loads((out / "_manifest.json").read_text())["records"] == topic["inside"]

