"""Kafka URLs and client settings.

``kafka://HOST:PORT[,HOST:PORT]/TOPIC[,TOPIC]`` names brokers and topics only. Everything else a client needs
(SASL/SSL, timeouts) comes from a settings file (``--kafka-config FILE`` or ``CDC_REPLAY_KAFKA_CONFIG=FILE``)
or, when Airflow runs the job, from ``CDC_REPLAY_KAFKA_CONFIG_JSON`` (the DAG fills it from a connection), never
from the command line, so secrets stay out of ``ps``, shell history and Spark/Airflow logs. Error messages name
setting *keys* only, never values.

Files are JSON objects or Java-style properties. Keys may be written the kafka-python way (``sasl_mechanism``)
or the Java way (``sasl.mechanism``) or the librdkafka way of an Airflow Kafka connection (``sasl.username``,
``ssl.ca.location``); ``sasl.jaas.config`` with a Plain/Scram login module is translated to
``sasl_plain_username``/``sasl_plain_password``. Settings the jobs own (bootstrap servers, group, commits, acks,
idempotence) are ignored with a warning; unknown keys are errors.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from cdc_jobs.errors import UsageError

log = logging.getLogger(__name__)

ENV_FILE = "CDC_REPLAY_KAFKA_CONFIG"
ENV_JSON = "CDC_REPLAY_KAFKA_CONFIG_JSON"

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):(\d{1,5})$")
_TOPIC = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")

# Settings the jobs decide themselves: reading must be manual and repeatable, writing durable and idempotent. An
# Airflow Kafka connection usually carries some of them (bootstrap.servers, group.id): they are ignored, with a
# warning that names the key.
_OWNED = {
    "bootstrap_servers": "comes from the kafka:// URL",
    "group_id": "replay reads assigned partitions without a consumer group",
    "enable_auto_commit": "replay never commits offsets",
    "auto_offset_reset": "replay seeks to planned offsets",
    "key_deserializer": "records are read as bytes", "value_deserializer": "records are read as bytes",
    "key_serializer": "messages are written as bytes", "value_serializer": "messages are written as bytes",
    "acks": "the sink always writes with acks=all", "enable_idempotence": "the sink is always idempotent",
    "transactional_id": "the sink is idempotent, not transactional",
}
# librdkafka (confluent-kafka, the Airflow Kafka provider's connection extras) and Java names -> kafka-python.
_ALIASES = {
    "sasl_mechanisms": "sasl_mechanism",
    "sasl_username": "sasl_plain_username",
    "sasl_password": "sasl_plain_password",
    "ssl_ca_location": "ssl_cafile",
    "ssl_certificate_location": "ssl_certfile",
    "ssl_key_location": "ssl_keyfile",
    "ssl_key_password": "ssl_password",
    "ssl_crl_location": "ssl_crlfile",
}
_JAAS_USER = re.compile(r'username\s*=\s*"((?:[^"\\]|\\.)*)"')
_JAAS_PASSWORD = re.compile(r'password\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class KafkaUrl:
    bootstrap: tuple[str, ...]
    topics: tuple[str, ...]

    def __str__(self) -> str:
        return f"kafka://{','.join(self.bootstrap)}/{','.join(self.topics)}"


def is_kafka_url(text: str) -> bool:
    return str(text).lower().startswith("kafka://")


def parse_kafka_url(url: str, option: str = "--source") -> KafkaUrl:
    text = str(url).strip()
    if not is_kafka_url(text):
        raise UsageError(f"{option}: '{text}' is not a Kafka URL (kafka://HOST:PORT[,HOST:PORT]/TOPIC[,TOPIC])")
    rest = text[len("kafka://"):]
    if "?" in rest or "#" in rest:
        raise UsageError(f"{option}: Kafka URLs take no query string; client settings go in --kafka-config "
                         f"or ${ENV_FILE}")
    hosts_part, slash, topics_part = rest.partition("/")
    if "@" in hosts_part:
        # Never echo the URL here: it may hold a password.
        raise UsageError(f"{option}: credentials do not belong in the Kafka URL; put them in --kafka-config "
                         f"or ${ENV_FILE}")
    hosts = [h.strip() for h in hosts_part.split(",") if h.strip()]
    if not hosts:
        raise UsageError(f"{option}: '{text}' names no broker (kafka://HOST:PORT/TOPIC)")
    for h in hosts:
        m = _HOST_PORT.match(h)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise UsageError(f"{option}: broker '{h}' in '{text}' is not HOST:PORT")
    topics = [t.strip() for t in topics_part.split(",") if t.strip()] if slash else []
    if not topics:
        raise UsageError(f"{option}: '{text}' names no topic (kafka://HOST:PORT/TOPIC[,TOPIC])")
    for t in topics:
        if not _TOPIC.match(t) or t in (".", ".."):
            raise UsageError(f"{option}: '{t}' is not a valid Kafka topic name (letters, digits, '.', '_', '-')")
    return KafkaUrl(tuple(hosts), tuple(dict.fromkeys(topics)))


def _known_keys() -> tuple[dict[str, Any], dict[str, Any]]:
    from kafka import KafkaConsumer, KafkaProducer

    return dict(KafkaConsumer.DEFAULT_CONFIG), dict(KafkaProducer.DEFAULT_CONFIG)


def _parse_properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if not m:
            raise UsageError(f"Kafka settings line {lineno}: expected 'key=value'")
        out[m.group(1)] = m.group(2).strip()
    return out


def _coerce(key: str, value: Any, default: Any) -> Any:
    """Properties files hold text; kafka-python wants the type of its default."""
    if not isinstance(value, str) or default is None or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false"):
                raise ValueError
            return value.lower() == "true"
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise UsageError(f"Kafka setting '{key}': expected a {type(default).__name__}") from None
    return value


def normalise(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Java or kafka-python key spellings -> kafka-python keyword arguments, checked against the clients."""
    consumer, producer = _known_keys()
    known = consumer | producer
    out: dict[str, Any] = {}
    for raw_key, value in settings.items():
        key = str(raw_key).strip().lower().replace(".", "_").replace("-", "_")
        if key == "sasl_jaas_config":
            user, password = _JAAS_USER.search(str(value)), _JAAS_PASSWORD.search(str(value))
            if not (user and password):
                raise UsageError("Kafka setting 'sasl.jaas.config': only a login module with username=\"...\" "
                                 "password=\"...\" (Plain/Scram) can be translated")
            out["sasl_plain_username"] = user.group(1).replace('\\"', '"')
            out["sasl_plain_password"] = password.group(1).replace('\\"', '"')
            continue
        key = _ALIASES.get(key, key)
        if key in _OWNED:
            log.warning("Kafka setting '%s' is ignored: %s", raw_key, _OWNED[key])
            continue
        if key == "ssl_endpoint_identification_algorithm":
            out["ssl_check_hostname"] = str(value).strip().lower() == "https"
            continue
        if key not in known:
            raise UsageError(f"Kafka setting '{raw_key}' is not a kafka-python client setting")
        out[key] = _coerce(str(raw_key), value, known[key])
    return out


