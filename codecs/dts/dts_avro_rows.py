"""dts-avro's decode fast path for the records of an Avro container archive (``ContainerDecoder.rows``).

An INSERT/UPDATE/DELETE/INIT record of one ``db.table`` with a field list and list images becomes its DECODED
row (``shared.plain_rows.data_row``) in one walk over its values: no ``Event``, no second walk of the datum for
32-bit ints (each value's ints are checked where its kind is known), and the lossless-re-encode comparison done
by rule for the three kinds most columns are (Integer, Decimal, UTF-8 Character), by ``image_value`` for the rest.
Anything else, or anything the reference would reject, returns None and takes ``DtsAvroCodec._event``, which
names the error. It must give exactly the rows the reference gives; ``tests/codecs/test_dts_avro_rows.py``
compares them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

import orjson

from ..shared.avro import comparable, to_jsonable
from ..shared.plain_rows import INT64, column_dicts, columns_fit, data_row, name_fits
from ..shared.time_text import date_text, time_text
from ..shared.value_text import INT_RE
from .dts_avro import (NO_SEQUENCE_ID, NS, RECORD15, REQUIRED, DtsAvroCodec, column_spec, column_type_name, declaration,
                       image_value, key_columns, python_charset, value_text)
from ..shared.memo import remember

FORMAT = DtsAvroCodec.name
_DATA_OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}  # -> Op values
_I32_LO, _I32_HI = -(2**31), 2**31 - 1
_I64_LO, _I64_HI = INT64
_EMPTY, _INTEGER, _DECIMAL, _CHARACTER, _ZONED, _DATETIME = (
    f"{NS}.{n}" for n in ("EmptyObject", "Integer", "Decimal", "Character", "TimestampWithTimeZone", "DateTime"))


def _value_ints(schema: Any) -> dict[str, tuple[str, ...]]:
    """Full name -> the ``int`` fields of each image value kind whose fields are all primitives (read from the
    schema, so a changed schema cannot leave an int unchecked). A kind with a record inside is left out (the
    time zone's, whose DateTime ``_image`` checks itself), and a record holding one takes the reference path."""
    out: dict[str, tuple[str, ...]] = {}

    def walk(s: Any) -> None:
        if isinstance(s, list):
            for b in s:
                walk(b)
        elif isinstance(s, dict):
            if s.get("type") == "record":
                types = [f["type"] for f in s["fields"]]
                plain = all(_primitive(t) or (isinstance(t, list) and all(_primitive(b) for b in t)) for t in types)
                if plain:
                    out[s["name"]] = tuple(f["name"] for f, t in zip(s["fields"], types)
                                           if t == "int" or (isinstance(t, list) and "int" in t))
                for t in types:
                    walk(t)
            elif s.get("type") in ("array", "map"):
                walk(s.get("items", s.get("values")))

    walk(schema)
    return out


_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def _primitive(t: Any) -> bool:
    return isinstance(t, str) and t in _PRIMITIVES


_VALUE_INTS = _value_ints(RECORD15)
# The one kind with a record inside: its ``value`` is a DateTime, whose ints ``_image`` checks.
_ZONED_INTS = _VALUE_INTS[_DATETIME]
assert _ZONED not in _VALUE_INTS and _DATETIME in _VALUE_INTS
_DICTS: dict[int, tuple[tuple, list[dict]]] = {}  # declaration id -> (declaration, its ``columns`` dicts)


# Column specs of a DateTime column (``column_spec``); shared, never changed.
_DATETIME_SPEC: dict[str, Any] = {"kind": "DateTime"}
_DATETIME_NULL_MILLIS_SPEC: dict[str, Any] = {"kind": "DateTime", "millis_null": True}


def _whole_datetime(rec: dict) -> bool:
    """All six date and time fields are set: ``_datetime_parts`` calls it a DATETIME."""
    return None not in (rec["year"], rec["month"], rec["day"], rec["hour"], rec["minute"], rec["second"])


def _plain_datetime(rec: dict) -> bool:
    """A whole DateTime (``_int32`` checked its fields: ints or None) whose text reads back as the same record:
    a year of at most four digits, two-digit other fields, microseconds in range."""
    y, mo, d, h, mi, s, micros = (rec["year"], rec["month"], rec["day"], rec["hour"], rec["minute"], rec["second"],
                                  rec["millis"])
    return None not in (y, mo, d, h, mi, s, micros) and -9999 <= y <= 9999 and 0 <= mo <= 99 and 0 <= d <= 99 \
        and 0 <= h <= 99 and 0 <= mi <= 99 and 0 <= s <= 99 and 0 <= micros < 10 ** 6


def _int32(v: Any) -> bool:
    return v is None or (type(v) is int and _I32_LO <= v <= _I32_HI)


def plain_rows(datum: dict, born: bool, at: tuple) -> Optional[list[tuple]]:
    """The DECODED row of a plain data record, or None (the reference decodes it)."""
    try:
        return _rows(datum, born, at)
    except Exception:  # noqa: BLE001 - whatever the rules did not foresee: the reference decodes it and names it
        return None


def _rows(datum: dict, born: bool, at: tuple) -> Optional[list[tuple]]:
    op = _DATA_OPS.get(datum["operation"])
    name = datum["objectName"]
    fields = datum["fields"]
    if op is None or type(name) is not str or name.count(".") != 1 or "\\u002E" in name \
            or type(fields) is not list or not _int32(datum["version"]) or not REQUIRED.satisfied(datum):
        return None
    database, _, table = name.partition(".")
    stamp = datum["sourceTimestamp"] * 1000
    if not (table and name_fits(database) and name_fits(table) and _I64_LO <= stamp <= _I64_HI):
        return None
    names = [f["name"] for f in fields]
    numbers = [f["dataTypeNumber"] for f in fields]
    n = len(names)
    if len(set(names)) != n or not all(_int32(x) for x in numbers):
        return None
    before, after = datum["beforeImages"], datum["afterImages"]
    for image in (before, after):
        if image is not None and (type(image) is not list or len(image) != n):
            return None
    info = datum["tags"].get("pk_uk_info")
    pk = key_columns(info) if info else ()
    # The declaration: each column typed by its first typed value, after image first (``_column_types``).
    sides = [img for img in (after, before) if img]
    types, specs = [], {}
    for i in range(n):
        typed = None
        for img in sides:
            v = img[i]
            if v is not None and v[0] != _EMPTY:
                typed = v
                break
        if typed is None:
            types.append(None)
            continue
        kind, rec = typed
        if kind == _INTEGER:
            types.append("INTEGER")
            specs[names[i]] = {"kind": "Integer", "precision": rec["precision"]}
        elif kind == _CHARACTER:
            types.append("CHARACTER")
            specs[names[i]] = {"kind": "Character", "charset": rec["charset"]}
        elif kind == _DATETIME and _whole_datetime(rec):  # ``column_type_name``: all six fields set
            types.append("DATETIME")
            specs[names[i]] = _DATETIME_SPEC if rec["millis"] is not None else _DATETIME_NULL_MILLIS_SPEC
        else:
            types.append(column_type_name(typed))
            specs[names[i]] = column_spec(typed)
    declared = declaration(names, types)
    if not columns_fit(declared):
        return None
    vendor: dict[str, Any] = {"version": datum["version"], "sourcePosition": datum["sourcePosition"],
                              "safeSourcePosition": datum["safeSourcePosition"], "source": datum["source"],
                              "tags": datum["tags"], "born": datum["bornTimestamp"] if born else None}
    if datum["processTimestamps"] is not None:
        vendor["processTimestamps"] = datum["processTimestamps"]
    vendor["fields"] = numbers
    if specs:
        vendor["specs"] = specs
    images, raw = [], {}
    for side, image in (("before", before), ("after", after)):
        converted = _image(image, declared, names, specs) if image is not None else (None, None)
        if converted is None:
            return None
        images.append(converted[0])
        if converted[1]:
            raw[side] = converted[1]
    if raw:
        vendor["raw"] = raw
    hit = _DICTS.get(id(declared))
    if hit is None or hit[0] is not declared:
        hit = remember(_DICTS, id(declared), (declared, column_dicts(declared)))  # holds the tuple: its id stays unique
    sequence = () if datum["id"] == NO_SEQUENCE_ID else (Decimal(datum["id"]),)
    return [data_row(FORMAT, op, database, table, images[0], images[1], hit[1], pk, stamp, sequence, at, 0,
                     orjson.dumps(vendor, default=str).decode(), True, transaction_id=datum["sourceTxid"] or None)]


def _image(image: list, declared: tuple, names: list, specs: dict) -> Optional[tuple[dict, dict]]:
    """(canonical image, values kept verbatim for re-encoding) of one side, as ``DtsAvroCodec._image`` makes
    them; None where that would raise."""
    out: dict[str, Optional[str]] = {}
    kept: dict[str, Any] = {}
    for i, value in enumerate(image):
        name = names[i]
        if value is None:
            out[name] = None  # SQL NULL; image_value(None) is None: nothing to keep
            continue
        kind, rec = value
        ints = _VALUE_INTS.get(kind)
        if ints is None:
            if kind == _ZONED:
                inner = rec["value"]
                if type(inner) is not dict or not all(_int32(inner[f]) for f in _ZONED_INTS):
                    return None
                ints = ()
            elif kind != _EMPTY:
                return None  # a kind this schema does not have
            elif rec == "NONE":
                continue  # not in this image
            else:
                ints = ()
        for f in ints:
            if not _int32(rec[f]):
                return None
        spec = specs.get(name, {})
        if kind == _INTEGER:
            text = rec["value"]
            if not INT_RE.match(text):
                return None
            out[name] = text
            # image_value gives {"precision": the column's, "value": text}: the same record when the precision is
            if spec.get("kind") == "Integer" and spec["precision"] == rec["precision"]:
                continue
        elif kind == _DECIMAL:
            text = out[name] = rec["value"]
            # image_value takes precision and scale from the column's DECIMAL(p,s), which the first typed value of
            # the column gave (``column_type_name``); a value with the same two is rebuilt as it is
            p, s = rec["precision"], rec["scale"]
            if spec.get("kind") == "Decimal" and p >= 0 and s >= 0 and \
                    declared[i].type_name == f"DECIMAL({p},{s})":
                continue
        elif kind == _DATETIME and spec == _DATETIME_SPEC and rec["millis"] is not None \
                and _plain_datetime(rec):
            # ``value_text``'s DATETIME text, which ``image_value`` parses back to this very record whenever the
            # fields are in the ranges ``_plain_datetime`` allows (DATETIME_RE takes 4 year and 2 other digits)
            out[name] = (f"{date_text(rec['year'], rec['month'], rec['day'])} "
                         f"{time_text(rec['hour'], rec['minute'], rec['second'], rec['millis'] * 1000)}")
            continue
        elif kind == _CHARACTER:
            charset = rec["charset"]
            if python_charset(charset) != "utf-8":
                text = out[name] = value_text(value)[0]
            else:
                # strict UTF-8 decodes only what it encodes back to the same bytes
                text = out[name] = bytes(rec["value"]).decode("utf-8")
                if spec.get("kind") == "Character" and spec.get("charset", "utf8mb4") == charset:
                    continue
        else:
            text, present = value_text(value)
            if not present:
                continue
            out[name] = text
        try:
            derived = image_value(declared[i], spec, text)
            same = derived == value or comparable(derived) == comparable(value)
        except (ValueError, UnicodeEncodeError):
            same = False
        if not same:
            kept[name] = to_jsonable(value)
    return out, kept
