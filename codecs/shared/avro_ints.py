"""Avro ``int`` values that do not fit 32 bits.

Avro writes ``int`` and ``long`` as the same zig-zag varint, and fastavro's reader does not bound an ``int`` to 32
bits: a flipped continuation bit in an archived datum reads back as, say, ``dataTypeNumber = -2**63`` and the
datum "decodes", but it is no valid datum of the schema (it cannot even be written back). ``int_checker`` compiles
a schema into a function that visits only the parts of a datum that can hold an ``int`` and names the first one
out of range, so the codecs reject such a datum as malformed at a cost of a few dictionary look-ups per record.
``may_hold_wide_int`` spares that walk for a datum whose bytes cannot hold such an int, as most cannot.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

# datum -> None, or the path to the bad int (innermost last); paths are only built on the way out of a failure,
# so a good datum costs no string work.
Check = Callable[[Any], Optional[list]]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# An int outside 32 bits zig-zags to 2**32 or more: a varint whose first four bytes continue (>= 0x80) and whose
# fifth holds bit 32 or continues (>= 0x10). Bytes without that run cannot hold one, wherever the datum's ints
# are. (Written out rather than as {4}: Python's engine runs it in half the time.)
_WIDE_VARINT = re.compile(rb"[\x80-\xff][\x80-\xff][\x80-\xff][\x80-\xff][\x10-\xff]")


def may_hold_wide_int(raw: bytes) -> bool:
    """Whether the Avro bytes ``raw`` may hold an ``int`` that does not fit 32 bits (False: they cannot). About
    a microsecond for a record of 200 bytes, against ten for walking its datum (oms-avro)."""
    return _WIDE_VARINT.search(raw) is not None


def _bad_int(value: Any) -> Optional[list]:
    if type(value) is int and not INT32_MIN <= value <= INT32_MAX:
        return [f"= {value}"]
    return None


def int_checker(schema: Any) -> Callable[[Any], Optional[str]]:
    """For a parsed (``fastavro.parse_schema``) schema: datum -> "path = value" of an out-of-range ``int``, or None."""
    named: dict[str, Any] = {}
    compiled: dict[str, Optional[Check]] = {}

    def collect(s: Any) -> None:  # named types are defined once and referenced by name afterwards
        if isinstance(s, dict):
            if s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
                named[s["name"]] = s
            for f in s.get("fields", ()):
                collect(f["type"])
            for key in ("items", "values"):
                if key in s:
                    collect(s[key])
        elif isinstance(s, list):
            for b in s:
                collect(b)

    collect(schema)

    def build(s: Any) -> Optional[Check]:
        if isinstance(s, str):
            if s == "int":
                return _bad_int
            if s in named:
                if s not in compiled:
                    compiled[s] = None  # recursion guard: a recursive type is checked down to its first repeat
                    compiled[s] = build(named[s])
                return compiled[s]
            return None
        if isinstance(s, list):
            return _union(s)
        t = s.get("type")
        if t in ("record", "error"):
            # A plain ``int`` field is checked inline (None): most checked values are those, and a call per
            # field was most of the cost. Fields stay in schema order, so the first bad one is named.
            fields = [(f["name"], None if c is _bad_int else c) for f in s["fields"]
                      if (c := build(f["type"])) is not None]
            if not fields:
                return None

            def record(d: Any) -> Optional[list]:
                if not isinstance(d, dict):
                    return None
                for name, check in fields:
                    value = d.get(name)
                    if check is None:
                        if type(value) is int and not INT32_MIN <= value <= INT32_MAX:
                            return [f".{name}", f"= {value}"]
                        continue
                    bad = check(value)
                    if bad is not None:
                        return [f".{name}", *bad]
                return None
            return record
        if t == "array":
            item = build(s["items"])
            if item is None:
                return None

            def array(d: Any) -> Optional[list]:
                if type(d) is not list:
                    # Another branch's value (a union's string): walking it character by character cost seconds
                    # for a DTS DDL text of 100 KB in afterImages (found by the structural fuzzer).
                    return None
                for i, v in enumerate(d):
                    bad = item(v)
                    if bad is not None:
                        return [f"[{i}]", *bad]
                return None
            return array
        if t == "map":
            value = build(s["values"])
            if value is None:
                return None

            def map_(d: Any) -> Optional[list]:
                if type(d) is not dict:
                    return None
                for k, v in d.items():
                    bad = value(v)
                    if bad is not None:
                        return [f".{k}", *bad]
                return None
            return map_
        if isinstance(t, (str, list, dict)) and t not in ("enum", "fixed"):
            return build(t)
        return None

    def _union(branches: list) -> Optional[Check]:
        checks = {(_name(b)): c for b in branches if (c := build(b)) is not None}
        if not checks:
            return None
        # An untagged plain number in a union that also has long/float/double may be one of those.
        wide = any(b in ("long", "float", "double") for b in branches)

        def union(d: Any) -> Optional[list]:
            if isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], str):  # (branch name, value)
                check = checks.get(d[0])
                return check(d[1]) if check else None
            for check in checks.values():  # an untagged value: any branch that sees a bad int is right
                if check is _bad_int and wide:
                    continue
                bad = check(d)
                if bad is not None:
                    return bad
            return None
        return union

    root = build(schema)
    if root is None:
        return lambda d: None

    def check(d: Any) -> Optional[str]:
        bad = root(d)
        return None if bad is None else "".join(bad[:-1]).lstrip(".") + " " + bad[-1]
    return check


def _name(branch: Any) -> str:
    if isinstance(branch, str):
        return branch
    if isinstance(branch, dict):
        return branch.get("name") or str(branch.get("type"))
    return repr(branch)