def _read_file(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--kafka-config: '{path}' is not a file")
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--kafka-config: '{path}' is not valid JSON (line {getattr(exc, 'lineno', '?')})"
                             ) from None
        if not isinstance(data, dict):
            raise UsageError(f"--kafka-config: '{path}' must hold a JSON object of settings")
        return data
    return _parse_properties(text)


def load_client_config(path_or_none: Optional[str] = None) -> dict[str, Any]:
    """Settings from ``path_or_none``, else the file named by $CDC_REPLAY_KAFKA_CONFIG, else the JSON object in
    $CDC_REPLAY_KAFKA_CONFIG_JSON, else none (a plaintext broker)."""
    if path_or_none:
        return normalise(_read_file(path_or_none))
    if os.environ.get(ENV_FILE):
        return normalise(_read_file(os.environ[ENV_FILE]))
    if os.environ.get(ENV_JSON):
        try:
            data = json.loads(os.environ[ENV_JSON])
        except ValueError:
            raise UsageError(f"${ENV_JSON} is not valid JSON") from None
        if not isinstance(data, dict):
            raise UsageError(f"${ENV_JSON} must hold a JSON object of settings")
        return normalise(data)
    return {}


def for_consumer(config: Mapping[str, Any]) -> dict[str, Any]:
    consumer, _ = _known_keys()
    return {k: v for k, v in config.items() if k in consumer}


def for_producer(config: Mapping[str, Any]) -> dict[str, Any]:
    _, producer = _known_keys()
    return {k: v for k, v in config.items() if k in producer}


def describe(config: Mapping[str, Any]) -> str:
    """For logs: which settings are set, never their values."""
    return ", ".join(sorted(config)) or "(none)"
