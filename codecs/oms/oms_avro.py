"""OceanBase OMS data subscription, Avro ``AvroRecord`` (schema: ``schemas/oms.AvroRecord.avsc``).

One Kafka message is one schemaless-Avro ``AvroRecord``: a row change (INSERT/UPDATE/DELETE, images are arrays
of typed ``ColumnValue`` positional to ``fields``), a DDL (``sql``), or a BEGIN/COMMIT/HEARTBEAT marker.

Values: each ``ColumnValue`` has a ``type_info`` (the Avro DataType of the column) and a ``value`` union
(int/long/float/double/bytes/string or a record such as ``DecimalObject``/``DateTimeObject``). They become
canonical text (see ``event.py``) and ``Column.type_name`` is the DataType, decorated where the value says more
(``DECIMAL(p,s)``, ``BIT(n)``, ``TIMESTAMP WITH TIME ZONE``) so ``types.family`` types it right. The documented
``dataTypeNumber`` has no documented numbering, so it is kept in ``vendor`` and never guessed into ``jdbc_type``.

Lossless re-encode: the encoder derives every ColumnValue from (type, text, per-column spec such as a charset);
at decode time each value is compared with that derivation and only values that differ are kept verbatim in
``vendor["raw"]`` (re-used on encode only while the canonical text is unchanged).

Shards: a record too large for one message is split. Decision (the document only names the fields): every
shard repeats the header fields with ``beforeImages``/``afterImages`` null; ``beforeImageBytes`` (resp.
``afterImageBytes``) of all shards concatenated in ``index`` order is the Avro binary encoding of the image
array (``array<ColumnValue>``; no bytes at all = null image). ``index`` is 0-based (1-based accepted when the
indexes are exactly 1..total). Each shard decodes to a fragment Event (``fragment_key`` = record ``id``);
``assemble`` joins them. See ``tests/fixtures/oms-avro/NOTES.md``.

The Avro, time-text and value-text helpers it shares with ``dts_avro`` live in ``codecs/shared``.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any, Mapping, Optional, Sequence

import fastavro

from ..base import Capabilities, Codec, ContainerDecoder, EncodedMessage, ddl_op, message_key, untyped
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..shared.avro import (SCHEMA_DIR, avro_dumps, avro_loads, check_ints, comparable, from_jsonable, same_layout,
                           short_name, to_jsonable)
from ..shared.time_text import (EPOCH_RE, date_text, epoch_from_zoned, epoch_text, parse_date, parse_datetime,
                               parse_epoch, parse_time, time_text, zoned_from_epoch)
from ..shared.value_text import (INT32, INT64, b64, decimal_shape, double_text, fits, float32_text, float_holds,
                                is_float32, parse_float, parse_int, to_float32, unb64)
from ..shared.required import STRING, Required, need, same_needs
from ..types import decimal_precision_scale, family
from ..shared.columns import column, shared_columns


def enum_defines(type_name: Optional[str]) -> Optional[list[str]]:
    """``enum('a','b')`` -> ["a", "b"] (SQL quoting with doubled quotes)."""
    if not type_name:
        return None
    m = re.match(r"\s*(enum|set)\s*\((.*)\)\s*\Z", type_name, re.I | re.S)
    if not m:
        return None
    return [s.replace("''", "'") for s in re.findall(r"'((?:[^']|'')*)'", m.group(2))]


# ==============================================================================================================
# OMS AvroRecord

NS = "com.xxx.oms.xxx.xxx.avro"  # as published (the vendor redacted its package name)
_RAW_SCHEMA = json.loads((SCHEMA_DIR / "oms.AvroRecord.avsc").read_text())
SCHEMA = fastavro.parse_schema(copy.deepcopy(_RAW_SCHEMA))
# The image arrays on their own: what beforeImageBytes/afterImageBytes carry when a record is sharded.
IMAGE_SCHEMA = fastavro.parse_schema(
    copy.deepcopy(next(f for f in _RAW_SCHEMA["fields"] if f["name"] == "beforeImages")["type"][1]))

DATA_TYPES = ("NULL", "INTEGER", "LONG", "FLOAT", "DOUBLE", "DECIMAL", "STRING", "BINARY", "TIMESTAMP", "DATE",
              "TIME", "DATETIME", "BOOLEAN", "BIT", "GEOMETRY", "RAW", "ENUM", "SET", "ARRAY", "VECTOR",
              "SPARSE_VECTOR", "ROARINGBITMAP", "MAP")
_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "DDL": Op.DDL, "BEGIN": Op.BEGIN,
        "COMMIT": Op.COMMIT, "HEARTBEAT": Op.HEARTBEAT}
_OP_OUT = {Op.SNAPSHOT: "INSERT", Op.TRUNCATE: "DDL", **{v: k for k, v in _OPS.items()}}
_GEOMETRY_NAMES = {"GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                   "GEOMETRYCOLLECTION", "SDO_GEOMETRY"}
_SMALL_INTS = {"INTEGER", "INT", "TINYINT", "SMALLINT", "MEDIUMINT", "YEAR", "INT2", "INT4", "SMALLSERIAL",
               "SERIAL", "BOOL", "BOOLEAN"}
_FAMILY_NUMBER = {"int": -5, "decimal": 3, "float": 8, "bit": -7, "bool": 16, "binary": -3, "date": 91,
                  "time": 92, "datetime": 93, "timestamp": 93, "zoned": 2014}
_PARAMETRISED = frozenset({"DECIMAL", "BIT", "TIMESTAMP"})
_HEADER_KEYS = ("version", "txind", "position", "source", "tags", "ukIndexes")


def _rec(short: str, body: dict) -> tuple[str, dict]:
    return (f"{NS}.{short}", body)


# Float types of a double's width whose first word reads FLOAT: Connect's float64, PostgreSQL's float8, MySQL's
# FLOAT(p) with p of 25-53 (a 32-bit float would round their values)
_DOUBLE_WIDE = re.compile(r"\s*float(64|8\b|\s*\(\s*(2[5-9]|[3-5]\d)\s*\))", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _base_word(type_name: Optional[str]) -> str:
    m = re.match(r"\s*([A-Za-z_]+)", type_name or "")
    return m.group(1).upper() if m else ""


# Cached: asked for every value an event carries, of a table's few declared types.
@functools.lru_cache(maxsize=4096)
def data_type(type_name: Optional[str], jdbc_type: Optional[int] = None) -> str:
    """The OMS DataType for a declared column type: this codec's own names map to themselves, other vendors'
    types go by family (``types.family``) so text is encoded the way it is meant."""
    base = _base_word(type_name)
    fam = family(type_name, jdbc_type)
    if base in _GEOMETRY_NAMES:
        return "GEOMETRY"
    if fam == "int":
        unsigned = "UNSIGNED" in (type_name or "").upper()
        return "INTEGER" if base in _SMALL_INTS and not (unsigned and base in ("INT", "INTEGER")) else "LONG"
    simple = {"decimal": "DECIMAL", "bit": "BIT", "bool": "BOOLEAN", "date": "DATE", "time": "TIME",
              "datetime": "DATETIME", "timestamp": "TIMESTAMP", "zoned": "TIMESTAMP", "json": "STRING"}
    if fam in simple:
        return simple[fam]
    if fam == "float":
        return "FLOAT" if base in ("FLOAT", "BINARY_FLOAT", "FLOAT4") and not _DOUBLE_WIDE.match(type_name or "") \
            else "DOUBLE"
    if fam == "binary":
        return base if base in ("RAW", "ROARINGBITMAP") else "BINARY"
    return base if base in DATA_TYPES else "STRING"


# --- values ----------------------------------------------------------------------------------------------------

def value_text(type_info: str, value: Any) -> Optional[str]:
    """A ColumnValue.value -> canonical text. Raises ValueError naming what is wrong."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float32_text(value) if type_info == "FLOAT" and is_float32(value) else double_text(value)
    if isinstance(value, (bytes, bytearray)):
        return b64(bytes(value))
    if isinstance(value, str):
        return value
    name, rec = value
    kind = short_name(name)
    if kind in ("StringObject", "DecimalObject", "EnumSetValue"):
        return rec["value"]
    if kind == "DateObject":
        return date_text(rec["year"], rec["month"], rec["day"])
    if kind == "TimeObject":
        return time_text(rec["hours"], rec["minutes"], rec["seconds"], rec["nanos"], rec["negative"])
    if kind == "DateTimeObject":
        return (f"{date_text(rec['year'], rec['month'], rec['day'])} "
                f"{time_text(rec['hours'], rec['minutes'], rec['seconds'], rec['nanos'])}")
    if kind == "TimestampObject":
        if rec["timezone"] is None:
            return epoch_text(rec["seconds"], rec["nanos"])
        return zoned_from_epoch(rec["seconds"], rec["nanos"], rec["timezone"])
    if kind == "BitObject":
        bits = rec["value"]
        if not re.fullmatch(r"[01]+", bits):
            raise ValueError(f"BitObject.value is not a string of 0/1 digits: {bits!r}")
        return str(int(bits, 2))
    if kind == "GeometryValue":
        return b64(rec["wkb"])
    raise ValueError(f"unexpected value type {name}")


