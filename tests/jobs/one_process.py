"""`cdc-replay` commands run one after another in one fresh Python process, as a user's shell runs them but with
one Spark start-up for all of them (a process per command pays a cold driver JVM each, and on a standalone cluster
cold executors too). The process is fresh because Spark's Python workers, and a cluster's executors, inherit the
environment their JVM started with: the shared test session predates a fixture's AWS_* or HADOOP_CONF_DIR."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

REPO = Path(__file__).resolve().parents[2]

_COMMANDS = """
import json, sys
from cdc_jobs import cli
from cdc_jobs.io import atomic, storage
for argv in json.loads(sys.argv[1]):
    rc = cli.main(argv)
    if rc:
        sys.exit(f"{argv[0]} exited {rc}")
print(json.dumps({name: json.loads(storage.read_text(storage.join(atomic.committed_location(out), file)))
                  for name, (out, file) in json.loads(sys.argv[2]).items()}))
"""


def run_commands(commands: Sequence[Sequence[str]], env: Mapping[str, str],
                 reads: Mapping[str, tuple[str, str]] = {}, timeout: float = 900,
                 context: Callable[[], str] = str) -> dict:
    """Run ``commands`` (each the arguments of `cdc-replay`) in order; the first that exits non-zero fails the
    test with its output and what ``context`` returns then (a service's log). Returns, per name in ``reads``, the
    JSON file ``(output, file)`` of a committed output, read in that process (the jobs' own storage code)."""
    run = subprocess.run([sys.executable, "-c", _COMMANDS, json.dumps(commands), json.dumps(reads)],
                         env={**env, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True,
                         timeout=timeout, cwd=REPO)
    assert run.returncode == 0, f"{run.stderr[-5000:]}\n{context()}"
    return json.loads(run.stdout.strip().splitlines()[-1])
