"""A seeded mutator over every golden fixture (and the canonical scenario encoded in every format): the bad inputs
a real archive throws at the codecs.

Seeds: each fixture message of ``tests/fixtures/<format>/`` (JSON compacted to one line with exact number literals;
Avro ``*.datum.json`` written as schemaless Avro like the archive holds it) plus the canonical scenario encoded in
that format. Mutations (``KINDS``): byte-level for every format (truncation, bit flips, invalid UTF-8, NUL bytes,
overwritten/inserted bytes, a huge Avro varint), and structure-aware for JSON formats (a known field with a wrong
JSON type, a missing field, huge/fractional/negative numbers, huge strings, deep nesting, lone UTF-16
surrogates), plus one 10 MB line per JSON format. The same seed always gives the same corpus; set
``CDC_FUZZ_SEED`` to explore another one (failures print the seed and the input's label).
"""

from __future__ import annotations

import copy
import io
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from cdc_codecs import EncodeError, get_codec, jsontext
from cdc_codecs.jsontext import JsonNumber
from cdc_codecs.scenario import scenario_events

FIXTURES_ROOT = Path(__file__).resolve().parents[1] / "fixtures"
SEED = int(os.environ.get("CDC_FUZZ_SEED", "20261123"))
TEN_MB = 10 * 1024 * 1024


@dataclass(frozen=True)
class FuzzInput:
    fmt: str
    label: str  # "<kind> of <seed message>", for the failure message
    raw: bytes


# --------------------------------------------------------------------------------------------------- seeds

def _avro_datum_message(fmt: str, path: Path) -> bytes:
    from cdc_codecs.shared.avro import avro_dumps

    return avro_dumps(*avro_datum(fmt, path))


def avro_datum(fmt: str, path: Path) -> tuple[Any, dict]:
    """(schema, datum) of an Avro ``*.datum.json`` fixture, as the codec writes it."""
    from fastavro._read_py import reader as avro_json_reader
    from fastavro.io.json_decoder import AvroJSONDecoder

    body = json.loads(path.read_text())
    if fmt == "dts-avro":
        from cdc_codecs.dts.dts_avro import RECORD14, RECORD15, writable

        schema = RECORD15 if "bornTimestamp" in body else RECORD14
    else:
        from cdc_codecs.oms.oms_avro import SCHEMA as schema

        writable = None
    datum = next(iter(avro_json_reader(AvroJSONDecoder(io.StringIO(json.dumps(body))), schema,
                                       return_named_type=True, return_named_type_override=True)))
    if writable is not None:
        for side in ("beforeImages", "afterImages"):
            if isinstance(datum[side], list):
                datum[side] = [writable(v) for v in datum[side]]
    return schema, datum


def varint(value: int) -> bytes:
    """Avro's zig-zag varint of ``value`` (an int or a long: the same bytes)."""
    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, "long", value)
    return buf.getvalue()


def oms_with_version(raw: bytes, version: int) -> bytes:
    """An OMS AvroRecord's bytes with its ``version`` (the union ["int"] after the id) set to ``version``, which
    may be beyond 32 bits: fastavro's writer refuses such a datum, so the bytes are spliced."""
    import fastavro

    at = len(varint(fastavro.schemaless_reader(io.BytesIO(raw), "long")))  # the id, then the version
    assert raw[at:at + 2] == b"\x00\x02", "version 1: the union's only branch, then 1"
    return raw[:at + 1] + varint(version) + raw[at + 2:]


def seed_messages(fmt: str) -> list[tuple[str, bytes]]:
    """(name, message bytes) of the format's fixtures and its encoding of the canonical scenario."""
    out = []
    binary = get_codec(fmt).capabilities.binary
    for path in sorted((FIXTURES_ROOT / fmt).iterdir()):
        if path.suffix != ".json":
            continue
        if binary:
            # Avro datum fixtures of the formats whose schema is fixed (the Confluent wire format's come with a
            # registry; its seeds are its scenario messages, whose schemas this process registered)
            if path.name.endswith(".datum.json") and fmt in ("dts-avro", "oms-avro"):
                out.append((path.name, _avro_datum_message(fmt, path)))
            continue
        try:
            value, _ = jsontext.loads(path.read_bytes())
        except ValueError:  # a fixture that is malformed on purpose is a seed as it is
            out.append((path.name, path.read_bytes().replace(b"\n", b" ")))
            continue
        out.append((path.name, jsontext.dumps(value)))
    codec = get_codec(fmt)
    events = [e for e in scenario_events() if codec.capabilities.carries(e.op)]
    try:
        messages = codec.encode(events)
    except EncodeError:
        messages = []
    out.extend((f"scenario#{n}", m.value) for n, m in enumerate(messages))
    return out


