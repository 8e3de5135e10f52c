"""Schemaless Avro helpers shared by the Avro codecs (oms-avro, dts-avro): binary I/O with fastavro, and the
JSON-able form of datums (bytes and union branches) kept in ``Event.vendor`` for lossless re-encoding."""

from __future__ import annotations

import base64
import io
import math
import re
import struct
from pathlib import Path
from typing import Any, Optional

import fastavro
import fastavro.schema

from .avro_ints import int_checker, may_hold_wide_int
from .value_text import double_text, parse_float

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def avro_dumps(schema: Any, datum: Any) -> bytes:
    """Schemaless Avro binary. Union branches may be forced with fastavro's tuple notation ``(name, value)``.
    A record's own union fields are named here where the value's Python type allows one branch only
    (``_branch_tags``): the same bytes, without fastavro validating the value against each branch first."""
    tags = _branch_tags(schema)
    if tags and type(datum) is dict:
        datum = dict(datum)
        for name, by_type in tags:
            value = datum.get(name)
            branch = by_type.get(type(value))
            if branch is not None:
                datum[name] = (branch, value)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


# Python type -> the one union branch it can be written as, where fastavro's choice is not in doubt: text for a
# union whose only text-like branch is "string" (no enum or other named type, which a str could also be), a list
# for a union with one array branch. fastavro picks a branch of an untagged value by validating the value against
# each branch in turn, which walks a whole image array before writing it (about 40% of a DTS record's write).
_TAG_KINDS = {"string": str, "array": list}
_BRANCH_TAGS: dict[int, tuple[Any, tuple[tuple[str, dict[type, str]], ...]]] = {}


def _branch_tags(schema: Any) -> tuple[tuple[str, dict[type, str]], ...]:
    """(field, {Python type: branch}) for each union field of a record schema that has such a branch."""
    hit = _BRANCH_TAGS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _BRANCH_TAGS[id(schema)] = (schema, _record_branch_tags(schema))  # holds the schema: its id stays
    return hit[1]


def _record_branch_tags(schema: Any) -> tuple[tuple[str, dict[type, str]], ...]:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return ()
    out = []
    for field in schema.get("fields", ()):
        union = field.get("type")
        if not isinstance(union, list):
            continue
        kinds = [b.get("type") if isinstance(b, dict) else b for b in union]
        named = [k for k in kinds if k not in _PRIMITIVES and k not in ("array", "map")]  # enum, record, fixed
        by_type = {}
        for kind, py_type in _TAG_KINDS.items():
            if kinds.count(kind) == 1 and not (py_type is str and named):
                by_type[py_type] = kind
        if by_type:
            out.append((field["name"], by_type))
    return tuple(out)


def avro_loads(schema: Any, raw: bytes) -> tuple[Any, int]:
    """Read one datum; returns it and the number of bytes consumed. Values of unions with several named types
    come back as ``(full name, value)`` so records of identical shape (DTS BinaryObject/BinaryGeometry) stay
    distinguishable and are written back to the same branch."""
    datum, used = read_datum(schema, raw, named=True)
    return check_ints(schema, datum, raw), used


def read_datum(schema: Any, raw: bytes, named: bool = False) -> tuple[Any, int]:
    """fastavro's schemaless read of one datum (``named``: as ``read_named`` reads it): (datum, bytes consumed).
    Its EOFError names the reader's BytesIO with a memory address ("cannot read double from <_io.BytesIO object at
    0x7f...>"), which made the dead letter of the same truncated record differ between runs; here it says "from
    the record's bytes" instead."""
    buf = io.BytesIO(raw)
    try:
        datum = read_named(schema, buf) if named else fastavro.schemaless_reader(buf, schema, None)
    except EOFError as exc:
        raise EOFError(without_addresses(str(exc), "the record's bytes")) from None
    return datum, buf.tell()


_ADDRESS = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def without_addresses(text: str, name: str) -> str:
    """A reader's error text with each ``<_io.BytesIO object at 0x...>`` (a memory address: another text on every
    run) replaced by ``name``, so that a dead letter's reason is the same whenever the same bytes are read."""
    return _ADDRESS.sub(name, text)


# How every datum the codecs see is read: values of unions with several named types as (full name, value).
NAMED_TYPES = {"return_named_type": True, "return_named_type_override": True}
_NAMING_EVERY_UNION = {"return_named_type": True}
# fastavro counts a union's named types this way (``_schema_py._get_name_and_record_counts_from_union``): records,
# enums, fixed, and any type name that is not one of Avro's own (a reference to a named type).
_AVRO_TYPE_NAMES = frozenset({"boolean", "bytes", "double", "float", "int", "long", "null", "string", "fixed", "enum",
                              "record", "error", "array", "map", "union", "request", "error_union"})


def read_named(schema: Any, fh: Any) -> Any:
    """``fastavro.schemaless_reader(fh, schema, None, **NAMED_TYPES)``: the same datum, read in about three
    quarters of the time. fastavro's override (a union's only named type comes back unnamed) counts each union's
    named types again for every value it reads: a fifth of an OMS record's read. Where every union with one named
    type is a field of the top record (OMS's operation, txind and source; DTS has none), the datum is read with
    every union's named type named, and those fields are unnamed here; other schemas take fastavro's way."""
    options, unnamed = _naming(schema)
    datum = fastavro.schemaless_reader(fh, schema, None, **options)
    for name in unnamed:
        value = datum.get(name)
        if type(value) is tuple:  # (name, value): nothing else reads back as a tuple
            datum[name] = value[1]
    return datum


_NAMINGS: dict[int, tuple[Any, tuple[dict, tuple[str, ...]]]] = {}


