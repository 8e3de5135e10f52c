"""A Spark standalone cluster for the tests: a master and one worker, each its own JVM on 127.0.0.1, started with
``spark-class`` from the installed PySpark. As root (CI) the worker runs in a mount namespace of its own where the
driver's temporary folders (pytest's base temp, holding every tmp_path) are empty, so its executors cannot see the
driver's files: a job that hands executors a driver-local path fails here as it would on a real cluster."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from processes import stop  # beside this file

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_tmp_available() -> bool:
    """Whether a process can get a mount namespace with its own /tmp here (root and util-linux's unshare)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs tmpfs /tmp"], capture_output=True)
    return probe.returncode == 0


@dataclass
class Cluster:
    master_url: str
    isolated: bool  # the worker's /tmp is not the driver's
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def log_tail(self, n: int = 3000) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-n:]}" for p in self.logs if p.exists())

    def stop(self) -> None:
        for p in reversed(self.processes):  # the worker before the master
            stop(p)


def _env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            # the daemons are small: a master and a worker process, not the executors
            "SPARK_DAEMON_MEMORY": "256m"}


def _registered_workers(web_port: int) -> int:
    """ALIVE workers the master's web UI lists; 0 while the answer is not its JSON (still starting)."""
    import json

    with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as r:
        try:
            return sum(1 for w in json.load(r).get("workers", []) if w.get("state") == "ALIVE")
        except ValueError:
            return 0


_MASTER_UI = re.compile(rb"Successfully started service 'MasterUI' on port (\d+)")


def _master_ui_port(master_log: Path, asked: int) -> int:
    """The port the master's web UI took: the one asked for, or the next free one Spark moved to when another
    process took it first (``_free_port`` only finds a port that was free a moment ago)."""
    found = _MASTER_UI.search(master_log.read_bytes()) if master_log.exists() else None
    return int(found.group(1)) if found else asked


def start_cluster(log_dir: Path, hide: list[Path], cores: int = 2, memory: str = "2g",
                  timeout_s: float = 90.0) -> Cluster:
    """``hide``: the driver's temporary folders (pytest's base temp), each an empty tmpfs in the worker's view."""
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, web = _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    isolated = private_tmp_available()
    cluster = Cluster(master_url, isolated)
    log_dir.mkdir(parents=True, exist_ok=True)

    def launch(name: str, argv: list[str]) -> None:
        log = log_dir / f"{name}.log"
        cluster.logs.append(log)
        cluster.processes.append(subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                                  env=_env(), start_new_session=True))

    launch("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                      "--port", str(port), "--webui-port", str(web)])
    worker = [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
              "--cores", str(cores), "--memory", memory, "--webui-port", str(_free_port()),
              "--work-dir", str(log_dir / "work")]
    if isolated:
        mounts = " && ".join(f"mount -t tmpfs tmpfs '{d}'" for d in hide)
        worker = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{mounts} && exec "$@"', "worker",
                  *worker]
    launch("worker", worker)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        dead = [p for p in cluster.processes if p.poll() is not None]
        if dead:
            cluster.stop()
            raise RuntimeError(f"a Spark daemon exited while starting:\n{cluster.log_tail()}")
        try:
            if _registered_workers(_master_ui_port(cluster.logs[0], web)) >= 1:
                return cluster
        except OSError:
            pass
        time.sleep(0.5)
    cluster.stop()
    raise RuntimeError(f"no worker registered with {master_url} within {timeout_s:.0f}s:\n{cluster.log_tail()}")
