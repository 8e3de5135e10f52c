"""Declared type -> Spark type, and the exactness check that keeps values from being rounded away."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from cdc_jobs.transforms import state_types as st


@pytest.mark.parametrize("type_name,jdbc,expected", [
    ("bigint unsigned", -5, "decimal(20,0)"),
    ("bigint", -5, "bigint"),
    ("int unsigned", 4, "bigint"),
    ("int", 4, "int"),
    ("tinyint", -6, "int"),
    (None, -5, "decimal(20,0)"),  # jdbc BIGINT without a name may be unsigned
    ("decimal(12,2)", 3, "decimal(12,2)"),
    ("decimal(65,30)", 3, "string"),  # beyond Spark's 38 digits: text, exactness first
    ("numeric", 2, "string"),  # precision unknown
    ("double", 8, "double"),
    ("blob", 2004, "binary"),
    ("bit(8)", -7, "bigint"),
    ("bit(64)", -7, "decimal(20,0)"),
    ("date", 91, "date"),
    ("datetime(6)", 93, "timestamp_ntz"),
    ("datetime(9)", 93, "string"),
    ("timestamp(3)", 93, "timestamp"),
    ("timestamp with time zone", 2014, "string"),
    ("time(6)", 92, "string"),
    ("json", 1111, "string"),
    ("varchar(10)", 12, "string"),
    (None, None, "string"),
])
def test_typing_for_declared_types(type_name, jdbc, expected):
    assert st.typing_for(type_name, jdbc).spark_type == expected


def _check(spark, type_name, texts):
    t = st.typing_for(type_name)
    df = spark.createDataFrame([(x,) for x in texts], "v string")
    value = st.typed(F.col("v"), t)
    return [(r["x"], r["ok"]) for r in df.select(value.alias("x"), st.exact(F.col("v"), value, t).alias("ok"))
            .collect()]


def test_exact_values_and_what_would_be_rounded(spark):
    assert _check(spark, "bigint unsigned", ["18446744073709551615", "123456789012345678901", None]) == [
        (Decimal("18446744073709551615"), True), (None, False), (None, True)]
    got = _check(spark, "decimal(12,2)", ["-12345678.90", "1.5", "1.005", "1E+2", "1.500"])
    assert [ok for _, ok in got] == [True, True, False, False, True]  # 1.005 would round, exponent unparsed
    assert got[0][0] == Decimal("-12345678.90")
    raw = b"\x00\xff\x10\xff"
    assert _check(spark, "blob", [base64.b64encode(raw).decode(), "!!"]) == [(raw, True), (None, False)]
    got = _check(spark, "datetime", ["2020-11-25 00:01:02.123456", "2020-11-25 00:01:02.1234567"])
    assert got[0] == (dt.datetime(2020, 11, 25, 0, 1, 2, 123456), True) and got[1][1] is False
    got = _check(spark, "timestamp(6)", ["1606233662.012345", "1606233662.0123456"])
    assert got[0][0].astimezone(dt.timezone.utc) == dt.datetime(2020, 11, 24, 16, 1, 2, 12345, dt.timezone.utc)
    assert [ok for _, ok in got] == [True, False]
    assert _check(spark, "date", ["2024-02-29", "0000-00-00"]) == [(dt.date(2024, 2, 29), True), (None, False)]
    assert _check(spark, "int", ["2147483647", "2147483648"]) == [(2147483647, True), (None, False)]
