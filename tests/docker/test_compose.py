"""The Docker deployment, checked statically (no Docker engine here): the services exist and agree with each
other - names, ports, volumes, connections, images - and with the project (Airflow pin, pipelines, DAG folder)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
sys.path.insert(0, str(REPO / "dags"))


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())  # resolves anchors and << merges


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def env(service: dict) -> dict:
    e = service.get("environment") or {}
    return e if isinstance(e, dict) else dict(x.split("=", 1) for x in e)


AIRFLOW = ["airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"]
SPARK = ["spark-master", "spark-worker-1", "spark-worker-2"]


def test_services(services):
    assert set(AIRFLOW + SPARK + ["postgres", "airflow-init", "kafka"]) <= set(services)
    assert not any("zookeeper" in name for name in services)  # Kafka runs in KRaft mode


def test_one_project_image_built_from_the_dockerfile(services):
    for name in AIRFLOW + ["airflow-init"]:
        s = services[name]
        assert s["image"] == "cdc-replay:latest", name
        assert (DOCKER / s["build"]["context"] / s["build"]["dockerfile"]).resolve() == DOCKER / "Dockerfile"
    for name in SPARK:  # executors need the driver's exact Python, pyspark and cdc_codecs
        assert services[name]["image"] == "cdc-replay:latest", name
    commands = {n: " ".join(services[n]["command"]) if isinstance(services[n]["command"], list)
                else services[n]["command"] for n in AIRFLOW}
    assert commands == {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                        "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}


def test_dockerfile_matches_the_project():
    text = (DOCKER / "Dockerfile").read_text()
    pinned = re.search(r'"apache-airflow==([\d.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert re.search(rf"ARG AIRFLOW_VERSION={re.escape(pinned)}\b", text)
    assert "FROM apache/airflow:${AIRFLOW_VERSION}" in text
    assert "openjdk-17-jdk-headless" in text and "-c constraints.txt" in text
    # The JVM side (jobs/jvm/pom.xml) is built by Maven after the install, where sessions look for it
    # (cdc_jobs.jvm.runtime_jars): the image's JDK and Maven, no test jars.
    assert text.index("RUN pip install") < text.index("ENV CDC_REPLAY_JVM_DIR=") < text.index("RUN python -m cdc_jobs.jvm")
    assert re.search(r"apt-get install .*\bmaven\b", text)
    assert "python -m cdc_jobs.jvm --runtime-only" in text
    for src in re.findall(r"^COPY (?:--\S+ )*(.+?) \S+$", text, flags=re.M):
        for part in src.split():
            assert (REPO / part).exists(), f"Dockerfile copies {part}, which is not in the repository"
    assert re.search(r"CDC_REPLAY_PIPELINES=/opt/cdc-replay/docker/pipelines.yaml", text)
    # The provider package is installed (not an editable checkout) before the DAG files arrive.
    assert text.index("COPY --chown=airflow:0 plugins") < text.index("RUN pip install") < text.index("./dags")
    assert "-e '.[airflow]'" not in text


def test_metadata_db_is_the_postgres_service(services):
    pg = env(services["postgres"])
    for name in AIRFLOW + ["airflow-init"]:
        url = env(services[name])["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        m = re.match(r"postgresql\+psycopg2://([^:]+):[^@]+@([^:/]+):5432/(\w+)$", url)
        assert m, url
        assert (m.group(1), m.group(2), m.group(3)) == (pg["POSTGRES_USER"], "postgres", pg["POSTGRES_DB"])
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == "service_healthy"
        if name != "airflow-init":
            assert deps["airflow-init"]["condition"] == "service_completed_successfully"
    assert "healthcheck" in services["postgres"]


def test_spark_connection_points_at_the_master_in_client_mode(services, monkeypatch):
    master = " ".join(services["spark-master"]["command"])
    assert "--host spark-master" in master and "--port 7077" in master
    for w in ("spark-worker-1", "spark-worker-2"):
        assert "spark://spark-master:7077" in " ".join(services[w]["command"])
        assert "spark-master" in services[w]["depends_on"]
    conns = {env(services[n])["AIRFLOW_CONN_SPARK_DEFAULT"] for n in AIRFLOW}
    assert len(conns) == 1
    # Resolve it the way the operator will: the provider's hook builds the real spark-submit command.
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", conns.pop())
    cmd = SparkSubmitHook(conn_id="spark_default")._build_spark_submit_command("/app.py")
    assert cmd[cmd.index("--master") + 1] == "spark://spark-master:7077"
    assert cmd[cmd.index("--deploy-mode") + 1] == "client"
    # Executors connect back to the driver, which runs in the scheduler's task processes.
    sched = services["airflow-scheduler"]
    assert sched["hostname"] == env(sched)["SPARK_LOCAL_HOSTNAME"] == "airflow-scheduler"
    assert "spark-master" in sched["depends_on"]


def test_shared_data_volume_and_pipelines(services, compose):
    for name in AIRFLOW + ["spark-worker-1", "spark-worker-2"]:
        assert "cdc-data:/data" in services[name]["volumes"], name
    declared = set(compose["volumes"])
    for s in services.values():
        for v in s.get("volumes", []):
            src = v.split(":")[0]
            assert src.startswith((".", "/")) or src in declared, f"undeclared volume {src}"
    from cdc_replay_airflow import pipelines as pl

    pipes = pl.load(DOCKER / "pipelines.yaml")
    assert pipes.errors == {}
    for p in pipes.valid.values():  # outputs: on the volume executors and Airflow share, or on the object store
        assert p.state_root.startswith(("/data/", "s3a://cdc-replay/")), p.name
        assert all(a.startswith("/data/") for a in p.archive)
    kafka_env = env(services["kafka"])
    advertised = dict(re.findall(r"(\w+)://([^,]+)", kafka_env["KAFKA_ADVERTISED_LISTENERS"]))
    shop = pipes.valid["shop_kafka"]
    assert shop.kafka_bootstrap == advertised["PLAINTEXT"] == "kafka:9092"
    assert shop.sink.startswith("kafka://kafka:9092/")
    assert f"AIRFLOW_CONN_{shop.kafka_conn_id.upper()}" in env(services["airflow-scheduler"])
    for name in AIRFLOW:
        assert env(services[name])["CDC_REPLAY_PIPELINES"] == "/opt/cdc-replay/docker/pipelines.yaml"
        assert env(services[name])["CDC_REPLAY_DATA_ROOTS"] == "/data"  # form paths stay on the data volume


def test_kafka_is_kraft(services):
    e = env(services["kafka"])
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert set(e["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert e["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{e['KAFKA_NODE_ID']}@kafka:9093"
    assert "CONTROLLER" in e["KAFKA_CONTROLLER_LISTENER_NAMES"]


def test_ports_and_dependencies(services):
    host_ports = [p.split(":")[0] for s in services.values() for p in s.get("ports", [])]
    assert len(host_ports) == len(set(host_ports)), host_ports
    assert "8080" in [p.split(":")[0] for p in services["airflow-apiserver"]["ports"]]
    api = env(services["airflow-scheduler"])["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
    assert api.startswith("http://airflow-apiserver:8080/")
    for name, s in services.items():
        deps = s.get("depends_on") or []
        for dep in (deps if isinstance(deps, list) else deps.keys()):
            assert dep in services, f"{name} depends on unknown service {dep}"
    for name in AIRFLOW:
        e = env(services[name])
        json.loads(e["AIRFLOW_CONN_SPARK_DEFAULT"])
        assert e["AIRFLOW__API_AUTH__JWT_SECRET"] == env(services["airflow-apiserver"])["AIRFLOW__API_AUTH__JWT_SECRET"]


def test_object_store_minio_and_the_s3a_connector(services):
    """MinIO serves the S3 API; a pipeline writes there; the image adds hadoop-aws matching the wheel's Hadoop."""
    minio = services["minio"]
    assert minio["image"].startswith("minio/minio:") and minio["command"][:2] == ["server", "/data"]
    assert "9000:9000" in minio["ports"] and "minio-data:/data" in minio["volumes"]
    init = services["minio-init"]
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"
    bucket = re.search(r"mc mb --ignore-existing local/([a-z0-9.-]+)", " ".join(init["command"])).group(1)
    assert len(bucket) >= 3
    # credentials: the same keys MinIO was started with, through the standard AWS variables, for the driver
    # (Airflow tasks) and the executors (Spark workers)
    for name in AIRFLOW + ["spark-worker-1", "spark-worker-2"]:
        e = env(services[name])
        assert e["AWS_ENDPOINT_URL"] == "http://minio:9000", name
        assert e["AWS_ACCESS_KEY_ID"] == env(minio)["MINIO_ROOT_USER"], name
        assert e["AWS_SECRET_ACCESS_KEY"] == env(minio)["MINIO_ROOT_PASSWORD"], name
    assert services["airflow-scheduler"]["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"

    from cdc_replay_airflow import pipelines as pl

    on_store = [p for p in pl.load(DOCKER / "pipelines.yaml").valid.values() if "://" in p.state_root]
    assert on_store and all(p.state_root.startswith(f"s3a://{bucket}/") for p in on_store)

    # s3a comes from the pom the image builds (hadoop-aws of the wheel's Hadoop client, the AWS SDK modules it
    # uses, never the ~600 MB bundle): nothing fetched by hand beside it.
    text = (DOCKER / "Dockerfile").read_text()
    assert "hadoop-aws-${" not in text and "curl -fsSLo" not in text
    pom = (REPO / "jobs" / "jvm" / "pom.xml").read_text()
    assert "<artifactId>hadoop-aws</artifactId>" in pom and "<artifactId>bundle</artifactId>" in pom
