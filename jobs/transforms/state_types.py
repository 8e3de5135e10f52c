"""Canonical text -> typed Spark columns for the merged state, exactness first.

Each source column gets a Spark type chosen from its *declared* type (``cdc_codecs.types.family``):

  family     declared                           Spark type            canonical text it parses
  int        tinyint/smallint/mediumint/int/    int                   decimal digits
             year/int2/int4/serial (signed)
             int unsigned, bigint, int8, long    bigint
             bigint unsigned, uint64, jdbc-only  decimal(20,0)         (jdbc-only: the name is unknown, it may
             BIGINT                                                     be unsigned)
             other integer names                 decimal(38,0)
  decimal    decimal(p,s) with p <= 38          decimal(p,s)          exact digits, no exponent
             p > 38, no precision, money         string                (exactness first)
  float      float/double/real                  double                the source's literal
  bit        bit(n), n <= 63                     bigint; else decimal(20,0)
  bool       bool/boolean                        boolean
  binary     blob/binary/bytea...                binary                base64
  date       date                                date                  YYYY-MM-DD
  datetime   datetime(p), p <= 6 or none         timestamp_ntz         YYYY-MM-DD HH:MM:SS[.ffffff]
             datetime(7..9)                      string
  timestamp  timestamp(p), p <= 6 or none        timestamp (UTC)       epoch seconds[.ffffff]
  time, zoned, json, string, enum, set, ...      string                verbatim

Every typed column is *checked*: a value that does not parse, or would be rounded (a 7th fractional digit, a
decimal with more scale than declared, an exponent), makes the whole column fall back to string for that
table, and ``_state.json`` says why. The canonical text itself is always kept in ``_canonical/`` (see
``cdc_jobs.commands.merge``), so a typed column never is the only copy of a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from cdc_codecs.types import decimal_precision_scale, family

STRING = "string"


@dataclass(frozen=True)
class Typing:
    family: str
    spark_type: str  # Spark SQL type text, e.g. "decimal(20,0)"

    @property
    def is_string(self) -> bool:
        return self.spark_type == STRING


_INT32_NAMES = {"tinyint", "smallint", "mediumint", "int", "integer", "int2", "int4", "serial", "smallserial",
                "year", "int16", "int32", "int8_t"}
_INT64_NAMES = {"bigint", "int8", "bigserial", "long", "int64"}
_UINT64_NAMES = {"uint64", "uint", "ubigint"}
_UINT_SMALL = {"uint8", "uint16", "uint32"}


def _int_type(type_name: Optional[str], jdbc_type: Optional[int]) -> str:
    if not type_name:
        # Only a java.sql.Types number: BIGINT may be an unsigned 64-bit column, smaller ones may be unsigned too.
        return "decimal(20,0)" if jdbc_type == -5 else "bigint"
    t = type_name.strip().lower()
    word = re.match(r"[a-z_0-9]+", t)
    name = word.group(0) if word else t
    unsigned = "unsigned" in t
    if name in _INT32_NAMES:
        return "bigint" if unsigned and name in {"int", "integer"} else "int"
    if name in _INT64_NAMES:
        return "decimal(20,0)" if unsigned else "bigint"
    if name in _UINT64_NAMES:
        return "decimal(20,0)"
    if name in _UINT_SMALL:
        return "bigint"
    return "decimal(38,0)"


def _fraction_digits(type_name: Optional[str]) -> Optional[int]:
    m = re.search(r"\(\s*(\d+)\s*\)", type_name or "")
    return int(m.group(1)) if m else None


def typing_for(type_name: Optional[str], jdbc_type: Optional[int] = None) -> Typing:
    fam = family(type_name, jdbc_type)
    if fam == "int":
        return Typing(fam, _int_type(type_name, jdbc_type))
    if fam == "decimal":
        ps = decimal_precision_scale(type_name)
        if ps and 0 < ps[0] <= 38 and 0 <= ps[1] <= ps[0]:
            return Typing(fam, f"decimal({ps[0]},{ps[1]})")
        return Typing(fam, STRING)
    if fam == "float":
        return Typing(fam, "double")
    if fam == "bit":
        n = _fraction_digits(type_name)
        return Typing(fam, "bigint" if n is not None and n <= 63 else "decimal(20,0)")
    if fam == "bool":
        return Typing(fam, "boolean")
    if fam == "binary":
        return Typing(fam, "binary")
    if fam == "date":
        return Typing(fam, "date")
    if fam in ("datetime", "timestamp"):
        p = _fraction_digits(type_name)
        if p is not None and p > 6:
            return Typing(fam, STRING)
        return Typing(fam, "timestamp_ntz" if fam == "datetime" else "timestamp")
    return Typing(fam, STRING)


def typed(text: SparkColumn, t: Typing) -> SparkColumn:
    """The typed value of canonical ``text`` (NULL stays NULL; unparsable becomes NULL, caught by ``exact``)."""
    st = t.spark_type
    if st == STRING:
        return text
    if st == "binary":
        return F.try_to_binary(text, F.lit("base64"))
    if t.family == "timestamp":
        micros = text.try_cast("decimal(38,6)") * F.lit(1_000_000)
        return F.timestamp_micros(micros.try_cast("bigint"))
    return text.try_cast(st)


_INT_RE = r"^[+-]?[0-9]+$"
_DEC_RE = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
_DATE_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_DATETIME_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
_EPOCH_RE = r"^[+-]?[0-9]+(\.[0-9]{1,6})?$"


def exact(text: SparkColumn, value: SparkColumn, t: Typing) -> SparkColumn:
    """True when ``value`` (= ``typed(text, t)``) holds exactly what ``text`` says, so nothing is rounded away."""
    st = t.spark_type
    if st == STRING:
        return F.lit(True)
    ok = value.isNotNull()
    if t.family in ("int", "bit"):
        ok = ok & text.rlike(_INT_RE)
    elif t.family == "decimal":
        scale = int(st[st.index(",") + 1:-1])
        # Fractional digits that matter: trailing zeros do not change the value.
        frac = F.regexp_extract(text, r"\.([0-9]*?)0*$", 1)
        ok = ok & text.rlike(_DEC_RE) & (F.length(frac) <= scale)
    elif t.family == "binary":
        # Spark's base64() wraps lines every 76 characters (MIME, spark.sql.chunkBase64String.enabled): unwrap
        ok = ok & (F.regexp_replace(F.base64(value), r"[\r\n]", "") == text)
    elif t.family == "date":
        ok = ok & text.rlike(_DATE_RE)
    elif t.family == "datetime":
        ok = ok & text.rlike(_DATETIME_RE)
    elif t.family == "timestamp":
        ok = ok & text.rlike(_EPOCH_RE)
    return text.isNull() | ok
