"""Kafka client settings (security.protocol, SASL, SSL ...) from an Airflow connection."""

from __future__ import annotations

import json
from typing import Any

from airflow.sdk import BaseHook

from cdc_jobs.io.kafka_config import ENV_JSON as KAFKA_CONFIG_ENV  # the job reads its settings there


class KafkaClientConfigHook(BaseHook):
    """A connection whose extra holds Kafka client settings (the Airflow Kafka provider's connection works as
    is: librdkafka names are translated by the job). Login/password, when set, become SASL credentials.

    The settings reach the job as $CDC_REPLAY_KAFKA_CONFIG_JSON: not on the command line, not in rendered
    template fields, and the job's error messages name keys, never values."""

    conn_name_attr = "kafka_conn_id"
    hook_name = "cdc-replay Kafka client settings"

    def __init__(self, kafka_conn_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id

    def client_config(self) -> dict[str, Any]:
        conn = self.get_connection(self.kafka_conn_id)
        config = dict(conn.extra_dejson or {})
        if conn.login and not any(k in config for k in ("sasl.username", "sasl_plain_username", "sasl_username")):
            config["sasl_plain_username"] = conn.login
        if conn.password and not any(k in config for k in ("sasl.password", "sasl_plain_password", "sasl_password")):
            config["sasl_plain_password"] = conn.password
        return config

    def job_env(self) -> dict[str, str]:
        return {KAFKA_CONFIG_ENV: json.dumps(self.client_config())}
