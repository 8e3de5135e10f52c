"""Lossless re-encode for JSON formats: the encoder *derives* a message from the canonical events; at decode time
the received message is compared with that derivation and only the differences are kept in
``event.vendor["fix"]`` (``[[path...], literal]``, or ``None`` where the original lacks the key), then re-applied
on encode. Literals are exact JSON text (numbers verbatim), so ``event.vendor`` stays plain JSON."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .. import jsontext
from ..jsontext import JsonNumber

def literal(value: Any) -> str:
    """A JSON subtree as its exact JSON text (numbers verbatim), so ``event.vendor`` stays plain JSON."""
    return jsontext.dumps(value).decode()


def unliteral(text: str) -> Any:
    return jsontext.loads(text)[0]


def derive_fix(original: Mapping[str, Any], derived: Mapping[str, Any], paths: Iterable[tuple[str, ...]]
               ) -> list[list[Any]]:
    """The differences between the message as received and as the encoder would derive it, at the given key
    paths: ``[[path...], literal]`` to set a value, ``[[path...], None]`` where the original lacks the key."""
    fixes: list[list[Any]] = []
    flat = isinstance(original, dict) and isinstance(derived, dict)  # top-level keys looked up directly
    for path in paths:
        if flat and len(path) == 1:
            orig, der = original.get(path[0], _MISSING), derived.get(path[0], _MISSING)
        else:
            orig, der = _value(original, path), _value(derived, path)
        if orig is _MISSING:
            if der is not _MISSING:
                fixes.append([list(path), None])
        elif der is _MISSING or not same_json(orig, der):
            fixes.append([list(path), literal(orig)])
    return fixes


def same_json(a: Any, b: Any) -> bool:
    """``jsontext.normalise(a) == jsontext.normalise(b)`` without building the normalised copies (decode runs
    this for every metadata key of every message): numbers equal only to numbers with the same literal."""
    if type(a) is str:  # most metadata values: text (a JsonNumber is a subclass of str, not str)
        return not isinstance(b, JsonNumber) and a == b
    a_num, b_num = isinstance(a, JsonNumber), isinstance(b, JsonNumber)
    if a_num or b_num:
        return a_num and b_num and str.__eq__(a, b)
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for key, value in a.items():
            if key not in b or not same_json(value, b[key]):
                return False
        return True
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(b, (dict, list)):
        return False
    return a == b


def fix_paths(original: Mapping[str, Any], derived: Mapping[str, Any], skip: set[str],
              nested: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Every top-level key of either side except ``skip``; keys of the ``nested`` objects one level down."""
    paths: list[tuple[str, ...]] = []
    for key in dict.fromkeys([*original, *derived]):
        if key in skip:
            continue
        o, d = original.get(key), derived.get(key)
        if key in nested and isinstance(o, dict) and isinstance(d, dict):
            paths.extend((key, k) for k in dict.fromkeys([*o, *d]))
        else:
            paths.append((key,))
    return paths


def apply_fix(message: dict[str, Any], fixes: Iterable[Sequence[Any]]) -> dict[str, Any]:
    for path, value in fixes:
        target = message
        for key in path[:-1]:
            nxt = target.get(key)
            if not isinstance(nxt, dict):
                nxt = target[key] = {}
            target = nxt
        if value is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = unliteral(value)
    return message


_MISSING = object()  # no value at the path (JSON null is None, a value)


def _value(obj: Any, path: Sequence[str]) -> Any:
    """The value at the key ``path``, or ``_MISSING``. (decode compares some twenty paths of every message.)"""
    for key in path:
        if not isinstance(obj, dict):
            return _MISSING
        obj = obj.get(key, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj
