"""Canonical value text shared by the codecs: JSON scalars (bare number or string), numbers as their shortest
exact spelling (float32 / double), integer bounds, base64."""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from decimal import Decimal
from typing import Any, Optional

from ..jsontext import JsonNumber
from .json_fix import literal, unliteral

# A JSON number's text, unanchored (``arrow_json`` runs the same in RE2). ASCII digits: Python's ``\d`` would take
# "1\u0661", which written bare is no JSON.
JSON_NUMBER_TEXT = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"
_JSON_NUMBER = re.compile(JSON_NUMBER_TEXT + r"\Z")


def is_json_number(text: str) -> bool:
    """True when ``text`` may be written as a bare JSON number (canonical text such as "NaN" may not)."""
    return bool(_JSON_NUMBER.match(text))


def is_text(value: Any) -> bool:
    """A JSON string (``JsonNumber`` is a ``str`` subclass, so ``isinstance(v, str)`` is not enough)."""
    return isinstance(value, str) and not isinstance(value, JsonNumber)


def scalar_text(value: Any) -> tuple[Optional[str], bool]:
    """A JSON scalar as canonical text and whether it was a bare number; None for anything else (raise)."""
    if value is None:
        return None, False
    if isinstance(value, JsonNumber):
        return str(value), True
    if isinstance(value, str):
        return value, False
    raise TypeError(type(value).__name__)


def cell_text(value: Any) -> tuple[Optional[str], str]:
    """A JSON cell -> (canonical text, how it was written): "null", "num" (bare number, literal kept), "str",
    "bool" (JSON true/false -> "true"/"false"), "json" (a JSON column written as an object or array: its exact
    text); "?" for what cannot be a column value (the caller names the field in its error)."""
    if value is None:
        return None, "null"
    if isinstance(value, JsonNumber):
        return str(value), "num"
    if isinstance(value, str):
        return value, "str"
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if isinstance(value, (dict, list)):
        return literal(value), "json"
    return None, "?"


def cell_json(kind: str, text: Optional[str]) -> Any:
    """Canonical text -> the JSON cell of a kind ``cell_text`` reports ("num", "bool", "json", "str"): its
    inverse, exact, or ValueError."""
    if text is None:
        return None
    if kind == "num":
        return JsonNumber(text) if is_json_number(text) else text
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "t"):
            return True
        if lowered in ("false", "0", "f"):
            return False
        raise ValueError(f"{text!r} is not a boolean")
    if kind == "json":
        return unliteral(text)
    return text


def render(text: Optional[str], bare: bool) -> Any:
    """Canonical text back to JSON: bare number when asked for and possible, else a string."""
    if text is None:
        return None
    return JsonNumber(text) if bare and is_json_number(text) else text


_INT_FIELD = re.compile(r"-?\d+\Z")


def int_field(value: Any) -> Optional[int]:
    """An integer metadata field written as a bare number or a string of digits."""
    if isinstance(value, str) and _INT_FIELD.match(value):
        return int(value)
    return None


# --- float text ------------------------------------------------------------------------------------------------

def double_text(x: float) -> str:
    """Shortest text that reads back to the same double (Java spellings for the non-finite values)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


def is_float32(x: float) -> bool:
    if math.isnan(x) or math.isinf(x):
        return True
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0] == x
    except OverflowError:
        return False


def to_float32(x: float) -> float:
    """The 32-bit float a writer stores for ``x`` (ValueError beyond its range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        raise ValueError(f"{x!r} is beyond a 32-bit float") from None


def float32_text(x: float) -> str:
    """Shortest text that reads back to the same 32-bit float (1.2222f is 1.2222, not 1.2222000360488892)."""
    if math.isnan(x) or math.isinf(x):
        return double_text(x)
    for digits in range(1, 10):
        text = "%.*g" % (digits, x)
        try:
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == x:
                return repr(float(text))
        except OverflowError:  # near the float32 limit a rounded spelling (-3.403e38) lies beyond it
            continue
    return repr(x)


def float_holds(text: str, rendered: str) -> bool:
    """Whether a float written for ``text`` and read back as ``rendered`` (``double_text`` / ``float32_text`` of
    the value ``parse_float`` gave) holds the number ``text`` spells. An Avro double has no spelling, so
    1.2510357E7 and 12510357.0 are one value; 1e400 (Infinity), 25 significant digits or a padded ' 1.5' are not
    what a float holds, and an encoder writes such text in its string form instead."""
    if text == rendered:
        return True
    try:
        number = Decimal(text)
        return number.is_finite() and text == text.strip() and number == Decimal(rendered)
    except ArithmeticError:
        return False


def parse_float(text: str) -> float:
    t = text.strip()
    if not re.fullmatch(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|NaN|nan|[Ii]nfinity|inf)", t):
        raise ValueError(f"not a floating point number: {text!r}")
    return float(t)


# --- integers --------------------------------------------------------------------------------------------------

INT_RE = re.compile(r"[+-]?\d+\Z")
INT32 = (-(2 ** 31), 2 ** 31 - 1)
INT64 = (-(2 ** 63), 2 ** 63 - 1)


def parse_int(text: str) -> int:
    if not INT_RE.match(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def fits(n: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= n <= bounds[1]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"binary value is not base64: {text[:40]!r}") from exc


def decimal_shape(text: str) -> tuple[int, int]:
    """Precision and scale of a decimal literal when the declared type does not say."""
    try:
        sign, digits, exp = Decimal(text).as_tuple()
    except Exception as exc:  # decimal.InvalidOperation
        raise ValueError(f"not a decimal: {text!r}") from exc
    if not isinstance(exp, int):
        raise ValueError(f"not a finite decimal: {text!r}")
    scale = max(0, -exp)
    return max(len(digits) + max(exp, 0), scale, 1), scale
