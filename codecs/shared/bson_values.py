"""MongoDB (BSON) values as canonical text: the document model every Mongo-source format shares.

A document image maps each *top-level* field to the canonical text of its value and ``Column.type_name`` names
the BSON type it was written as, so that the text means the same as in the relational formats (``string`` ->
the text; ``int32``/``int64``/``double`` -> the literal; ``decimal128`` -> the digits; ``bool`` -> true/false;
``objectId`` -> 24 hex digits; ``binData`` (subtype 0, else ``binData(<n>)``) -> base64; BSON date ->
``timestamp(3)``, epoch seconds with 3 fraction digits; BSON ``Timestamp(t, i)`` -> ``bsonTimestamp`` "t:i";
nested object/array -> compact JSON text in the format's own notation; ``null`` -> None). ``Column.number``
marks values written as bare numbers. How a format spells the values (shell JSON for DRS, Extended JSON for
Debezium) stays in its codec; the types, the date arithmetic and the choice of BSON type for another format's
column (``foreign_type``) are here, so the Mongo formats agree on meaning.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from decimal import Decimal, InvalidOperation, localcontext
from typing import NamedTuple, Optional

from ..event import Column
from .columns import column as shared_column
from ..types import family

STRING, INT32, INT64, DOUBLE, DECIMAL128, BOOL = "string", "int32", "int64", "double", "decimal128", "bool"
OBJECT_ID, BIN_DATA, DATE, BSON_TIMESTAMP, NULL = "objectId", "binData", "timestamp(3)", "bsonTimestamp", "null"
OBJECT, ARRAY, REGEX = "object", "array", "regex"
WORDS = {"MinKey": "minKey", "MaxKey": "maxKey", "undefined": "undefined"}
FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")
# java.sql.Types for the names types.family() does not know, so that other formats and the merge type them.
JDBC_OF = {STRING: 12, INT32: 4, INT64: -5, DOUBLE: 8, DECIMAL128: 3, BOOL: 16, DATE: 93}
BINARY_JDBC = -3
# Types a foreign event may carry after an earlier trip through this format; their names are Mongo's own, so
# they are rendered as Mongo values again (checked to read back identically).
MONGO_ONLY = frozenset({DECIMAL128, OBJECT_ID, BSON_TIMESTAMP, REGEX, OBJECT, ARRAY, *WORDS.values()})

INT = re.compile(r"-?\d+")
HEX24 = re.compile(r"[0-9a-fA-F]{24}")
BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})")
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
MS_PER_DAY = 86_400_000
INT32_RANGE = range(-2**31, 2**31)


class Typed(NamedTuple):
    """A field value as canonical text with the BSON type it was written as. A named tuple, not a frozen
    dataclass: a document makes one per field, and a dataclass's guarded __init__ cost several times as much."""

    type_name: str
    text: Optional[str]
    number: bool = False

    def column(self, name: str) -> Column:
        """The (shared) Column of a field written with this BSON type: a collection's documents repeat their few
        (name, type) pairs, and building each Column with its binData test was a tenth of a decode."""
        return _field_column(name, self.type_name, self.number)


@functools.lru_cache(maxsize=4096)
def _field_column(name: str, type_name: str, number: bool) -> Column:
    jdbc = BINARY_JDBC if is_bin_type(type_name) else JDBC_OF.get(type_name)
    return shared_column(name, type_name, jdbc, number)


def is_bin_type(type_name: Optional[str]) -> bool:
    return bool(type_name) and (type_name == BIN_DATA or re.fullmatch(r"binData\(\d+\)", type_name) is not None)


def bin_type(subtype: int) -> str:
    return BIN_DATA if subtype == 0 else f"{BIN_DATA}({subtype})"


def bin_subtype(type_name: str) -> int:
    return 0 if type_name == BIN_DATA else int(type_name[len(BIN_DATA) + 1:-1])


def is_decimal(text: str) -> bool:
    try:
        Decimal(text)
    except InvalidOperation:
        return False
    return True


def iso_to_epoch(text: str) -> Optional[str]:
    """``2023-05-17T09:18:31.439Z`` -> ``"1684315111.439"`` (exact integer arithmetic; at least 3 fraction
    digits because BSON dates are milliseconds). None for other text or an impossible date."""
    m = _ISO.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        days = date(y, mo, d).toordinal() - EPOCH_ORDINAL
    except ValueError:
        return None
    if h > 23 or mi > 59 or s > 59:
        return None
    zone = m.group(8)
    offset = 0
    if zone != "Z":
        hh, mm = int(zone[1:3]), int(zone[-2:])
        offset = (hh * 3600 + mm * 60) * (-1 if zone[0] == "-" else 1)
    frac = m.group(7) or ""
    with localcontext() as exact:  # room for every digit: the default 28 rounded (or refused) a long fraction
        exact.prec = len(frac) + 32
        seconds = Decimal(days * 86400 + h * 3600 + mi * 60 + s - offset) + Decimal("0." + (frac or "0"))
        return format(seconds.quantize(Decimal(1).scaleb(-max(3, len(frac)))), "f")


NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def ms_to_epoch(ms: int) -> str:
    """BSON date milliseconds -> canonical epoch seconds ``"1684315111.439"``."""
    return format(Decimal(ms).scaleb(-3), "f")


def epoch_to_ms(text: str) -> int:
    """Canonical epoch seconds -> whole milliseconds; ValueError for text that is no whole number of them."""
    try:
        ms = Decimal(text) * 1000
    except ArithmeticError:  # not a number, or an exponent beyond the decimal context (1E+2147483648)
        raise ValueError(f"not epoch seconds: {text!r}") from None
    if not ms.is_finite() or ms != ms.to_integral_value():
        raise ValueError(f"not a whole number of milliseconds: {text!r}")
    return int(ms)


# What a bare number may spell in the document (JSON's grammar): 0147483647 or 1. written bare made a document no
# reader parses; such text is written as a string
_JSON_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def foreign_type(text: str, column: Column) -> str:
    """The BSON type another format's value is written as, by its type family: integers and floats as numbers,
    decimals as decimal128 (a bare fraction would read back as a double, which binary formats then round),
    binary as binData, true/false as bool, everything else as a string."""
    fam = family(column.type_name, column.jdbc_type)
    if fam == "decimal" and NUMBER.fullmatch(text):
        return DECIMAL128
    if fam == "int" and _JSON_INT.fullmatch(text):
        return INT64
    if (fam == "float" or column.number) and (_JSON_NUMBER.fullmatch(text) or text in FLOAT_WORDS):
        return DOUBLE
    if fam == "bool" and text in ("true", "false"):
        return BOOL
    if fam == "binary" and BASE64.fullmatch(text):
        return BIN_DATA
    return STRING
