"""Stopping the test services' processes (the Kafka broker, the HDFS minicluster, the Spark daemons)."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """Ask first (SIGTERM lets a JVM run its shutdown hooks), then kill one that does not end in time."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