def column_type_name(type_info: str, value: Any) -> str:
    """``Column.type_name`` from a ColumnValue: the DataType, decorated where the value carries more."""
    if isinstance(value, tuple):
        kind, rec = short_name(value[0]), value[1]
        if type_info == "DECIMAL" and kind == "DecimalObject":
            return f"DECIMAL({rec['precision']},{rec['scale']})"
        if type_info == "BIT" and kind == "BitObject":
            return f"BIT({rec['bit_length']})"
        if type_info == "TIMESTAMP" and kind == "TimestampObject" and rec["timezone"] is not None:
            return "TIMESTAMP WITH TIME ZONE"
    return type_info


def column_spec(value: Any) -> dict:
    """Per-column attributes the canonical text does not hold (charset, ENUM members, SRID)."""
    if not isinstance(value, tuple):
        return {}
    kind, rec = short_name(value[0]), value[1]
    if kind == "StringObject":
        return {"charset": rec["charsetName"]}
    if kind == "EnumSetValue" and rec["defines"] is not None:
        return {"defines": rec["defines"]}
    if kind == "GeometryValue":
        return {"srid": rec["srid"]}
    return {}


def column_value(column: Column, spec: Mapping[str, Any], text: Optional[str]) -> dict:
    """Canonical text -> ColumnValue (the derivation the decoder compares against)."""
    dt = data_type(column.type_name, column.jdbc_type)
    if text is None:
        return {"type_info": dt, "value": None}
    try:
        value = _typed_value(dt, column, spec, text)
    except ValueError:
        # The typed form cannot hold this text (WKT in a binary column, a value of another type): the string
        # branch keeps it exactly; only the value's type is lost. See NOTES.md.
        value = ("string", text)
    return {"type_info": "STRING" if dt == "NULL" else dt, "value": value}


