"""Client settings (``kafka_config``: kafka-python keyword names) -> the Java consumer's properties, as the
``kafka.``-prefixed options of Spark's Kafka source.

The settings still come only from the settings file or the Airflow connection (``kafka_config``); this module
only respells them. SASL user and password become a ``sasl.jaas.config`` for the mechanism's login module; PEM
files become PEM trust and key stores (the Java client reads the CA file itself; the client certificate and key
are read here, because the Java client takes a PEM key store from one file only when key and chain share it).
Settings the Java client has no equivalent for are refused when they concern security (a reader must not
connect with less protection than the user configured) and ignored with a warning otherwise.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping

from cdc_jobs.errors import UsageError

log = logging.getLogger(__name__)

# kafka-python names whose Java name is the same with dots (and whose values mean the same).
_SAME = {
    "client_id", "client_rack", "request_timeout_ms", "connections_max_idle_ms", "reconnect_backoff_ms",
    "reconnect_backoff_max_ms", "retry_backoff_ms", "fetch_min_bytes", "fetch_max_wait_ms", "fetch_max_bytes",
    "max_partition_fetch_bytes", "max_poll_records", "receive_buffer_bytes", "send_buffer_bytes",
    "metadata_max_age_ms", "check_crcs", "security_protocol", "sasl_mechanism", "sasl_kerberos_service_name",
    "isolation_level", "session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "client_dns_lookup",
}
# Handled together below.
_SASL_LOGIN = {"sasl_plain_username", "sasl_plain_password"}
_SSL_FILES = {"ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_check_hostname"}
# Security settings the Java client cannot take from these names: refused, never dropped.
_REFUSED = {
    "ssl_crlfile": "the Java client checks revocation through the JVM's settings, not a CRL file",
    "ssl_ciphers": "Java cipher-suite names differ from OpenSSL's; set ssl.cipher.suites for the JVM instead",
    "ssl_context": "a Python SSL context cannot be handed to the Java client",
    "sasl_oauth_token_provider": "a Python token provider cannot be handed to the Java client",
    "sasl_kerberos_name": "Kerberos logins need a sasl.jaas.config the settings file cannot carry here",
    "sasl_kerberos_domain_name": "Kerberos logins need a sasl.jaas.config the settings file cannot carry here",
    "socks5_proxy": "the Java client has no SOCKS proxy setting", "proxy_url": "the Java client has no proxy setting",
}
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}

def _jaas_quoted(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read_pem(key: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:  # the path is not secret, its content is
        raise UsageError(f"Kafka setting '{key}': cannot read the PEM file '{path}' ({type(exc).__name__})"
                         ) from None


def java_consumer_properties(config: Mapping[str, Any]) -> dict[str, str]:
    """kafka-python settings -> Java consumer properties (unprefixed). Producer-only settings are left out."""
    from cdc_jobs.io.kafka_config import for_consumer

    settings = for_consumer(config)
    out: dict[str, str] = {}
    for key, value in settings.items():
        if key in _SAME:
            out[key.replace("_", ".")] = str(value).lower() if isinstance(value, bool) else str(value)
        elif key in _REFUSED:
            raise UsageError(f"Kafka setting '{key}' cannot be used by Spark's Kafka reader: {_REFUSED[key]}")
        elif key not in _SASL_LOGIN | _SSL_FILES:
            log.warning("Kafka setting '%s' has no Java client equivalent and is not used for reading", key)
    if _SASL_LOGIN & settings.keys():
        mechanism = str(settings.get("sasl_mechanism", "PLAIN")).upper()
        module = _LOGIN_MODULES.get(mechanism)
        if module is None or not _SASL_LOGIN <= settings.keys():
            raise UsageError(f"Kafka settings 'sasl_plain_username'/'sasl_plain_password' need both, and the "
                             f"mechanism PLAIN or SCRAM-SHA-256/512 (got '{mechanism}')")
        out["sasl.jaas.config"] = (f"{module} required username={_jaas_quoted(settings['sasl_plain_username'])} "
                                   f"password={_jaas_quoted(settings['sasl_plain_password'])};")
    if "ssl_cafile" in settings:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = str(settings["ssl_cafile"])
    if "ssl_certfile" in settings or "ssl_keyfile" in settings:
        if not {"ssl_certfile", "ssl_keyfile"} <= settings.keys():
            raise UsageError("Kafka settings 'ssl_certfile' and 'ssl_keyfile' go together for Spark's Kafka reader")
        out["ssl.keystore.type"] = "PEM"
        out["ssl.keystore.certificate.chain"] = _read_pem("ssl_certfile", settings["ssl_certfile"])
        out["ssl.keystore.key"] = _read_pem("ssl_keyfile", settings["ssl_keyfile"])
        if settings.get("ssl_password"):
            out["ssl.key.password"] = str(settings["ssl_password"])
    if settings.get("ssl_check_hostname") is False:
        out["ssl.endpoint.identification.algorithm"] = ""
    return out


def spark_source_options(config: Mapping[str, Any]) -> dict[str, str]:
    """The ``kafka.``-prefixed options of Spark's Kafka source for these settings, with records of aborted
    transactions left out unless the settings ask otherwise (the archive holds committed records only)."""
    props = java_consumer_properties(config)
    props.setdefault("isolation.level", "read_committed")
    return {f"kafka.{k}": v for k, v in props.items()}
