"""The JVM side as installed by ``python -m cdc_jobs.jvm`` (jobs/jvm/pom.xml): every session gets the project jar
and the connectors, and none of them is a second copy of a library PySpark already ships."""

from __future__ import annotations

import re
import zipfile

import pytest

from cdc_jobs import jvm

pytestmark = pytest.mark.spark
VERSION = r"-\d+\.[^-]*(-.*)?\.jar$"  # a jar's version (and classifier): artifactId-1.2.3[-classifier].jar


def test_the_runtime_jars_add_nothing_pyspark_ships():
    jars = jvm.runtime_jars()
    assert jars, "no JVM build for these sources: run `python -m cdc_jobs.jvm` (make install)"
    shipped = {re.sub(VERSION, "", p.name) for p in jvm.pyspark_jars_dir().glob("*.jar")}
    names = [re.sub(VERSION, "", j.name) for j in jars[1:]]
    assert not set(names) & shipped, set(names) & shipped
    assert len(names) == len(set(names))  # one version of each
    for expected in ("delta-spark_4.2_2.13", "spark-sql-kafka-0-10_2.13", "kafka-clients", "hadoop-aws", "s3"):
        assert expected in names
    assert "bundle" not in names  # the whole AWS SDK (~600 MB) stays out
    # the project jar holds the codecs' JVM decodes and the decode adapter, compiled from today's sources
    with zipfile.ZipFile(jars[0]) as z:
        classes = set(z.namelist())
    assert {"cdcreplay/codecs/DeclaredJson.class", "cdcreplay/jobs/LineRows.class"} <= classes


def test_the_test_jars_hold_a_kraft_broker_and_an_hdfs_minicluster():
    names = {j.name for j in jvm.test_jars()}
    assert any(n.startswith("kafka_2.13-") for n in names) and any(n.startswith("kafka-raft-") for n in names)
    # the minicluster's classes call JUnit's assertions, so JUnit is kept beside it
    assert any(n.startswith("hadoop-client-minicluster-") for n in names)
    assert any(n.startswith("junit-jupiter-api-") for n in names)


def test_a_session_reads_delta_and_kafka(spark, tmp_path):
    loader = spark.sparkContext._jvm.Thread.currentThread().getContextClassLoader()
    assert spark.sparkContext._jvm.java.lang.Class.forName(
        "io.delta.sql.DeltaSparkSessionExtension", True, loader).getName().endswith("DeltaSparkSessionExtension")
    spark.range(5).write.format("delta").save(str(tmp_path / "t"))
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 5
    assert (tmp_path / "t" / "_delta_log").is_dir()
    # Spark's Kafka source resolves (it needs no broker to build the streaming schema)
    df = spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9").option(
        "subscribe", "t").load()
    assert df.columns[:2] == ["key", "value"]


def test_parse_dependency_list_reads_scopes_classifiers_and_modules():
    text = """
The following files have been resolved:
   io.delta:delta-spark_4.2_2.13:jar:4.4.0:compile:/m2/io/delta/delta-spark_4.2_2.13-4.4.0.jar -- module delta
   org.apache.orc:orc-core:jar:shaded-protobuf:2.3.0:provided:/m2/orc-core-2.3.0-shaded-protobuf.jar
   org.apache.kafka:kafka_2.13:jar:3.9.2:test:/m2/kafka_2.13-3.9.2.jar
   com.fasterxml.jackson:jackson-bom:pom:2.21.2:import:/m2/x.pom
"""
    assert jvm.parse_dependency_list(text) == [
        ("io.delta", "delta-spark_4.2_2.13", "compile", jvm.Path("/m2/io/delta/delta-spark_4.2_2.13-4.4.0.jar")),
        ("org.apache.orc", "orc-core", "provided", jvm.Path("/m2/orc-core-2.3.0-shaded-protobuf.jar")),
        ("org.apache.kafka", "kafka_2.13", "test", jvm.Path("/m2/kafka_2.13-3.9.2.jar"))]
