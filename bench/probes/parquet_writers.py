"""What writing the canonical event record to Parquet costs, per writer, on the same events in one run:
pyarrow's writer (what the decode tasks use, ``cdc_jobs.io.event_files``) against parquet-mr in the JVM, through
its record API (as Spark's writer uses it) and through its column writers directly (``JvmParquetWrite.java``).

Why it exists: a replay at the hand-written peer's speed needs the decode and the write of events/ both in the JVM
(bench/RESULTS.md, twentieth round); this measures whether a JVM writer could carry the write. Run from the
repository's root, after ``make install`` (it needs the project's jar and a JDK):

    python -m bench.probes.parquet_writers --messages 100000 --rounds 6
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def jvm_rounds(archive: Path, messages: int, rounds: int, work: Path) -> list[dict]:
    """The probe's rounds: microseconds per event through parquet-mr's record API and its column writers."""
    from cdc_codecs import get_codec
    from cdc_codecs.base import jvm_twin
    from cdc_jobs import jvm

    jar = jvm.ensure_jar()
    if jar is None or shutil.which("javac") is None:
        raise SystemExit("needs a JDK and the project's jar (make install)")
    import pyspark

    classpath = f"{Path(pyspark.__file__).resolve().parent / 'jars'}/*:{jar}"
    subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(work), str(HERE / "JvmParquetWrite.java")],
                   check=True, capture_output=True)
    done = subprocess.run(
        ["java", "-Xmx2g", "-cp", f"{classpath}:{work}", "JvmParquetWrite", str(archive), str(messages),
         jvm_twin(get_codec("canal-json")), str(rounds)], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def pyarrow_rounds(archive: Path, messages: int, rounds: int, work: Path) -> list[float]:
    """Microseconds of CPU per event for pyarrow's writer, events/'s columns and compression, the same events."""
    from cdc_jobs.io.event_files import FILE_SCHEMA
    from cdc_jobs.io.files import line_records
    from cdc_jobs.transforms.decode import decode_columns

    lines = archive.read_bytes().splitlines()[:messages]
    decoded = decode_columns("canal-json", [line_records([str(archive)] * len(lines),
                                                          list(range(1, len(lines) + 1)), lines)])
    events = pa.Table.from_batches(list(decoded)).select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
    out = []
    for _ in range(rounds):
        start = time.process_time()
        pq.write_table(events, work / "events.parquet", compression="snappy")
        out.append((time.process_time() - start) / events.num_rows * 1e6)
    return out


def main() -> None:
    from bench.run import build_lines_archive

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        archive = next(iter(build_lines_archive("canal-json", args.messages, work / "archive").iterdir()))
        java = jvm_rounds(archive, args.messages, args.rounds, work)[1:]  # the first round warms the JIT
        arrow = pyarrow_rounds(archive, args.messages, args.rounds, work)[1:]
    rows = [("pyarrow (events/ today)", arrow),
            ("parquet-mr, record API (as Spark's writer)", [r["records_us"] for r in java]),
            ("parquet-mr, column writers, pages dropped", [r["columns_us"] for r in java])]
    print(f"canal-json, {args.messages:,} messages; us per event written, best and median of {len(arrow)} rounds")
    print("| writer | best | median |\n|---|---|---|")
    for name, values in rows:
        print(f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
