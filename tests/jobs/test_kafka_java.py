"""Client settings (as ``kafka_config`` normalises them) -> the kafka.* options of Spark's Kafka source. The
SASL login reaching a real broker through these options is tested in test_archive_kafka (the SASL listener)."""

from __future__ import annotations

import pytest

from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_config import normalise
from cdc_jobs.io.kafka_java import spark_source_options

SECRET = 'pa"ss\\word'


def test_sasl_login_becomes_the_mechanisms_jaas_config_and_reading_is_read_committed():
    scram = spark_source_options(normalise({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                            "sasl.username": "replay", "sasl.password": SECRET,
                                            "request.timeout.ms": "40000", "linger.ms": "5"}))
    assert scram == {
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="replay" password="pa\\"ss\\\\word";',
        "kafka.request.timeout.ms": "40000",  # linger.ms is a producer setting: not for the reader
        "kafka.isolation.level": "read_committed",
    }
    plain = spark_source_options({"sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p",
                                  "isolation_level": "read_uncommitted"})
    assert plain["kafka.sasl.jaas.config"].startswith("org.apache.kafka.common.security.plain.PlainLoginModule ")
    assert plain["kafka.isolation.level"] == "read_uncommitted"  # the user's choice stands


def test_pem_files_become_pem_stores_and_hostname_checking_follows_the_setting(tmp_path):
    (tmp_path / "client.crt").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    (tmp_path / "client.key").write_text("-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n")
    opts = spark_source_options(normalise({"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem",
                                           "ssl.certificate.location": str(tmp_path / "client.crt"),
                                           "ssl.key.location": str(tmp_path / "client.key"),
                                           "ssl.key.password": SECRET, "ssl.endpoint.identification.algorithm": ""}))
    assert opts["kafka.ssl.truststore.type"] == "PEM" and opts["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    assert opts["kafka.ssl.keystore.type"] == "PEM"
    assert opts["kafka.ssl.keystore.certificate.chain"].startswith("-----BEGIN CERTIFICATE-----")
    assert "BBBB" in opts["kafka.ssl.keystore.key"] and opts["kafka.ssl.key.password"] == SECRET
    assert opts["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert "kafka.ssl.endpoint.identification.algorithm" not in spark_source_options({"ssl_check_hostname": True})


@pytest.mark.parametrize("settings, fragment", [
    ({"ssl_crlfile": "/etc/crl.pem"}, "'ssl_crlfile' cannot be used by Spark's Kafka reader"),
    ({"sasl_mechanism": "GSSAPI", "sasl_plain_username": "u", "sasl_plain_password": SECRET}, "GSSAPI"),
    ({"sasl_plain_password": SECRET}, "need both"),
    ({"ssl_certfile": "/etc/c.pem"}, "go together"),
    ({"ssl_certfile": "/no/such.pem", "ssl_keyfile": "/no/such.key"}, "cannot read the PEM file '/no/such.pem'"),
])
def test_settings_the_java_client_cannot_honour_are_refused_naming_the_key_never_the_value(settings, fragment):
    with pytest.raises(UsageError, match="Kafka setting") as err:
        spark_source_options(settings)
    assert fragment in str(err.value) and SECRET not in str(err.value)
