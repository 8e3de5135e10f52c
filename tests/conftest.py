"""Shared fixtures. One SparkSession per test process: starting Spark costs 6-10 s here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORMATS_DIR = REPO.parent / "shared" / "formats"

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("CDC_REPLAY_SHUFFLE_PARTITIONS", "4")


@pytest.fixture(scope="session")
def spark():
    from cdc_jobs.spark import session

    s = session("cdc-replay-tests")
    yield s
    s.stop()
