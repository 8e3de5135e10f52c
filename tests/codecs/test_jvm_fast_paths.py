"""A codec's JVM twin of its decode fast path (``Codec.jvm_plain_decoder``, ``codecs/*/jvm/*.java``) gives exactly
the rows of its Python fast path (``plain_rows``) for every message it takes, and declines the rest (the replay
then decodes them in Python): on the messages the Python fast path's own tests use (fixtures, the scenario, their
mutations and Alibaba variants) and on the fuzz corpus. It runs as the replay runs it: ``LineBlockDecode`` in
Spark, one message a block."""

from __future__ import annotations

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


def canal_inputs() -> list[bytes]:
    raws = [m for seed in messages("canal-json") for m in alibaba_variants(seed)]
    return raws + [i.raw for i in corpus("canal-json", 300, ten_mb_line=False)]


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