# ---------------------------------------------------------------------------------------- byte mutations

def truncate(rng: random.Random, raw: bytes) -> bytes:
    return raw[: rng.randrange(len(raw))] if raw else raw


def bit_flips(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def overwrite_bytes(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def invalid_utf8(rng: random.Random, raw: bytes) -> bytes:
    i = rng.randrange(len(raw) + 1)
    return raw[:i] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80"]) + raw[i:]


def nul_bytes(rng: random.Random, raw: bytes) -> bytes:
    i = rng.randrange(len(raw) + 1)
    return raw[:i] + b"\x00" * rng.randint(1, 3) + raw[i:]


def huge_varint(rng: random.Random, raw: bytes) -> bytes:
    """Avro: a length/count that claims gigabytes (or never terminates) where a small one was."""
    i = rng.randrange(len(raw) + 1)
    return raw[:i] + rng.choice([b"\xff" * 10 + b"\x01", b"\xfe\xff\xff\xff\x0f", b"\x81\x80\x80\x80\x80\x01"]) + raw[i + 1:]


def append_garbage(rng: random.Random, raw: bytes) -> bytes:
    return raw + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))


BYTE_KINDS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "truncation": truncate, "bit flips": bit_flips, "overwritten bytes": overwrite_bytes,
    "invalid UTF-8": invalid_utf8, "NUL bytes": nul_bytes,
}
AVRO_KINDS = {**BYTE_KINDS, "huge varint": huge_varint, "trailing garbage": append_garbage}


# ---------------------------------------------------------------------------------------- JSON mutations

def _slots(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any, Any]]:
    """(path, container, key) of every value inside ``value``."""
    if isinstance(value, dict):
        for k in list(value):
            yield (*path, k), value, k
            yield from _slots(value[k], (*path, k))
    elif isinstance(value, list):
        for i in range(len(value)):
            yield (*path, i), value, i
            yield from _slots(value[i], (*path, i))


HUGE_NUMBERS = ["9" * 400, str(2**63), str(-(2**63) - 1), str(2**64 + 1), "1e400", "-1e309", "1.5", "-1",
                "1" + "0" * 39, "12345678901234567890123456789012345678901", "0.0000000001", "1E+2147483648"]


def _wrong_type(rng: random.Random, current: Any) -> Any:
    options = [[], {}, [1, 2], {"k": "v"}, True, False, None, JsonNumber("1"), "text", ""]
    return rng.choice([o for o in options if type(o) is not type(current)] or options)


def _deep(rng: random.Random) -> bytes:
    depth = rng.choice([50, 500, 5000, 100_000])
    if rng.random() < 0.5:
        return b"[" * depth + b"1" + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _mutate_json(rng: random.Random, doc: Any, kind: str, splices: dict[str, bytes]) -> bool:
    """Apply one structural mutation in place (raw JSON text to splice in goes to ``splices``); False when the
    document has no place for it."""
    slots = list(_slots(doc))
    if not slots:
        return False
    path, container, key = rng.choice(slots)
    current = container[key]
    if kind == "wrong type":
        container[key] = _wrong_type(rng, current)
    elif kind == "missing field":
        dict_slots = [s for s in slots if isinstance(s[1], dict)]
        if not dict_slots:
            return False
        _, container, key = rng.choice(dict_slots)
        del container[key]
    elif kind == "huge number":
        numeric = [s for s in slots if isinstance(s[1][s[2]], JsonNumber)] or slots
        _, container, key = rng.choice(numeric)
        container[key] = JsonNumber(rng.choice(HUGE_NUMBERS))
    elif kind == "number as string":
        numeric = [s for s in slots if isinstance(s[1][s[2]], JsonNumber)]
        if not numeric:
            return False
        _, container, key = rng.choice(numeric)
        container[key] = rng.choice([str(container[key]), "9" * 400, "abc", "", "NaN"])
    elif kind == "huge string":
        container[key] = "x" * rng.choice([70_000, 300_000])
    elif kind == "deep nesting":
        container[key] = token = f"@@splice{len(splices)}@@"
        splices[token] = _deep(rng)
    elif kind == "lone surrogate":
        strings = [s for s in slots if isinstance(s[1][s[2]], str) and not isinstance(s[1][s[2]], JsonNumber)]
        if not strings:
            return False
        _, container, key = rng.choice(strings)
        token = f"@@splice{len(splices)}@@"
        splices[token] = jsontext.dumps(str(container[key]))[:-1] + rng.choice(
            [b"\\ud800", b"\\udfff\\ud800", b"\\u0000", b"\\u202e"]) + b'"'
        container[key] = token
    else:
        raise ValueError(kind)
    return True


