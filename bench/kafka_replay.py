"""Benchmark: `cdc-replay replay` of a Kafka topic beside the hand-written peer reading the same topic, in one run
and one SparkSession, with the decode in the JVM (``RecordBlockDecode``, the declared decode) and in Python
(``CDC_REPLAY_JVM_DECODE=off``).

    python -m bench.kafka_replay [--messages 1000000] [--partitions 2] [--repeat 2] [--formats canal-json,drs-json]

Each format's topic holds one simulated day of its messages cycled (``bench.run._day_messages``), keyed, over the
partitions, written by Spark's Kafka sink. The peer is the format's file peer (``bench.peers.JSON_PEERS``: from_json
with the format's schema -> rows -> Parquet by table; dts-avro: ``bench.avro_peers``, fastavro in ``mapInArrow``)
with Spark's Kafka source in place of the file reader. Each
side runs once to warm up, then ``--repeat`` rounds of JVM, Python, peer; ratios are peer / ours, best of each.
Needs ``python -m cdc_jobs.jvm`` (the broker's and the connector's jars).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "jobs"))

from kafka_broker import start_broker  # noqa: E402  (the tests' broker: KRaft, one node)

from bench.run import _cli, _day_messages  # noqa: E402


def produce(spark, bootstrap: str, topic: str, fmt: str, partitions: int, n: int, rows: int = 500,
            changes: int = 5000) -> float:
    """n messages of ``fmt`` (one simulated day of ``rows`` and ``changes`` cycled), round-robin over the
    partitions, by Spark's Kafka sink."""
    day = [(i, key, value) for i, (key, value) in enumerate(_day_messages(fmt, rows=rows, changes=changes))]
    started = time.monotonic()
    messages = spark.createDataFrame(day, "i long, key binary, value binary")
    (spark.range(n).withColumn("i", F.col("id") % len(day)).join(F.broadcast(messages), "i")
     .select("key", "value", (F.col("id") % partitions).cast("int").alias("partition"))
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
     .option("kafka.linger.ms", "20").option("kafka.batch.size", str(1 << 20)).save())
    return time.monotonic() - started


def peer(spark, bootstrap: str, topic: str, fmt: str, out: Path) -> None:
    """The file peer of ``fmt`` reading the topic: Spark's Kafka source, from_json (an Avro format: fastavro in
    ``mapInArrow``), rows, Parquet by table."""
    from bench import avro_peers
    from bench.peers import JSON_PEERS

    records = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
               .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    if fmt in avro_peers.KAFKA_ROWS:
        return avro_peers.replay_kafka(fmt, records, out)
    p = JSON_PEERS[fmt]
    msgs = records.select(F.from_json(F.col("value").cast("string"), p.schema).alias("m")).select("m.*")
    p.rows(msgs).write.mode("overwrite").partitionBy("table_name").parquet(str(out / "events"))


def ours(bootstrap: str, topic: str, fmt: str, out: Path, decode: str) -> None:
    os.environ["CDC_REPLAY_JVM_DECODE"] = decode
    _cli(["replay", "--source", f"kafka://{bootstrap}/{topic}", "--format", fmt, "--out", str(out)])
    counts = json.loads((out / "counts.json").read_text())
    assert counts["dead_letters"] == 0, counts


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return round(time.perf_counter() - started, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_replay", description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--formats", default="canal-json,drs-json,oms-default")
    args = parser.parse_args(argv)

    broker = start_broker()
    print(f"broker {broker.bootstrap} started in {broker.started_in_s:.1f} s", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-kafka-replay-"))
    results = []
    try:
        from cdc_jobs.spark import session

        spark = session("bench-kafka-replay")
        for fmt in args.formats.split(","):
            topic = f"bench-{fmt}"
            broker.create_topic(topic, args.partitions)
            took = produce(spark, broker.bootstrap, topic, fmt, args.partitions, args.messages)
            print(f"{fmt}: produced {args.messages} messages in {took:.1f} s", flush=True)
            sides = {"jvm": lambda out: ours(broker.bootstrap, topic, fmt, out, "on"),
                     "python": lambda out: ours(broker.bootstrap, topic, fmt, out, "off"),
                     "peer": lambda out: peer(spark, broker.bootstrap, topic, fmt, out)}
            runs: dict[str, list[float]] = {name: [] for name in sides}
            for round_ in range(args.repeat + 1):  # the first round warms each side up
                for name, fn in sides.items():
                    out = scratch / name
                    shutil.rmtree(out, ignore_errors=True)
                    seconds = timed(fn, out)
                    if round_:
                        runs[name].append(seconds)
                    print(f"{fmt} {name}{'' if round_ else ' (warm-up)'}: {seconds} s", flush=True)
            best = {name: min(v) for name, v in runs.items()}
            row = {"format": fmt, "messages": args.messages, "seconds": runs,
                   "ratio_jvm": round(best["peer"] / best["jvm"], 2),
                   "ratio_python": round(best["peer"] / best["python"], 2)}
            results.append(row)
            print(json.dumps(row), flush=True)
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        os.environ.pop("CDC_REPLAY_JVM_DECODE", None)
    print("| format | ours, JVM decode s | ours, Python decode s | peer s | ratio JVM | ratio Python |")
    print("|---|---|---|---|---|---|")
    for r in results:
        s = {k: min(v) for k, v in r["seconds"].items()}
        print(f"| {r['format']} | {s['jvm']} | {s['python']} | {s['peer']} | **{r['ratio_jvm']}** | "
              f"{r['ratio_python']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
