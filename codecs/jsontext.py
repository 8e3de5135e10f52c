"""JSON reading and writing that keeps numbers exactly as written.

Vendors put 300-digit decimals, unsigned 64-bit integers and doubles in bare JSON numbers. Parsing them into
float/int would change the value or its spelling, so numbers become ``JsonNumber`` (a ``str`` subclass holding
the literal) and are written back verbatim. Several vendors' documented examples carry trailing commas; real
producers built on the same serialisers do too, so the reader repairs exactly that (and nothing else) and
reports that it did.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson


class JsonNumber(str):
    """The literal text of a JSON number, e.g. ``JsonNumber("9.999999")``."""

    __slots__ = ()


_DECODER = json.JSONDecoder(parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=JsonNumber)
# A comma followed only by whitespace before a closing bracket, outside strings.
_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])', re.S)


MAX_DEPTH = 255  # orjson's nesting limit, which every later JSON write of a parsed value (vendor data) meets


def loads(text: str | bytes) -> tuple[Any, bool]:
    """Parse JSON keeping number literals. Returns ``(value, repaired)``; ``repaired`` is True when trailing
    commas had to be removed. Raises ``json.JSONDecodeError`` for anything else that is not JSON, and for JSON
    that is not usable text: lone UTF-16 surrogate escapes (``"\\ud800"`` is no Unicode character and cannot be
    stored as UTF-8) and nesting deeper than ``MAX_DEPTH``."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8")
    try:
        try:
            return _checked(_DECODER.decode(text), text), False
        except json.JSONDecodeError:
            fixed = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)
            if fixed == text:
                raise
            return _checked(_DECODER.decode(fixed), fixed), True
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0) from None


def value_at(text: str, start: int) -> tuple[Any, int]:
    """The JSON value that starts at ``text[start]`` (numbers kept as literals) and the index where it ends; no
    repair and no ``loads`` checks: for finding where a part of a message ``loads`` accepted ends."""
    return _DECODER.raw_decode(text, start)


def _checked(value: Any, text: str) -> Any:
    """``value`` if it can be written back as UTF-8 JSON. Only text that contains a surrogate escape or more than
    MAX_DEPTH brackets can fail, so the (C-speed) re-serialisation runs only for those."""
    if "\\ud" in text or "\\uD" in text or text.count("[") + text.count("{") > MAX_DEPTH:
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError as exc:
            why = ("a lone UTF-16 surrogate escape (not Unicode text)" if "surrogate" in str(exc)
                   else f"nested deeper than {MAX_DEPTH} levels" if "ecursion" in str(exc) else str(exc))
            raise json.JSONDecodeError(why, text, 0) from None
    return value


def _fragment(value: Any) -> Any:
    if isinstance(value, JsonNumber):
        return orjson.Fragment(str(value))
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    """Compact JSON; ``JsonNumber`` values are written as bare number literals, unchanged."""
    return orjson.dumps(value, default=_fragment, option=orjson.OPT_PASSTHROUGH_SUBCLASS)


def normalise(value: Any) -> Any:
    """A comparable form for tests: numbers as ``('n', literal)``, everything else as is."""
    if isinstance(value, JsonNumber):
        return ("n", str(value))
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value