JSON_KINDS = ["wrong type", "missing field", "huge number", "number as string", "huge string", "deep nesting",
              "lone surrogate"]


def _dumps(doc: Any, splices: dict[str, bytes]) -> bytes:
    """``jsontext.dumps`` (exact number literals), then the placeholders replaced by raw JSON text that no
    serialiser would write: lone surrogate escapes, nesting deeper than a recursive writer goes."""
    out = jsontext.dumps(doc)
    for token, text in splices.items():
        out = out.replace(jsontext.dumps(token), text)
    return out


# ------------------------------------------------------------------------------------------------ corpus

def corpus(fmt: str, per_format: int, seed: int = SEED, ten_mb_line: bool = True) -> list[FuzzInput]:
    """``per_format`` mutated messages of ``fmt`` (the same list for the same seed)."""
    rng = random.Random(f"{seed}:{fmt}")
    seeds = seed_messages(fmt)
    binary = get_codec(fmt).capabilities.binary
    out: list[FuzzInput] = []
    while len(out) < per_format:
        name, raw = rng.choice(seeds)
        if binary or rng.random() < 0.45:
            kinds = AVRO_KINDS if binary else BYTE_KINDS
            kind = rng.choice(sorted(kinds))
            mutated = kinds[kind](rng, raw) if raw else raw
        else:
            kind = rng.choice(JSON_KINDS)
            try:
                doc, _ = jsontext.loads(raw)
            except ValueError:
                continue
            splices: dict[str, bytes] = {}
            if not _mutate_json(rng, doc, kind, splices):
                continue
            mutated = _dumps(doc, splices)
        if not binary:
            mutated = mutated.replace(b"\n", b" ").replace(b"\r", b" ")  # stays one line of a JSON-lines file
        if mutated.strip() and mutated != raw:
            out.append(FuzzInput(fmt, f"{kind} of {name}", mutated))
    if ten_mb_line and not binary:
        out.append(FuzzInput(fmt, "10 MB line", ten_mb(seeds)))
    return out


def ten_mb(seeds: list[tuple[str, bytes]]) -> bytes:
    """A well-formed message of one seed with a 10 MB string added as an unknown field."""
    for _, raw in seeds:
        try:
            doc, _ = jsontext.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            doc["padding"] = "p" * TEN_MB
            return jsontext.dumps(doc)
    return b'{"padding":"' + b"p" * TEN_MB + b'"}'


# ------------------------------------------------------------------------------- structure-aware, systematic
#
# From each seed message, every field (the declared required ones first, then every key down to
# ``STRUCT_DEPTH``, then a seeded sample of deeper ones) gets each of ``STRUCT_KINDS``: dropped, set to null,
# given another JSON type, nested one level deeper (in an object, in an array), duplicated with another value,
# set to a number beyond every range (1e400, -0, 2^64, a 40-digit decimal) or to a huge string. Avro seeds get
# the mutations Avro can carry: a field the writer schema lacks, a union value of another branch, extreme longs
# and huge strings. ``structural(fmt, cap)`` gives at most ``cap`` inputs, always the same for the same seed.

STRUCT_DEPTH = 2
EXTREME_NUMBERS = {"1e400": "1e400", "-0": "-0", "2^64": str(2**64), "40 digits": "1" + "0" * 39 + ".5"}
STRUCT_KINDS = ["drop", "null", "retype", "nest in object", "nest in array", "duplicate key",
                *[f"number {k}" for k in EXTREME_NUMBERS], "huge string"]


