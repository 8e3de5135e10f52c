"""Reading merged tables as a user of another engine would: every Delta table read through Spark and through
delta-rs (the `deltalake` package, no cdc-replay code) must hold the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable


def _canonical(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in table.to_pylist())


def read_both(spark, directory, version=None) -> pa.Table:
    """The table at ``directory`` (optionally ``VERSION AS OF``), read by Spark; asserts delta-rs reads the same
    column names, types and rows."""
    directory = Path(directory)
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    by_spark = reader.load(str(directory)).toArrow()
    by_rust = DeltaTable(str(directory), version=version).to_pyarrow_table()
    assert by_rust.schema.names == by_spark.schema.names, directory
    # delta-rs reads unsigned-free Delta types exactly as Spark writes them; compare values, not Arrow encodings
    # (large_string vs string, dictionary pages): one canonical text per row.
    assert by_rust.num_rows == by_spark.num_rows, directory
    assert _canonical(by_rust) == _canonical(by_spark), f"{directory}: Spark and delta-rs read different rows"
    return by_spark


def data_files(state_dir) -> dict[str, bytes]:
    """Bytes of every table-data file of each table's current version (the canonical copy and _state.json
    excluded): keyed by table directory and file order, since a Delta table's file names carry a random id."""
    root = Path(state_dir)
    out = {}
    for log in sorted(root.rglob("_delta_log")):
        table = log.parent
        rel = str(table.relative_to(root))
        if rel.startswith("_canonical"):
            continue
        files = sorted(Path(u.removeprefix("file://")).read_bytes() for u in DeltaTable(str(table)).file_uris())
        for i, data in enumerate(files):
            out[f"{rel}#{i}"] = data
    for p in sorted(root.rglob("*.parquet")):
        rel = p.relative_to(root)
        if not rel.parts[0].startswith("_canonical") and not any((root / q / "_delta_log").is_dir()
                                                                 for q in rel.parents):
            out[str(rel)] = p.read_bytes()
    return out
