"""The job tests import their helpers (kafka_broker, workload) as modules beside them; the broker fixture itself is
in tests/conftest.py (the Airflow connection test uses it too)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