@dataclass(frozen=True)
class StructInput(FuzzInput):
    path: tuple = ()  # the mutated field
    kind: str = ""  # one of STRUCT_KINDS (or an Avro kind)
    # The field is one the message's kind requires (``Codec.required``) and the mutation leaves it missing or of
    # a type the declaration does not accept: the message must be a dead letter.
    violates: bool = False


_DROPPED = object()


def _violates(need: Any, value: Any) -> bool:
    from cdc_codecs.shared.required import json_type

    if need is None:
        return False
    if value is _DROPPED:
        return True
    actual = json_type(value)
    return not (actual in need.types or (actual == "integer" and "number" in need.types)) or \
        (need.nonempty and not value)


def _json_mutation(doc: Any, path: tuple, kind: str) -> tuple[Any, dict[str, bytes], Any] | None:
    """A mutated copy of ``doc``, the raw splices its text needs and the value the field then reads as
    (``_DROPPED``: none), or None when ``kind`` does not apply."""
    out = copy.deepcopy(doc)
    holder = out
    for k in path[:-1]:
        holder = holder[k]
    key, current = path[-1], holder[path[-1]]
    splices: dict[str, bytes] = {}
    if kind == "drop":
        if not isinstance(holder, dict):
            return None
        del holder[key]
    elif kind == "null":
        if current is None:
            return None
        holder[key] = None
    elif kind == "retype":
        holder[key] = _wrong_type(random.Random(repr(path)), current)
    elif kind == "nest in object":
        holder[key] = {"value": current}
    elif kind == "nest in array":
        holder[key] = [current]
    elif kind == "duplicate key":  # {"k": v, "k": other}: JSON readers disagree on which one wins
        if not isinstance(holder, dict):
            return None
        token = f"@@splice{len(splices)}@@"
        other = _wrong_type(random.Random(repr(path)), current)
        splices[token] = jsontext.dumps(current) + b"," + jsontext.dumps(key) + b":" + jsontext.dumps(other)
        holder[key] = token
        return out, splices, other  # the last one wins in Python's reader
    elif kind.startswith("number "):
        holder[key] = JsonNumber(EXTREME_NUMBERS[kind.removeprefix("number ")])
    elif kind == "huge string":
        holder[key] = "x" * 100_000
    else:
        raise ValueError(kind)
    return out, splices, holder[key] if kind != "drop" else _DROPPED


def _paths(doc: Any, rng: random.Random, required: list[tuple]) -> list[tuple]:
    """Fields to mutate: the declared ones present, every key path down to STRUCT_DEPTH, then deeper ones."""
    shallow, deep = [], []
    for path, _, _ in _slots(doc):
        (shallow if len(path) <= STRUCT_DEPTH else deep).append(path)
    rng.shuffle(deep)
    present = [p for p in required if p in set(shallow) | set(deep)]
    return list(dict.fromkeys([*present, *shallow, *deep[:8]]))


def _declared_paths(fmt: str, doc: Any) -> dict[tuple, Any]:
    codec = get_codec(fmt)
    required = codec.required
    try:
        subject = required.subject(doc)
        kind = required.kind(subject) if isinstance(subject, dict) else None
    except Exception:  # noqa: BLE001 - a seed that is malformed on purpose
        return {}
    enveloped = required.table.startswith("payload.")  # Debezium's paths are relative to the payload
    prefix = ("payload",) if enveloped and isinstance(doc, dict) and "op" not in doc and "payload" in doc else ()
    out = {}
    for need in required.needs.get(kind, ()):
        keys = tuple(need.path.split("."))
        path = ((*prefix, *keys[1:]) if prefix and keys[0] == "payload" else
                keys[1:] if enveloped and keys[0] == "payload" else keys)
        out[path] = need
    return out


