"""A codec's JVM twin of its decode fast path (``Codec.jvm_plain_decoder``, ``codecs/*/jvm/*.java``) gives exactly
the rows of its Python fast path (``plain_rows``) for every message it takes, and declines the rest (the replay
then decodes them in Python): on the messages the Python fast path's own tests use (fixtures, the scenario, their
mutations and Alibaba variants) and on the fuzz corpus. It runs as the replay runs it: ``LineBlockDecode`` in
Spark, one message a block."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from cdc_codecs import available_formats, get_codec
from cdc_codecs.base import jvm_twin
from cdc_codecs.shared.plain_rows import DECODED_ROW, TWIN_FIELDS
from cdc_jobs.transforms.jvm_decode import LINE_FIELDS
from fuzz import corpus  # beside this file
from test_canal_oms_fast_paths import alibaba_variants, messages

pytestmark = pytest.mark.spark

TWINS = [f for f in available_formats() if jvm_twin(get_codec(f))]


# The twin's copy of ``cdc_codecs.types.family`` decides which Alibaba text it converts (TIMESTAMP, binary, bit,
# geometry): declarations of every kind of type name and JDBC number, each with values that those conversions
# would change, so that a family told apart wrongly changes a row.
TYPE_NAMES = [None, "", "int", "INT(11) UNSIGNED", "bigint(20) unsigned", "uint8", "year", "decimal(12,2)", "number",
              "float", "binary_float", "bit", "BIT(12)", "bit( 3 )", "boolean", "tinyblob", "blob", "varbinary(8)",
              "binary(4)", "long raw", "bytea", "date", "time", "time(3)", "datetime", "DATETIME(6)", "timestamp",
              "timestamp(6)", "TIMESTAMP(3)", " timestamp", "timestamp with time zone", "timestamptz",
              "timestamp without time zone", "timestamp(10)", "json", "enum('a')", "set('a')", "geometry", "POINT",
              " polygon", "geometrycollection", "varchar(10)", "text", "bitmap", "timestamps"]
JDBC_NUMBERS = [None, 93, -2, -7, 2004, 12, 4]
VALUES = ["2024-02-29 23:59:59.125", "1970-01-01 00:00:00", "0000-00-00 00:00:00", "\u00ff\u0001", "5",
          ((4326).to_bytes(4, "little") + b"\x01\x01\x00\x00\x00" + bytes(range(16))).decode("latin-1")]


def declared_type_variants() -> list[bytes]:
    out = []
    for type_name in TYPE_NAMES:
        for jdbc in JDBC_NUMBERS:
            for value in VALUES:  # one a message: the twin declines a whole message for one value it leaves
                msg = {"data": [{"id": "1", "c": value}], "database": "d", "table": "t", "es": 1, "ts": 1, "id": 3,
                       "isDdl": False, "pkNames": ["id"], "sql": "", "type": "INSERT",
                       "mysqlType": {"id": "int", **({} if type_name is None else {"c": type_name})},
                       "sqlType": {"id": 4, **({} if jdbc is None else {"c": jdbc})}}
                out.append(json.dumps(msg).encode())
    return out


def canal_inputs() -> list[bytes]:
    raws = [m for seed in messages("canal-json") for m in alibaba_variants(seed)]
    return raws + declared_type_variants() + [i.raw for i in corpus("canal-json", 300, ten_mb_line=False)]


INPUTS = {"canal-json": canal_inputs}


def one_line(raw: bytes) -> bool:
    """A message that is one line as the replay reads lines (the block tests cover the splitting)."""
    return b"\n" not in raw and raw.rstrip(b"\r") == raw and bool(raw.strip())


def python_rows(fmt: str, raw: bytes, line: int):
    rows = get_codec(fmt).plain_rows(raw, ("archive", -1, line, None, None, []))
    if rows is None:
        return None
    at = {name: i for i, name in enumerate(DECODED_ROW)}
    out = []
    for r in rows:
        d = {f: r[at[f]] for f in TWIN_FIELDS}
        d.update(before=None if d["before"] is None else list(d["before"].items()),
                 after=None if d["after"] is None else list(d["after"].items()),
                 primary_key=list(d["primary_key"]), sequence=list(d["sequence"]),
                 columns=[dict(c) for c in d["columns"]])
        out.append(d)
    return out


def twin_rows(spark, fmt: str, raws: list[bytes]) -> list:
    """What the replay's decode step reads from the twin, one message a block: its rows, or None (declined)."""
    from cdc_jobs import jvm

    assert jvm.available(spark), "the JVM side did not build (javac missing?)"
    blocks = spark.createDataFrame([(i + 1, r) for i, r in enumerate(raws)], "first_line long, value binary")
    streams = blocks.select("first_line", F.call_function(jvm.LINE_BLOCK_DECODE, F.lit(jvm_twin(get_codec(fmt))),
                                                          "first_line", "value").alias("lines")).collect()
    out: list = [None] * len(raws)
    for r in streams:
        lines = pa.ipc.open_stream(r["lines"]).read_all()
        assert tuple(lines.column_names) == LINE_FIELDS
        rows = lines.to_pylist()  # maps as lists of (key, value) in order
        assert rows and all(x["pos_offset"] == r["first_line"] for x in rows)
        if rows[0]["value"] is not None:
            assert len(rows) == 1 and rows[0]["value"] == raws[r["first_line"] - 1]  # declined: the exact bytes
            continue
        out[r["first_line"] - 1] = [{f: x[f] for f in TWIN_FIELDS} for x in rows]
    return out


def test_every_twin_has_inputs():
    assert TWINS and set(TWINS) <= set(INPUTS)


@pytest.mark.parametrize("fmt", TWINS)
def test_twin_rows_equal_the_python_fast_path(spark, fmt):
    raws = [r for r in INPUTS[fmt]() if one_line(r)]
    twin = twin_rows(spark, fmt, raws)
    taken = python_taken = 0
    for i, raw in enumerate(raws):
        expected = python_rows(fmt, raw, i + 1)
        python_taken += expected is not None
        if twin[i] is None:
            continue
        taken += 1
        assert expected is not None, f"the twin took a message the Python fast path declines: {raw[:300]!r}"
        assert twin[i] == expected, raw[:300]
    # Most of what the Python fast path takes, the twin takes too (it declines only rare shapes by design).
    assert python_taken > 500 and taken >= 0.6 * python_taken, (taken, python_taken, len(raws))