def _naming(schema: Any) -> tuple[dict, tuple[str, ...]]:
    hit = _NAMINGS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _NAMINGS[id(schema)] = (schema, _naming_of(schema))  # holds the schema: its id stays unique
    return hit[1]


def _naming_of(schema: Any) -> tuple[dict, tuple[str, ...]]:
    """(reader options, top record fields to unname) that read ``schema`` as ``NAMED_TYPES`` does."""
    single: list[tuple[str, ...]] = []  # where each union with exactly one named type is

    def walk(s: Any, path: tuple[str, ...]) -> None:
        # A named type's body is where it is defined (fastavro's parsed schemas: its first mention); a name
        # mentioned later refers to it and has no unions of its own to count.
        if isinstance(s, list):
            kinds = [b.get("type") if isinstance(b, dict) else b for b in s]  # fastavro's extract_record_type
            count = sum(1 for k in kinds if k in ("record", "enum", "fixed")
                        or (isinstance(k, str) and k not in _AVRO_TYPE_NAMES))
            if count == 1:
                single.append(path)
            for b in s:
                walk(b, path + ("|",))
            return
        if not isinstance(s, dict):
            return
        kind = s.get("type")
        if kind in ("record", "error"):
            for f in s.get("fields", ()):
                walk(f["type"], path + (f["name"],))
        elif kind == "array":
            walk(s["items"], path + ("[]",))
        elif kind == "map":
            walk(s["values"], path + ("{}",))
        elif isinstance(kind, (dict, list)):
            walk(kind, path)

    walk(schema, ())
    if not single or (isinstance(schema, dict) and schema.get("type") == "record"
                      and all(len(p) == 1 for p in single)):
        return _NAMING_EVERY_UNION, tuple(p[0] for p in single)
    return NAMED_TYPES, ()


def check_ints(schema: Any, datum: Any, raw: Optional[bytes] = None) -> Any:
    """``datum``, or ValueError when an Avro int does not fit 32 bits (fastavro does not bound it). ``raw``: the
    bytes the datum was read from (or more), whose look spares walking the datum when they cannot hold one."""
    if raw is not None and not may_hold_wide_int(raw):
        return datum
    bad = _int_checker(schema)(datum)
    if bad:
        raise ValueError(f"Avro int {bad} does not fit 32 bits")
    return datum


_CANONICAL: dict[int, tuple[Any, str]] = {}


def same_layout(writer_schema: Any, schema: Any) -> bool:
    """Whether ``writer_schema`` lays out its bytes exactly as ``schema`` does: the same Parsing Canonical Form
    (Avro spec: names, types, field order; not docs, aliases, defaults or logical types). Bytes of one are then
    read with the other as if written with it; logical types aside, which is why a reader of such bytes uses
    ``schema`` itself, not the writer's."""
    return fastavro.schema.to_parsing_canonical_form(writer_schema) == _canonical_form(schema)


def _canonical_form(schema: Any) -> str:
    """The canonical form of one of the codecs' own (module-level, long-lived) schemas, worked out once."""
    hit = _CANONICAL.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _CANONICAL[id(schema)] = (schema, fastavro.schema.to_parsing_canonical_form(schema))
    return hit[1]


_INT_CHECKERS: dict[int, Any] = {}


def _int_checker(schema: Any):
    hit = _INT_CHECKERS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _INT_CHECKERS[id(schema)] = (schema, int_checker(schema))  # holds the schema: its id stays unique
    return hit[1]


_SHORT_NAMES: dict[str, str] = {}


def short_name(name: str) -> str:
    """``com.alibaba.dts.formats.avro.Integer`` -> ``Integer`` (asked for every value of every image: cached;
    a schema has few names)."""
    short = _SHORT_NAMES.get(name)
    if short is None:
        short = name.rsplit(".", 1)[-1]
        if len(_SHORT_NAMES) < 4096:
            _SHORT_NAMES[name] = short
    return short


def to_jsonable(value: Any) -> Any:
    """An Avro datum as plain JSON for ``event.vendor``: bytes, floats (NaN!) and union tuples are tagged."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return {"$float": double_text(value)}
    if isinstance(value, tuple):
        return {"$type": value[0], "$value": to_jsonable(value[1])}
    if isinstance(value, dict):
        body = {k: to_jsonable(v) for k, v in value.items()}
        return {"$dict": body} if any(k.startswith("$") for k in value) else body
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"not an Avro datum value: {type(value).__name__}")


def from_jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"$bytes"}:
        return base64.b64decode(value["$bytes"])
    if set(value) == {"$float"}:
        return parse_float(value["$float"])
    if set(value) == {"$type", "$value"}:
        return (value["$type"], from_jsonable(value["$value"]))
    if set(value) == {"$dict"}:
        return {k: from_jsonable(v) for k, v in value["$dict"].items()}
    return {k: from_jsonable(v) for k, v in value.items()}


def comparable(value: Any) -> Any:
    """What a datum looks like after an Avro write+read: primitive branch names vanish, a ``float`` branch
    rounds to 32 bits, NaN compares equal to itself. Numbers keep their kind: an int, a float and a boolean are
    read back from different branches, so 1, 1.0 and True differ (Python's == would make them equal)."""
    if isinstance(value, tuple):
        name, inner = value
        if name == "float" and isinstance(inner, float):
            try:
                return comparable(struct.unpack("<f", struct.pack("<f", inner))[0])
            except OverflowError:  # beyond 32 bits: a float branch cannot hold it (fastavro's writer refuses it too)
                return ("float beyond 32 bits", inner)
        if name in _PRIMITIVES:
            return comparable(inner)
        return (name, comparable(inner))
    if isinstance(value, float):
        return ("NaN",) if math.isnan(value) else ("float", value)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value
