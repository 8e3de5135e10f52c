"""Benchmark: reading a Kafka topic into Spark, the previous reader (kafka-python in the Python workers, planned
bounded splits, Arrow batches to the JVM; taken from git at ``--baseline-rev``, the last commit that had it) beside
today's ``cdc_jobs.io.kafka_source.read_kafka`` (the same plan, read by Spark's own Kafka source,
spark-sql-kafka-0-10: the Java consumer inside the executors), on one topic of the real test broker, in one run
and one SparkSession.

    python -m bench.kafka_source [--messages 1000000] [--partitions 2] [--repeat 2]

Both read every record with key, value, headers and positions (RAW rows) and aggregate over the value bytes, so
each record is fetched and materialized once; ``--repeat`` rounds of the previous reader then today's, each run
timed. Needs ``python -m cdc_jobs.jvm`` (the broker's and the connector's jars).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "jobs"))

from kafka_broker import start_broker  # noqa: E402  (the tests' broker: KRaft, one node)

from cdc_codecs import get_codec  # noqa: E402
from cdc_jobs.commands.sample import simulate  # noqa: E402


def produce(spark, bootstrap: str, topic: str, partitions: int, n: int) -> float:
    """n canal-json messages (one simulated day cycled; the readers do not decode them), round-robin over the
    partitions, each with a header, written by Spark's Kafka sink (the JVM producer: kafka-python's took 346 s
    for 1M here)."""
    w = simulate(1, "2024-01-01", rows=500, changes=5000)
    codec = get_codec("canal-json")
    day = [(i, m.key, m.value) for i, m in enumerate(m for e in w.snapshot + w.changes for m in codec.encode([e]))]
    started = time.monotonic()
    messages = spark.createDataFrame(day, "i long, key binary, value binary")
    (spark.range(n).withColumn("i", F.col("id") % len(day)).join(F.broadcast(messages), "i")
     .select("key", "value", (F.col("id") % partitions).cast("int").alias("partition"),
             F.array(F.struct(F.lit("cdc-offset").alias("key"), F.col("id").cast("string").cast("binary")
                              .alias("value"))).alias("headers"))
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
     .option("kafka.linger.ms", "20").option("kafka.batch.size", str(1 << 20)).save())
    return time.monotonic() - started


BASELINE_REV = "aafa867bf6625d71db664577cfb1a7fa7b75bf3f"  # the last commit reading with kafka-python
SPLIT = 200_000


def baseline_reader(spark, rev: str):
    """The previous ``read_kafka`` from git, as modules the Python workers can import (shipped with addPyFile)."""
    root = Path(__file__).resolve().parent.parent
    folder = Path(tempfile.mkdtemp(prefix="bench-kafka-baseline-"))
    for name in ("kafka_plan", "kafka_source"):
        text = subprocess.run(["git", "-C", str(root), "show", f"{rev}:jobs/io/{name}.py"], check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("from cdc_jobs.io.kafka_plan import", "from baseline_kafka_plan import")
        (folder / f"baseline_{name}.py").write_text(text)
        spark.sparkContext.addPyFile(str(folder / f"baseline_{name}.py"))
    sys.path.insert(0, str(folder))
    return importlib.import_module("baseline_kafka_source")


def measured(module, fmt: str | None):
    """RAW rows, summing the value lengths; or with ``fmt`` the DECODED rows (a replay's read and decode),
    counting the rows that start a record."""
    def run(spark, bootstrap: str, topic: str):
        plan = module.plan_kafka(f"kafka://{bootstrap}/{topic}", None, None, 0, {})
        df = module.read_plan(spark, plan, SPLIT, {}, fmt=fmt)
        if fmt:
            return df.agg(F.count_if("first_of_record").alias("n"), F.count(F.lit(1)).alias("rows")).collect()[0]
        return df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    return run


def timed(fn, *args) -> tuple[float, object]:
    started = time.monotonic()
    out = fn(*args)
    return time.monotonic() - started, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_source", description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--decode", default="canal-json", help="also time read + decode in this format ('' = no)")
    args = parser.parse_args(argv)

    broker = start_broker()
    print(f"broker {broker.bootstrap} started in {broker.started_in_s:.1f} s")
    try:
        topic = "bench-source"
        broker.create_topic(topic, args.partitions)
        from cdc_jobs.spark import session

        spark = session("bench-kafka-source")
        took = produce(spark, broker.bootstrap, topic, args.partitions, args.messages)
        print(f"produced {args.messages} messages in {took:.1f} s")
        from cdc_jobs.io import kafka_source

        before = baseline_reader(spark, args.baseline_rev)
        for fmt in [None] + ([args.decode] if args.decode else []):
            what = f"read + decode {fmt}" if fmt else "read"
            readers = ((f"{what}, previous reader ({args.baseline_rev[:7]}: kafka-python in Python workers)",
                        measured(before, fmt)),
                       (f"{what}, Spark's Kafka source (spark-sql-kafka-0-10)", measured(kafka_source, fmt)))
            runs: dict[str, list[float]] = {}
            for _ in range(args.repeat):
                for name, fn in readers:
                    seconds, row = timed(fn, spark, broker.bootstrap, topic)
                    assert row["n"] == args.messages, (name, row["n"])
                    runs.setdefault(name, []).append(seconds)
                    print(f"{name}: {dict(row.asDict())} in {seconds:.1f} s "
                          f"({args.messages / seconds / 1e3:.1f}k records/s)", flush=True)
            (a, ta), (b, tb) = ((k, min(v)) for k, v in runs.items())
            print(f"best {a}: {ta:.1f} s; best {b}: {tb:.1f} s; ratio {ta / tb:.1f}", flush=True)
        spark.stop()
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