def _typed_value(dt: str, column: Column, spec: Mapping[str, Any], text: str) -> Any:
    if dt in ("INTEGER", "LONG"):
        n = parse_int(text)
        if dt == "INTEGER" and fits(n, INT32):
            return ("int", n)
        return ("long", n) if fits(n, INT64) else ("string", text)  # unsigned 64-bit: see NOTES.md
    if dt in ("FLOAT", "DOUBLE"):
        value = parse_float(text)
        if not float_holds(text, float32_text(to_float32(value)) if dt == "FLOAT" else double_text(value)):
            raise ValueError(f"{text!r} is not a {dt.lower()}'s value")  # the string branch keeps it
        return (dt.lower(), value)
    if dt == "DECIMAL":
        ps = decimal_precision_scale(column.type_name) or decimal_shape(text)
        if not (fits(ps[0], INT32) and fits(ps[1], INT32)):  # DecimalObject's are Avro ints: the string branch
            raise ValueError(f"decimal precision/scale {ps} beyond 32 bits")
        return _rec("DecimalObject", {"precision": ps[0], "scale": ps[1], "value": text})
    if dt in ("BINARY", "RAW", "ROARINGBITMAP"):
        return ("bytes", unb64(text))
    if dt == "TIMESTAMP":
        seconds, nanos, zone_name = (*parse_epoch(text), None) if EPOCH_RE.match(text) else epoch_from_zoned(text)
        if not fits(seconds, INT64):  # TimestampObject.seconds is a long: the string branch keeps such a text
            raise ValueError(f"{text!r}: epoch seconds beyond 64 bits")
        return _rec("TimestampObject", {"seconds": seconds, "nanos": nanos, "timezone": zone_name})
    if dt == "DATE":
        y, m, d = parse_date(text)
        return _rec("DateObject", {"year": y, "month": m, "day": d})
    if dt == "TIME":
        neg, h, mi, s, ns = parse_time(text)
        return _rec("TimeObject", {"negative": neg, "hours": h, "minutes": mi, "seconds": s, "nanos": ns})
    if dt == "DATETIME":
        y, mo, d, h, mi, s, ns = parse_datetime(text)
        return _rec("DateTimeObject", {"year": y, "month": mo, "day": d, "hours": h, "minutes": mi,
                                       "seconds": s, "nanos": ns})
    if dt == "BOOLEAN":
        return ("boolean", _parse_bool(text))
    if dt == "BIT":
        n = parse_int(text)
        ps = decimal_precision_scale(column.type_name)
        length = ps[0] if ps else max(1, n.bit_length())
        return _rec("BitObject", {"bit_length": length, "value": format(n, "b").zfill(length)})
    if dt in ("ENUM", "SET"):
        defines = spec.get("defines", enum_defines(column.type_name))
        return _rec("EnumSetValue", {"value": text, "defines": defines})
    if dt == "GEOMETRY":
        try:
            wkb = unb64(text)
        except ValueError:
            return ("string", text)  # WKT from a text format: kept as text
        return _rec("GeometryValue", {"srid": spec.get("srid", 0), "wkb": wkb})
    if "charset" in spec:
        return _rec("StringObject", {"charsetName": spec["charset"], "value": text})
    return ("string", text)