def structural(fmt: str, cap: int, seed: int = SEED) -> list[StructInput]:
    """Structure-aware mutations of the seed messages of ``fmt``: every (seed, field, kind) combination when
    ``cap`` allows, else a seeded sample of ``cap`` of them, half on the fields the messages' kinds require."""
    if get_codec(fmt).capabilities.binary:
        # Avro datums of the formats whose *.datum.json fixtures this reads (other binary formats: none yet)
        return _avro_structural(fmt, cap, seed) if fmt in AVRO_DATUM_FORMATS else []
    rng = random.Random(f"struct:{seed}:{fmt}")
    seeds, declared_combos, other_combos = [], [], []
    for name, raw in seed_messages(fmt):
        try:
            doc, _ = jsontext.loads(raw)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        declared = _declared_paths(fmt, doc)
        seeds.append((name, doc, declared))
        for path in _paths(doc, rng, list(declared)):
            for kind in STRUCT_KINDS:
                (declared_combos if path in declared else other_combos).append((len(seeds) - 1, path, kind))
    if len(declared_combos) + len(other_combos) > cap:
        half = min(len(declared_combos), cap // 2)
        declared_combos = rng.sample(declared_combos, half)
        other_combos = rng.sample(other_combos, min(len(other_combos), cap - half))
    out: list[StructInput] = []
    for i, path, kind in declared_combos + other_combos:
        name, doc, declared = seeds[i]
        mutated = _json_mutation(doc, path, kind)
        if mutated is None:
            continue
        mutated_doc, splices, value = mutated
        raw = _dumps(mutated_doc, splices).replace(b"\n", b" ").replace(b"\r", b" ")
        out.append(StructInput(fmt, f"{kind} of {'.'.join(map(str, path))} in {name}", raw, path, kind,
                               _violates(declared.get(path), value)))
    return out


AVRO_DATUM_FORMATS = ("dts-avro", "oms-avro")
AVRO_STRUCT_KINDS = ["field missing from the writer schema", "union branch of another type", "long extremes",
                     "huge string"]


def _avro_seeds(fmt: str) -> list[tuple[str, Any, dict]]:
    return [(p.name, *avro_datum(fmt, p)) for p in sorted((FIXTURES_ROOT / fmt).glob("*.datum.json"))]


def _branch_values(branches: list) -> list[Any]:
    """One value per branch type a union could hold (named types are left out: their shape is too specific)."""
    sample = {"null": None, "string": "x", "long": 1 << 40, "int": 7, "boolean": True, "double": 1.5,
              "bytes": b"\x00", "float": 0.5}
    out = []
    for b in branches:
        t = b if isinstance(b, str) else b.get("type") if isinstance(b, dict) else None
        if t in sample:
            out.append((t, sample[t]))
        elif t == "array":
            out.append(("array", []))
        elif t == "map":
            out.append(("map", {}))
    return out


def _avro_structural(fmt: str, cap: int, seed: int) -> list[StructInput]:
    import fastavro

    from cdc_codecs.shared.avro import avro_dumps

    out: list[StructInput] = []
    required = get_codec(fmt).required
    for name, schema, datum in _avro_seeds(fmt):
        kind_needs = required.needs.get(required.kind(datum), ())
        declared = {n.path: n for n in kind_needs}
        for f in schema["fields"]:
            field, ftype = f["name"], f["type"]
            # A writer that lacks the field: the bytes are shorter than the reader's schema says.
            writer = dict(schema, fields=[x for x in schema["fields"] if x["name"] != field])
            buf = io.BytesIO()
            try:
                fastavro.schemaless_writer(buf, writer, {k: v for k, v in datum.items() if k != field})
                out.append(StructInput(fmt, f"{AVRO_STRUCT_KINDS[0]}: {field} in {name}", buf.getvalue(),
                                       (field,), AVRO_STRUCT_KINDS[0]))
            except Exception:  # noqa: BLE001 - a writer schema fastavro refuses: no such archive can exist
                pass
            variants: list[tuple[str, Any]] = []
            if isinstance(ftype, list):
                variants += [(AVRO_STRUCT_KINDS[1], v) for t, v in _branch_values(ftype)
                             if type(v) is not type(datum[field])]
            if ftype == "long" or (isinstance(ftype, list) and "long" in ftype):
                variants += [(AVRO_STRUCT_KINDS[2], v) for v in (2**63 - 1, -(2**63), 0, -1)]
            if ftype == "string" or (isinstance(ftype, list) and "string" in ftype):
                variants.append((AVRO_STRUCT_KINDS[3], "x" * 100_000))
            for kind, value in variants:
                try:
                    raw = avro_dumps(schema, {**datum, field: value})
                except Exception:  # noqa: BLE001 - not writable under this schema
                    continue
                out.append(StructInput(fmt, f"{kind}: {field}={str(value)[:20]!r} in {name}", raw, (field,), kind,
                                       _violates(declared.get(field), value)))
    rng = random.Random(f"struct:{seed}:{fmt}")
    if len(out) > cap:
        out = rng.sample(out, cap)
    return out
