"""The Airflow Kafka connection against a real broker: a connection with SASL credentials (login/password plus
librdkafka-style extras, as the Airflow Kafka provider writes them) gives the job the client settings through its
environment only, and `cdc-replay archive` reads a topic from the broker's SASL_PLAINTEXT listener with them;
a wrong password is refused by the broker, and the job's error does not print it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "jobs"))

from kafka_broker import SASL_PASSWORD, SASL_USER  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def connection_env(monkeypatch, password: str) -> None:
    from airflow.sdk import BaseHook, Connection
    from cdc_replay_airflow.hooks.kafka import KafkaClientConfigHook

    conn = Connection(conn_id="kafka_sasl", conn_type="kafka", login=SASL_USER, password=password,
                      extra=json.dumps({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}))
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, cid: conn))
    for key, value in KafkaClientConfigHook("kafka_sasl").job_env().items():  # what spark-submit's env gets
        monkeypatch.setenv(key, value)


def test_archive_reads_a_sasl_listener_with_the_settings_of_an_airflow_connection(spark, kafka_broker, tmp_path,
                                                                                  monkeypatch, capsys):
    from cdc_jobs import cli

    b = kafka_broker
    b.create_topic("sasl-src", 2)
    b.produce("sasl-src", [(i % 2, b"k%d" % i, b"v%d" % i) for i in range(10)])
    connection_env(monkeypatch, SASL_PASSWORD)
    out = tmp_path / "dump"
    argv = ["archive", "--source", b.sasl_url("sasl-src"), "--out", str(out)]
    assert cli.main(argv) == 0
    assert json.loads((out / "_manifest.json").read_text())["records"] == 10

    connection_env(monkeypatch, "wrong-password-4711")
    assert cli.main(["archive", "--source", b.sasl_url("sasl-src"), "--out", str(tmp_path / "refused")]) != 0
    err = capsys.readouterr().err
    assert "wrong-password-4711" not in err and SASL_PASSWORD not in err
    assert not (tmp_path / "refused").exists()
