"""The DRS family's wire conventions, shared by every DRS format (``drs_json`` and its variants, ``drs_mongo``):
Gson's escaping, the metadata fields (``id``, ``es``, ``ts``, text fields), the top-level header fixes that keep a
re-encode byte-for-byte, and the Java byte-array / base64 value texts."""

from __future__ import annotations

import base64
import binascii
import re
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional, Sequence

from .. import jsontext
from ..base import Codec
from ..event import Event, Position
from ..jsontext import JsonNumber
from ..shared.json_fix import literal, same_json, unliteral

# Gson's default (HTML-safe) escaping, as DRS documents it, plus the two line separators Gson always escapes.
# These characters can only occur inside JSON strings, so replacing them in the serialised bytes is safe.
_GSON_ESCAPES = {
    b"<": b"\\u003c", b">": b"\\u003e", b"&": b"\\u0026", b"=": b"\\u003d", b"'": b"\\u0027",
    "\u2028".encode(): b"\\u2028", "\u2029".encode(): b"\\u2029",
}
_GSON_RE = re.compile(b"|".join(re.escape(k) for k in _GSON_ESCAPES))


def gson_dumps(value: Any) -> bytes:
    """Compact JSON with number literals kept verbatim and strings escaped the way DRS (Gson) escapes them."""
    return _GSON_RE.sub(lambda m: _GSON_ESCAPES[m.group(0)], jsontext.dumps(value))


def load_object(codec: Codec, raw: bytes, position: Position) -> dict:
    return codec.json_object(raw, position)


_INTEGER = re.compile(r"-?\d+")


def integer_field(codec: Codec, msg: Mapping, key: str, position: Position, required: bool) -> Optional[int]:
    """An integer metadata field (id, es, ts) written as a bare number or a string of digits."""
    value = msg.get(key)
    if value is None:
        if required:
            raise codec.error(key, position, "missing; expected an integer")
        return None
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise codec.error(key, position, f"expected an integer, got {value!r}")


def text_field(codec: Codec, msg: Mapping, key: str, position: Position) -> Optional[str]:
    value = msg.get(key)
    if value is not None and (not isinstance(value, str) or isinstance(value, JsonNumber)):
        raise codec.error(key, position, f"expected a string, got {value!r}")
    return value


def drs_id(event: Event) -> int:
    """The DRS ``id`` for an event: its own sequence when that is one integer (a DRS event, or any vendor with a
    single ordering number), otherwise the archive offset, which is monotonic within the source partition."""
    if len(event.sequence) == 1 and event.sequence[0] == event.sequence[0].to_integral_value():
        return int(event.sequence[0])
    return event.position.offset


def header_fixes(original: Mapping[str, Any], derived: Mapping[str, Any], skip: Iterable[str],
                 known: Mapping[str, bool] = MappingProxyType({})) -> list[list]:
    """Top-level keys where the message differs from the derivation: ``[key, literal]`` to set a value,
    ``[key, None]`` where the original lacks the key. ``known``: keys the caller has already compared (present
    in both), with whether the message writes them as they derive."""
    skip = set(skip)
    fixes: list[list] = []
    for key in dict.fromkeys([*original, *derived]):
        if key in skip:
            continue
        if key not in original:
            fixes.append([key, None])
        elif key not in derived or not (known[key] if key in known else _same_value(original[key], derived[key])):
            fixes.append([key, literal(original[key])])
    return fixes


_SCALARS = frozenset({str, JsonNumber, bool, type(None)})


def _same_value(a: Any, b: Any) -> bool:
    """``same_json``, answered without a call into its recursion for the common case of two values of one scalar
    type (an ``id`` literal, a table name): then plain equality says the same."""
    kind = type(a)
    if kind is type(b) and kind in _SCALARS:
        return a == b
    return same_json(a, b)


def apply_header_fixes(msg: dict[str, Any], fixes: Iterable[Sequence[Any]]) -> dict[str, Any]:
    for key, value in fixes:
        if value is None:
            msg.pop(key, None)
        else:
            msg[key] = unliteral(value)
    return msg


# --------------------------------------------------------------------------------------------------------------
# Value text <-> canonical text


_JAVA_BYTES = re.compile(r"\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\]\Z")


def java_bytes_to_base64(text: str) -> str:
    """``Arrays.toString(byte[])`` text -> base64. Java bytes are signed; unsigned 128..255 is accepted too."""
    m = _JAVA_BYTES.match(text)
    if not m:
        raise ValueError("expected a Java byte array such as [104, -1]")
    values = [int(v) for v in m.group(1).split(",")] if m.group(1) else []
    if any(v < -128 or v > 255 for v in values):
        raise ValueError("byte value out of range -128..255")
    return base64.b64encode(bytes(v & 0xFF for v in values)).decode()


def base64_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"not base64: {text[:40]!r}") from None


def base64_to_java_bytes(text: str) -> str:
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in base64_bytes(text)) + "]"
