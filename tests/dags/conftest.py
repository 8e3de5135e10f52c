"""Airflow DAG tests. The DAG folder's helper package is imported the way the DAG files import it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
if str(DAGS) not in sys.path:
    sys.path.insert(0, str(DAGS))


@pytest.fixture
def sample_pipelines(monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_PIPELINES", str(DAGS / "pipelines.sample.yaml"))
    monkeypatch.delenv("AIRFLOW_VAR_CDC_REPLAY_PIPELINES", raising=False)
    return DAGS / "pipelines.sample.yaml"


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment .ci/airflow-env.sh exports, with AIRFLOW_HOME and outputs under a test directory."""
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "CDC_REPLAY_PIPELINES"))}
    env.update({
        "PATH": f"{bin_dir}:{env.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type":"spark","host":"local[2]"}',
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "CDC_REPLAY_SHUFFLE_PARTITIONS": "4",
        "CDC_REPLAY_SPARK_RETRIES": "0",  # a failure in a test is a failure, not a 5-minute wait
        "CDC_REPLAY_REPORTS_DIR": str(home / "reports"),
        "CDC_REPLAY_OUTPUT_ROOT": str(home / "output"),
    })
    env.update(extra)
    return env
