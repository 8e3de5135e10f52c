"""spark-submit for the cdc-replay jobs, with secrets kept off its command line.

The Spark provider's hook turns ``env_vars`` into ``--conf spark.yarn.appMasterEnv.K=V`` (YARN) or
``spark.kubernetes.driverEnv.K=V`` (Kubernetes) options: visible in ``ps`` and in the logged command. Secrets
(reference database URL, Kafka SASL settings) therefore never go through ``env_vars``: this hook adds them to
the spark-submit process environment only, where a local or client-mode driver inherits them, and refuses to
run when the driver would not (cluster deploy mode, Kubernetes) instead of leaking them or silently dropping
them.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook


class SecretEnvError(RuntimeError):
    pass


class CdcSparkSubmitHook(SparkSubmitHook):
    _secret_env: dict[str, str]

    @classmethod
    def adopt(cls, hook: SparkSubmitHook, secret_env: dict[str, str]) -> "CdcSparkSubmitHook":
        """The operator's ready-made hook, with the one step this class overrides. (The Spark operator builds
        its hook from two dozen arguments; adopting it keeps them all as that operator version defines them.)"""
        adopted = cls.__new__(cls)
        adopted.__dict__.update(hook.__dict__)
        adopted._secret_env = dict(secret_env)
        return adopted

    def _build_spark_submit_command(self, application: str) -> list[str]:
        command = super()._build_spark_submit_command(application)
        secrets = getattr(self, "_secret_env", {})
        if secrets:
            if self._connection.get("deploy_mode") == "cluster" or self._is_kubernetes:
                raise SecretEnvError(
                    f"{', '.join(sorted(secrets))} would have to travel as spark-submit --conf options in "
                    f"cluster deploy mode / on Kubernetes, which puts them on a command line: use client mode, "
                    f"or give the driver the secret through the cluster's own secret mechanism")
            self._env = {**(self._env or {}), **secrets}
        return command

    def secret_values(self) -> list[str]:
        return [v for v in getattr(self, "_secret_env", {}).values() if v]


def command_line(hook: Any, application: str) -> list[str]:
    """The exact argv spark-submit will be started with (tests grep it for secrets)."""
    return hook._build_spark_submit_command(application)