def _parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "t"):
        return True
    if t in ("false", "0", "f"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


# --- decode-time helpers --------------------------------------------------------------------------------------

# Leaf types whose == is exactly what ``comparable`` compares: same type, equal value. (A float is one too, except
# NaN, which == does not match and so takes the long way.)
_SAME_TYPE_LEAVES = frozenset({str, int, bool, bytes, float, type(None)})
# Branches whose tagged value reads back as the bare value; "float" is not one: it rounds to 32 bits.
_AVRO_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_UNROUNDED_BRANCHES = frozenset({"boolean", "int", "long", "double", "bytes", "string"})


def _derived_verbatim(column: Column, spec: Mapping[str, Any], cv: dict) -> bool:
    """Whether ``column_value`` is sure to give ``cv`` back from its text, known without deriving it: a plain
    string of a STRING column without a charset (``("string", text)``), an Avro int or long of an INTEGER or
    LONG column (``("int"|"long", n)``, which reads back as the same number). These are most values of a
    record; deriving and comparing each was most of ``_event``. False means "derive and compare"."""
    value, type_info = cv["value"], cv["type_info"]
    kind = type(value)
    if kind is str:
        return type_info == "STRING" and "charset" not in spec and data_type(column.type_name, column.jdbc_type) \
            == "STRING"
    if kind is int:
        return type_info in ("INTEGER", "LONG") and fits(value, INT64) and \
            data_type(column.type_name, column.jdbc_type) == type_info
    return False


def _reads_back_same(derived: dict, cv: dict) -> bool:
    """``comparable(derived) == comparable(cv)``: would the encoder's derivation be read back as the ColumnValue
    that was read? Answered directly when both are the same value in the same shape (a primitive branch holding
    a leaf of the read value's exact type, or the same named record with such leaves): that is nearly every
    value, and ``comparable`` rebuilding both sides was the largest cost of a decode (~27%). Everything else
    (a float branch, NaN, ENUM defines lists, any difference) is answered by ``comparable`` itself."""
    return _plainly_same(derived, cv) or comparable(derived) == comparable(cv)


def _plainly_same(derived: dict, cv: dict) -> bool:
    """A sufficient condition for ``_reads_back_same``; False means "not shown", not "different"."""
    if len(cv) != 2 or derived["type_info"] != cv["type_info"]:
        return False
    value, read = derived["value"], cv["value"]
    if value is None:
        return read is None
    if type(value) is not tuple:
        return False
    branch, inner = value
    if branch in _UNROUNDED_BRANCHES:
        return type(inner) is type(read) and type(read) in _SAME_TYPE_LEAVES and inner == read
    if branch in _AVRO_PRIMITIVES or type(read) is not tuple or read[0] != branch:
        return False
    fields, read_fields = inner, read[1]
    if type(fields) is not dict or type(read_fields) is not dict or len(fields) != len(read_fields):
        return False
    for key, field in fields.items():
        if key not in read_fields:
            return False
        other = read_fields[key]
        if type(field) is not type(other) or type(field) not in _SAME_TYPE_LEAVES or field != other:
            return False
    return True


# --- the codec -------------------------------------------------------------------------------------------------

def _operation(datum: dict) -> Optional[str]:
    op_name = datum.get("operation")
    return op_name if op_name in ("INSERT", "UPDATE", "DELETE", "DDL") else None


# The Avro schema makes every field present with a type of its union; what it cannot say: a row record names its
# schema and table, a DDL record carries its statement (sql). Images may be in shards, so they are not required.
_NAMED = (need("tableName", STRING, nonempty=True), need("schemaName", STRING, nonempty=True))
REQUIRED = Required(_operation, {**same_needs(("INSERT", "UPDATE", "DELETE"), *_NAMED),
                                 "DDL": (need("sql", STRING),)}, table="tableName")


class OmsAvroCodec(Codec):
    name = "oms-avro"
    required = REQUIRED
    vendor = "OceanBase OMS"
    description = "OceanBase data subscription AvroRecord (typed ColumnValue unions, sharded large records)"
    capabilities = Capabilities(
        losses=untyped("int"),
        binary=True,
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.BEGIN, Op.COMMIT, Op.HEARTBEAT}),
        transactions=True,
        notes="Images are positional to fields: every column or none (no 'not present'); an UPDATE after "
              "image missing columns is completed from the before image. Text a typed branch cannot hold is "
              "written in the string branch (value exact, type lost). No snapshot marker "
              "(SNAPSHOT encodes as INSERT), TRUNCATE encodes as DDL. timestamp is whole seconds. Column types "
              "are the Avro DataTypes (declared source types are not carried). Large records are split into "
              "shards (total/index), reassembled by assemble().",
    )

    def __init__(self, max_message_size: Optional[int] = None):
        # When set, encode() splits a record whose message would be larger into shards.
        self.max_message_size = max_message_size

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        return self._decode_datum(self._read(raw, position), position)

    def container_decoder(self, writer_schema: Any) -> Optional[ContainerDecoder]:
        if not same_layout(writer_schema, SCHEMA):
            return None
        return ContainerDecoder(SCHEMA, lambda datum, position, raw=None: self._decode_datum(
            self._checked(datum, position, raw), position))

    def _checked(self, datum: dict, position: Position, raw: Optional[bytes] = None) -> dict:
        try:
            return check_ints(SCHEMA, datum, raw)
        except ValueError as exc:  # the same words ``_read`` gives the same record as bytes
            raise self.error("AvroRecord", position, f"not a readable AvroRecord: {type(exc).__name__}: {exc}")

    def _decode_datum(self, datum: dict, position: Position) -> list[Event]:
        self.required.check(self.name, datum, position)  # every shard repeats the names: checked on each
        total, index = datum["total"], datum["index"]
        if datum["beforeImageBytes"] or datum["afterImageBytes"] or total > 1:
            fragment = self._fragment(datum, position)
            return [fragment] if total > 1 else [self.assemble([fragment])]
        event = self._event(datum, position)
        if (total, index) != (-1, -1):
            event = event.with_(vendor={**event.vendor, "total_index": [total, index]})
        return [event]

    def _read(self, raw: bytes, position: Position) -> dict:
        try:
            datum, used = avro_loads(SCHEMA, bytes(raw))
        except Exception as exc:  # fastavro raises EOFError, UnicodeDecodeError, IndexError...
            raise self.error("AvroRecord", position, f"not a readable AvroRecord: {type(exc).__name__}: {exc}")
        if used != len(raw):
            raise self.error("AvroRecord", position, f"{len(raw) - used} bytes left after the record")
        return datum

    def _event(self, datum: dict, position: Position) -> Event:
        op_name = datum["operation"]
        if op_name is None:
            raise self.error("operation", position, "operation is null")
        op = _OPS[op_name]
        names, numbers = self._columns(datum, position)
        images: dict[str, Optional[list]] = {"before": datum["beforeImages"], "after": datum["afterImages"]}
        for side, image in images.items():
            if image is not None and len(image) not in (0, len(names)):
                raise self.error(f"{side}Images", position,
                                 f"{len(image)} values for {len(names)} fields")
        columns, specs = self._column_types(names, images)
        vendor: dict[str, Any] = {k: datum[k] for k in _HEADER_KEYS if datum[k] is not None}
        vendor["fields"] = numbers
        if datum["pkIndexes"] is not None:
            vendor["pkIndexes"] = datum["pkIndexes"]
        if datum["sql"] is not None and op is not Op.DDL:
            vendor["sql"] = datum["sql"]
        if specs:
            vendor["specs"] = specs
        converted: dict[str, Optional[Image]] = {}
        raw_values: dict[str, dict] = {}
        for side, image in images.items():
            converted[side], kept = self._image(side, image, columns, specs, position)
            if kept:
                raw_values[side] = kept
        if raw_values:
            vendor["raw"] = raw_values
        ts = datum["timestamp"]
        if op is Op.DDL:
            op = ddl_op(datum["sql"])  # TRUNCATE travels as a DDL record
        return Event(
            format=self.name, op=op, database=datum["schemaName"], table=datum["tableName"],
            position=position, before=converted["before"], after=converted["after"], columns=columns,
            primary_key=self._primary_key(datum, names, position),
            event_time_ms=None if ts is None else ts * 1000, sequence=(Decimal(datum["id"]),),
            transaction_id=datum["xid"], ddl=datum["sql"] if op in (Op.DDL, Op.TRUNCATE) else None, vendor=vendor)

    def _columns(self, datum: dict, position: Position) -> tuple[list[str], Optional[list[int]]]:
        fields = datum["fields"]
        if fields is None:
            if datum["beforeImages"] or datum["afterImages"]:
                raise self.error("fields", position, "row images without fields")
            return [], None
        names = [f["name"] for f in fields]
        if len(set(names)) != len(names):
            raise self.error("fields", position, f"duplicate column names in {names}")
        return names, [f["dataTypeNumber"] for f in fields]

    def _column_types(self, names: list[str], images: Mapping[str, Optional[list]]
                      ) -> tuple[tuple[Column, ...], dict]:
        """type_name from the first value whose type_info is not NULL (after image first), spec likewise."""
        out, specs = [], {}
        sources = [img for img in (images["after"], images["before"]) if img]
        for i, name in enumerate(names):
            # typed: the first non-NULL type_info with a value, else the first non-NULL type_info at all;
            # present: the first value at all (it carries the spec). One pass over the (at most two) images.
            typed = untyped_null = present = None
            for img in sources:
                v = img[i]
                if v["value"] is not None:
                    if present is None:
                        present = v
                    if typed is None and v["type_info"] != "NULL":
                        typed = v
                elif untyped_null is None and v["type_info"] != "NULL":
                    untyped_null = v
            if typed is None:
                typed = untyped_null
            type_name = column_type_name(typed["type_info"], typed["value"]) if typed else "NULL"
            if typed is not None and typed["value"] is None and typed["type_info"] in _PARAMETRISED:
                # Only a value carries DECIMAL's precision/scale, BIT's length, TIMESTAMP's zone: a NULL says
                # nothing about them, so it declares no type rather than a weaker one that would override the
                # table's declared type downstream (re-encode keeps the ColumnValue via vendor["raw"]).
                type_name = None
            spec = column_spec(present["value"]) if present else {}
            if spec:
                specs[name] = spec
            out.append(column(name, type_name))  # shared per (name, type): Columns are frozen
        return shared_columns(out), specs

    def _image(self, side: str, image: Optional[list], columns: Sequence[Column], specs: Mapping[str, dict],
               position: Position) -> tuple[Optional[Image], dict]:
        """ColumnValues -> canonical image, plus the raw values the encoder would not derive identically."""
        if image is None:
            return None, {}
        out: Image = {}
        kept: dict[str, Any] = {}
        for i, cv in enumerate(image):
            col = columns[i]
            try:
                text = value_text(cv["type_info"], cv["value"])
            except (ValueError, KeyError, OverflowError) as exc:
                raise self.error(f"{side}Images[{i}].value", position, f"column {col.name}: {exc}")
            out[col.name] = text
            spec = specs.get(col.name, {})
            if _derived_verbatim(col, spec, cv):
                continue
            try:
                derived = column_value(col, spec, text)
            except ValueError:
                derived = None
            if derived is None or not _reads_back_same(derived, cv):
                kept[col.name] = to_jsonable(cv)
        return out, kept

    def _primary_key(self, datum: dict, names: list[str], position: Position) -> tuple[str, ...]:
        """pkIndexes; a table with only unique keys is keyed by its first unique key (see NOTES.md)."""
        pk, field = datum["pkIndexes"], "pkIndexes"
        if not pk and datum["ukIndexes"]:
            pk, field = datum["ukIndexes"][0], "ukIndexes[0]"
        out = []
        for j, i in enumerate(pk or ()):
            if not 0 <= i < len(names):
                raise self.error(f"{field}[{j}]", position, f"index {i} outside the {len(names)} fields")
            out.append(names[i])
        return tuple(out)

    # ---------------------------------------------------------------------------------------------- shards

    def _fragment(self, datum: dict, position: Position) -> Event:
        total, index = datum["total"], datum["index"]
        if datum["beforeImages"] is not None or datum["afterImages"] is not None:
            raise self.error("beforeImageBytes", position, "a shard must not also carry beforeImages/afterImages")
        if total > 1 and not 0 <= index <= total:
            raise self.error("index", position, f"shard index {index} outside total {total}")
        header = {k: v for k, v in datum.items() if k not in ("beforeImageBytes", "afterImageBytes")}
        event = self._event(header, position)
        shard = {"index": index, "total": total, "before": b64(datum["beforeImageBytes"]),
                 "after": b64(datum["afterImageBytes"]), "header": to_jsonable(header)}
        return event.with_(position=replace(position, index=max(index, 0)), vendor={"shard": shard},
                           fragment_key=str(datum["id"]), fragment_index=index, fragment_total=max(total, 1))

    def assemble(self, fragments: Sequence[Event]) -> Event:
        if not fragments:
            raise self.error("fragment_key", None, "no shards to assemble")
        first = min(fragments, key=lambda f: f.fragment_index)
        where = first.position
        keys = {f.fragment_key for f in fragments}
        if len(keys) != 1:
            raise self.error("id", where, f"shards of different records given together: {sorted(map(str, keys))}")
        if any("shard" not in f.vendor for f in fragments):
            raise self.error("total", where, "a fragment without shard data (not decoded by oms-avro)")
        shards: dict[int, dict] = {}
        for f in fragments:
            s = f.vendor["shard"]
            if s["index"] in shards and shards[s["index"]] != s:
                raise self.error("index", f.position, f"record id {first.fragment_key}: two different shards "
                                                      f"with index {s['index']}")
            shards[s["index"]] = s
        totals = {s["total"] for s in shards.values()}
        if len(totals) != 1:
            raise self.error("total", where, f"record id {first.fragment_key}: shards disagree on total {totals}")
        total = max(totals.pop(), 1)
        base = 1 if set(shards) == set(range(1, total + 1)) and total > 1 else 0
        if total == 1 and set(shards) in ({-1}, {0}, {1}):
            base = next(iter(shards))
        expected = set(range(base, base + total))
        if set(shards) != expected:
            missing = sorted(expected - set(shards))
            extra = sorted(set(shards) - expected)
            reason = f"record id {first.fragment_key}: shards {missing} of {total} missing" if missing else \
                f"record id {first.fragment_key}: unexpected shard indexes {extra} for total {total}"
            raise self.error("index", where, reason)
        ordered = [shards[i] for i in sorted(shards)]
        header = from_jsonable(ordered[0]["header"])
        before = b"".join(base64.b64decode(s["before"]) for s in ordered)
        after = b"".join(base64.b64decode(s["after"]) for s in ordered)
        datum = dict(header, beforeImages=self._image_bytes("beforeImageBytes", before, where),
                     afterImages=self._image_bytes("afterImageBytes", after, where),
                     total=-1, index=-1, beforeImageBytes=b"", afterImageBytes=b"")
        event = self._event(datum, replace(where, index=0))
        layout = {"base": base, "total": header["total"],
                  "sizes": [[len(base64.b64decode(s["before"])), len(base64.b64decode(s["after"]))] for s in ordered]}
        return event.with_(vendor={**event.vendor, "shards": layout})

    def _image_bytes(self, field: str, data: bytes, where: Position) -> Optional[list]:
        if not data:
            return None
        try:
            image, used = avro_loads(IMAGE_SCHEMA, data)
        except Exception as exc:
            raise self.error(field, where, f"reassembled bytes are not an image array: {type(exc).__name__}: {exc}")
        if used != len(data):
            raise self.error(field, where, f"{len(data) - used} bytes left after the reassembled image array")
        return image

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out: list[EncodedMessage] = []
        for event in events:
            datum = self.written(self.datum(event), event)
            out.extend(self._messages(event, datum))
        return out

    def datum(self, event: Event) -> dict:
        """The AvroRecord for one event (unsharded)."""
        if event.op not in _OP_OUT:
            raise EncodeError(self.name, "operation", f"cannot encode {event.op.value}")
        vendor = event.vendor if event.format == self.name else {}
        op = _OP_OUT[event.op]
        columns = self._encode_columns(event)
        names = [c.name for c in columns]
        numbers = vendor.get("fields")
        if numbers is None or len(numbers) != len(columns):
            numbers = [c.jdbc_type if c.jdbc_type is not None else _FAMILY_NUMBER.get(family(c.type_name), 12)
                       for c in columns]
        fields = None if not columns and vendor.get("fields") is None else \
            [{"name": n, "dataTypeNumber": num} for n, num in zip(names, numbers)]
        specs = vendor.get("specs", {})
        raw = vendor.get("raw", {})
        datum: dict[str, Any] = {
            "id": self._id(event),
            "version": vendor.get("version", 1),
            "operation": op,
            "xid": event.transaction_id,
            "txind": vendor.get("txind"),
            "position": vendor.get("position"),
            "timestamp": None if event.event_time_ms is None else event.event_time_ms // 1000,
            "source": vendor.get("source"),
            "schemaName": ".".join(p for p in (event.database, event.schema) if p) or None,
            "tableName": event.table,
            "fields": fields,
            "pkIndexes": self._pk_indexes(event, names, vendor),
            "ukIndexes": vendor.get("ukIndexes"),
            "beforeImages": self._encode_image("before", event.before, columns, specs, raw.get("before", {})),
            "afterImages": self._encode_image("after", self._full_after(event, columns), columns, specs,
                                              raw.get("after", {})),
            "sql": self._sql(event, vendor),
            "tags": vendor.get("tags"),
            "total": -1, "index": -1, "beforeImageBytes": b"", "afterImageBytes": b"",
        }
        if "total_index" in vendor:
            datum["total"], datum["index"] = vendor["total_index"]
        return datum

    def _id(self, event: Event) -> int:
        """The record id is the sequence this codec decodes; foreign multi-part sequences fall back to the
        archive offset."""
        if len(event.sequence) == 1 and event.sequence[0] == event.sequence[0].to_integral_value():
            n = int(event.sequence[0])
            if fits(n, INT64):
                return n
        return event.position.offset

    def _encode_columns(self, event: Event) -> tuple[Column, ...]:
        # Image keys the declared columns do not list (e.g. Mongo's _id) are columns too.
        known = {c.name for c in event.columns}
        extra = [n for n in dict.fromkeys([*(event.after or {}), *(event.before or {})]) if n not in known]
        return tuple(event.columns) + tuple(Column(n) for n in extra)

    def _pk_indexes(self, event: Event, names: list[str], vendor: Mapping) -> Optional[list[int]]:
        if "pkIndexes" in vendor or "ukIndexes" in vendor:
            pk = vendor.get("pkIndexes")
            key = pk if pk else (vendor.get("ukIndexes") or [[]])[0]
            if tuple(names[i] for i in key if i < len(names)) == event.primary_key:
                return pk
        if not event.primary_key:
            return vendor.get("pkIndexes") if "pkIndexes" in vendor else None
        missing = [k for k in event.primary_key if k not in names]
        if missing:
            raise EncodeError(self.name, "pkIndexes", f"key columns {missing} are not among the fields")
        return [names.index(k) for k in event.primary_key]

    def _full_after(self, event: Event, columns: Sequence[Column]) -> Optional[Image]:
        """An UPDATE after image that lacks columns (SharePlex, Mongo $set, DTS EmptyObject: 'not changed /
        not logged') takes them from the before image: OMS images are positional and always complete."""
        after, before = event.after, event.before
        if event.op is not Op.UPDATE or after is None or not before or not after:
            return after
        missing = {c.name: before[c.name] for c in columns if c.name not in after and c.name in before}
        return {**after, **missing} if missing else after

    def _sql(self, event: Event, vendor: Mapping) -> Optional[str]:
        if event.op is Op.DDL:
            return event.ddl
        if event.op is Op.TRUNCATE:
            return event.ddl or f"TRUNCATE TABLE {event.qualified_table}"
        return vendor.get("sql")

    def _encode_image(self, side: str, image: Optional[Image], columns: Sequence[Column],
                      specs: Mapping[str, dict], raw: Mapping[str, Any]) -> Optional[list]:
        if image is None:
            return None
        if not image:
            return []
        absent = [c.name for c in columns if c.name not in image]
        if absent:
            raise EncodeError(self.name, f"{side}Images", f"columns {absent} are not present in the image; OMS "
                                                          "Avro images are positional and hold every column")
        out = []
        for col in columns:
            text = image[col.name]
            kept = raw.get(col.name)
            if kept is not None:
                original = from_jsonable(kept)
                try:
                    same = value_text(original["type_info"], original["value"]) == text
                except (ValueError, KeyError):
                    same = False
                if same:
                    out.append(original)
                    continue
            try:
                out.append(column_value(col, specs.get(col.name, {}), text))
            except ValueError as exc:
                raise EncodeError(self.name, f"{side}Images.{col.name}", str(exc))
        return out

    def _messages(self, event: Event, datum: dict) -> list[EncodedMessage]:
        whole = avro_dumps(SCHEMA, datum)
        layout = event.vendor.get("shards") if event.format == self.name else None
        limit = self.max_message_size
        if limit is None and layout is None or limit is not None and len(whole) <= limit:
            return [self._message(event, datum, whole, 1)]
        before = b"" if datum["beforeImages"] is None else avro_dumps(IMAGE_SCHEMA, datum["beforeImages"])
        after = b"" if datum["afterImages"] is None else avro_dumps(IMAGE_SCHEMA, datum["afterImages"])
        header = dict(datum, beforeImages=None, afterImages=None)
        sizes = layout["sizes"] if limit is None else None
        base = layout["base"] if limit is None else 0
        if sizes is None or [sum(s[0] for s in sizes), sum(s[1] for s in sizes)] != [len(before), len(after)]:
            if limit is None:  # the images changed since decoding: the old layout does not apply
                return [self._message(event, datum, whole, 1)]
            sizes = self._split_sizes(header, len(before), len(after), limit)
            layout = None
        total = layout["total"] if layout else len(sizes)
        out, b_at, a_at = [], 0, 0
        for i, (nb, na) in enumerate(sizes):
            shard = dict(header, total=total, index=base + i,
                         beforeImageBytes=before[b_at:b_at + nb], afterImageBytes=after[a_at:a_at + na])
            b_at, a_at = b_at + nb, a_at + na
            out.append(self._message(event, shard, avro_dumps(SCHEMA, shard), 1 if i == 0 else 0))
        return out

    def _split_sizes(self, header: dict, n_before: int, n_after: int, limit: int) -> list[list[int]]:
        """Cut the before+after byte stream into pieces so that every shard message fits ``limit``."""
        empty = avro_dumps(SCHEMA, dict(header, total=-1, index=-1, beforeImageBytes=b"", afterImageBytes=b""))
        budget = limit - len(empty) - 2 * 5 - 2 * 4  # length prefixes of the two byte fields; total/index
        if budget < 1:
            raise EncodeError(self.name, "max_message_size",
                              f"{limit} bytes is too small for the record header ({len(empty)} bytes)")
        stream = n_before + n_after
        sizes, at = [], 0
        while at < stream or not sizes:
            end = min(at + budget, stream)
            nb = max(0, min(end, n_before) - at)
            sizes.append([nb, (end - at) - nb])
            at = end
        return sizes

    def _message(self, event: Event, datum: dict, value: bytes, count: int) -> EncodedMessage:
        return EncodedMessage(value=value, key=message_key(event), table=event.qualified_table,
                              op=datum["operation"], events=count)


CODEC = OmsAvroCodec()
