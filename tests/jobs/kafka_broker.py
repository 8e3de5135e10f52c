"""A throwaway Apache Kafka broker for tests: KRaft, one node that is broker and controller, on 127.0.0.1 (free
ports), log directory in a temporary folder, transactions on. Its jars are the test jars ``python -m
cdc_jobs.jvm`` resolved from Maven at install time (``cdc_jobs.jvm.test_jars``): the Kafka release of the
kafka-clients that Spark's Kafka connector uses. Nothing is downloaded here.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient

from processes import stop  # beside this file

# A second listener asks for SASL/PLAIN with this user (a test account, not a secret): the client security settings
# of a config file or an Airflow connection meet a real broker check.
SASL_USER, SASL_PASSWORD = "cdc-svc", "test-only-password"

# A small broker: the tests' topics hold thousands of messages, and four other processes share the machine.
JVM_OPTS = ["-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]


class BrokerUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _classpath() -> str:
    from cdc_jobs import jvm

    test = jvm.test_jars()
    if not any(j.name.startswith("kafka_2.13-") for j in test):
        raise BrokerUnavailable(f"no Kafka broker jars in {jvm.build_dir()}: run `python -m cdc_jobs.jvm` "
                                "(make install) with a JDK and Maven")
    # Maven chose one version of every library across the test, runtime and provided (PySpark) scopes.
    return os.pathsep.join([*map(str, test), *map(str, jvm.runtime_jars()), str(jvm.pyspark_jars_dir() / "*")])


def server_properties(port: int, sasl_port: int, controller_port: int, log_dir: Path) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                     f"CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{SASL_USER}="{SASL_PASSWORD}";',
        "log.dirs": str(log_dir),
        # one node: every internal topic with one replica, so consumer groups and transactions work
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        # The tests' records carry source event times (2024): time-based retention (7 days by default, checked
        # every 5 minutes) would delete them from under a replay in a long session.
        "log.retention.ms": "-1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "log.cleaner.enable": "false",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


@dataclass
class Broker:
    process: subprocess.Popen
    port: int
    sasl_port: int
    home: Path
    started_in_s: float

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, *topics: str) -> str:
        return f"kafka://{self.bootstrap}/{','.join(topics)}"

    def sasl_url(self, *topics: str) -> str:
        """The SASL_PLAINTEXT listener (user SASL_USER, mechanism PLAIN)."""
        return f"kafka://127.0.0.1:{self.sasl_port}/{','.join(topics)}"

    def create_topic(self, name: str, partitions: int) -> None:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}})
        finally:
            admin.close()

    def producer(self) -> KafkaProducer:
        return KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=0)

    def produce(self, topic: str, records: Iterable[tuple], producer: Optional[KafkaProducer] = None
                ) -> list[tuple[int, int]]:
        """records: (partition, key, value[, headers[, timestamp_ms]]) -> [(partition, offset)], in order."""
        own = producer is None
        producer = producer or self.producer()
        futures = []
        try:
            for rec in records:
                partition, key, value, *rest = rec
                headers = rest[0] if rest else None
                ts = rest[1] if len(rest) > 1 else None
                futures.append(producer.send(topic, key=key, value=value, partition=partition, headers=headers,
                                             timestamp_ms=ts))
            producer.flush()
            out = []
            for f in futures:
                md = f.get(timeout=30)
                out.append((md.partition, md.offset))
        finally:
            if own:
                producer.close()
        return out

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return (self.home / "broker.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.home, ignore_errors=True)


def _answers(bootstrap: str) -> bool:
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
    except Exception:  # noqa: BLE001 - not up yet
        return False
    try:
        admin.list_topics()
        return True
    except Exception:  # noqa: BLE001
        return False
    finally:
        admin.close()


def _cluster_id() -> str:
    """A random cluster id as Kafka's ``Uuid.randomUuid`` makes them: never starting with "-", which the
    StorageTool's argument parser would read as an option (one id in 64 did: "--cluster-id/-t: expected one
    argument", and every Kafka test of that worker errored)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def start_broker(timeout_s: float = 120.0) -> Broker:
    """Format a fresh log directory (Kafka's StorageTool) and start ``kafka.Kafka`` on it; returns once the broker
    answers metadata requests. Raises BrokerUnavailable with the broker's log when it does not."""
    java = shutil.which("java")
    if java is None:
        raise BrokerUnavailable("no java on PATH")
    classpath = _classpath()
    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="cdc-replay-kafka-"))
    port, sasl_port, controller_port = _free_port(), _free_port(), _free_port()
    props = home / "server.properties"
    props.write_text(server_properties(port, sasl_port, controller_port, home / "logs"))
    cluster_id = _cluster_id()
    # the broker's JVM logs to its folder; Spark's log4j2 defaults (in PySpark's jars) would print INFO lines
    log4j = home / "log4j2.properties"
    log4j.write_text("rootLogger.level = warn\nrootLogger.appenderRef.f.ref = f\nappender.f.type = File\n"
                     f"appender.f.name = f\nappender.f.fileName = {home / 'broker.log'}\n"
                     "appender.f.layout.type = PatternLayout\nappender.f.layout.pattern = %d %p %c: %m%n\n")
    base = [java, *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={home}", "-cp", classpath]
    fmt = subprocess.run([*base, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
                         capture_output=True, text=True, timeout=timeout_s)
    if fmt.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        raise BrokerUnavailable(f"kafka-storage format failed: {(fmt.stdout + fmt.stderr)[-3000:]}")
    with open(home / "stdout.log", "wb") as out:
        proc = subprocess.Popen([*base, "kafka.Kafka", str(props)], stdout=out, stderr=subprocess.STDOUT)
    broker = Broker(proc, port, sasl_port, home, 0.0)
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            detail = (home / "stdout.log").read_text(errors="replace")[-3000:] + broker.log_tail()
            shutil.rmtree(home, ignore_errors=True)
            raise BrokerUnavailable(f"the Kafka broker exited with code {proc.returncode}: {detail}")
        if _answers(broker.bootstrap):
            broker.started_in_s = time.monotonic() - started
            return broker
        time.sleep(0.2)
    detail = broker.log_tail()
    broker.stop()
    raise BrokerUnavailable(f"the Kafka broker did not answer on {broker.bootstrap} within {timeout_s:.0f}s: {detail}")


def wait_ms_boundary(gap_ms: int = 60) -> int:
    """Sleep ``gap_ms`` and return the middle of the gap: a time strictly between two produce phases."""
    time.sleep(gap_ms / 2000)
    middle = int(time.time() * 1000)
    time.sleep(gap_ms / 2000)
    return middle


def offsets_by_partition(positions: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p, o in positions:
        out.setdefault(p, []).append(o)
    return out
