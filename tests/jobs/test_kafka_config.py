"""Kafka URLs, client settings files (never on the command line, never echoed) and --lookback durations."""

from __future__ import annotations

import json

import pytest

from cdc_jobs.durations import parse_duration
from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_config import (ENV_FILE, ENV_JSON, for_consumer, for_producer, load_client_config,
                                   parse_kafka_url)

SECRET = "s3cr3t-Pa55"


def test_url_with_several_brokers_and_topics():
    u = parse_kafka_url("kafka://b1.example:9092, b2.example:9093/orders,customers,orders")
    assert u.bootstrap == ("b1.example:9092", "b2.example:9093")
    assert u.topics == ("orders", "customers")  # duplicates would read a partition twice
    assert str(u) == "kafka://b1.example:9092,b2.example:9093/orders,customers"


@pytest.mark.parametrize("url, fragment", [
    ("http://h:1/t", "not a Kafka URL"),
    ("kafka://h:1", "names no topic"),
    ("kafka://h:1/", "names no topic"),
    ("kafka:///t", "names no broker"),
    ("kafka://h/t", "'h' in"),
    ("kafka://h:99999/t", "is not HOST:PORT"),
    ("kafka://h:1/bad topic", "not a valid Kafka topic"),
    ("kafka://h:1/t?security.protocol=SSL", "no query string"),
])
def test_bad_urls_are_usage_errors_naming_the_option(url, fragment):
    with pytest.raises(UsageError) as err:
        parse_kafka_url(url)
    assert "--source" in str(err.value) and fragment in str(err.value)


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(UsageError) as err:
        parse_kafka_url(f"kafka://user:{SECRET}@h:1/t")
    assert SECRET not in str(err.value) and "--kafka-config" in str(err.value)


def test_properties_file_with_java_names_and_jaas_is_translated(tmp_path):
    f = tmp_path / "client.properties"
    f.write_text("# SASL over TLS\n"
                 "security.protocol=SASL_SSL\n"
                 "sasl.mechanism = SCRAM-SHA-512\n"
                 f'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                 f'username="replay" password="{SECRET}";\n'
                 "ssl.check.hostname=false\n"
                 "request.timeout.ms=45000\n"
                 "batch.size=1\n")
    cfg = load_client_config(str(f))
    assert cfg == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                   "sasl_plain_username": "replay", "sasl_plain_password": SECRET,
                   "ssl_check_hostname": False, "request_timeout_ms": 45000, "batch_size": 1}
    # Each client gets the settings it understands (kafka-python refuses unknown keyword arguments).
    assert "batch_size" not in for_consumer(cfg) and for_producer(cfg)["batch_size"] == 1
    assert for_consumer(cfg)["sasl_plain_password"] == SECRET


def test_json_file_from_the_option_then_env_file_then_env_json(tmp_path, monkeypatch):
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem"}))
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"client_id": "from-env-file"}))
    monkeypatch.setenv(ENV_FILE, str(b))
    monkeypatch.setenv(ENV_JSON, json.dumps({"client_id": "from-env-json"}))
    assert load_client_config(str(a)) == {"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem"}
    assert load_client_config(None) == {"client_id": "from-env-file"}
    monkeypatch.delenv(ENV_FILE)
    assert load_client_config(None) == {"client_id": "from-env-json"}
    monkeypatch.delenv(ENV_JSON)
    assert load_client_config(None) == {}


@pytest.mark.parametrize("settings, fragment", [
    ({"sasl_plain_pasword": SECRET}, "'sasl_plain_pasword' is not a kafka-python client setting"),
    ({"ssl.truststore.location": "/etc/kafka.jks"}, "'ssl.truststore.location' is not a kafka-python"),
    ({"request_timeout_ms": "soon"}, "'request_timeout_ms': expected a int"),
    ({"sasl.jaas.config": f"com.example.Kerberos keytab=\"{SECRET}\";"}, "sasl.jaas.config"),
])
def test_bad_settings_name_the_key_and_never_the_value(tmp_path, settings, fragment):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(settings))
    with pytest.raises(UsageError) as err:
        load_client_config(str(f))
    assert fragment in str(err.value)
    assert SECRET not in str(err.value)


def test_airflow_kafka_connection_extras_are_translated_and_owned_settings_ignored(monkeypatch, caplog):
    # What the DAG puts in $CDC_REPLAY_KAFKA_CONFIG_JSON from an Airflow Kafka connection (librdkafka names).
    monkeypatch.setenv(ENV_JSON, json.dumps({
        "bootstrap.servers": "broker:9092", "group.id": "airflow", "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN", "sasl.username": "replay", "sasl.password": SECRET,
        "ssl.ca.location": "/etc/ca.pem", "ssl.endpoint.identification.algorithm": "https", "acks": "1"}))
    with caplog.at_level("WARNING"):
        cfg = load_client_config(None)
    assert cfg == {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "replay",
                   "sasl_plain_password": SECRET, "ssl_cafile": "/etc/ca.pem", "ssl_check_hostname": True}
    assert "bootstrap.servers" in caplog.text and "acks" in caplog.text and SECRET not in caplog.text


def test_missing_or_broken_settings_file_is_a_usage_error(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="is not a file"):
        load_client_config(str(tmp_path / "nope.json"))
    (tmp_path / "x.json").write_text('{"security_protocol": ')
    with pytest.raises(UsageError, match="not valid JSON"):
        load_client_config(str(tmp_path / "x.json"))
    monkeypatch.setenv(ENV_JSON, "[1]")
    with pytest.raises(UsageError, match=ENV_JSON):
        load_client_config(None)


@pytest.mark.parametrize("text, ms", [
    ("1h", 3_600_000), ("30m", 1_800_000), ("1d", 86_400_000), ("90s", 90_000), ("250ms", 250),
    ("1h30m", 5_400_000), ("1.5h", 5_400_000), ("2w", 14 * 86_400_000), ("0", 0), (" 2H ", 7_200_000),
    ("PT1H30M", 5_400_000), ("P1D", 86_400_000), ("PT0.5S", 500),
])
def test_lookback_durations(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "90", "1x", "h", "1h-", "-1h", "P", "PT", "1 hour"])
def test_bad_durations_name_the_option(text):
    with pytest.raises(UsageError, match="--lookback"):
        parse_duration(text)
