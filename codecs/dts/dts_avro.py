"""Aliyun DTS data subscription Avro (``com.alibaba.dts.formats.avro.Record``, schemas in ``schemas/``).

One Kafka message is one schemaless-Avro ``Record``. Facts the schema does not say (Aliyun's SDK and demo code,
see ``/work/shared/formats/README.md``) and how they are handled here:

- Some producers write 14 fields, without the trailing ``bornTimestamp``: the record is read with the 14-field
  schema first and, when bytes remain, again with the full one; ``vendor["born"]`` remembers which it was.
- ``Timestamp.millis`` and ``DateTime.millis`` hold MICROseconds; ``Timestamp.timestamp`` is epoch seconds.
- ``Integer.value`` / ``Decimal.value`` are strings (taken verbatim); ``Character`` is bytes plus a charset.
- ``EmptyObject.NONE`` = column not present in this image (the key is left out of the canonical image), Avro
  null = SQL NULL. ``EmptyObject.NULL`` also reads as SQL NULL (kept verbatim for re-encoding).
- Keys: ``tags["pk_uk_info"]`` JSON (``{"PRIMARY":["id"]}``); ``objectName`` is ``db.table`` or
  ``db.schema.table`` with literal dots inside a name part escaped as ``\\u002E``.
- ``afterImages`` may be a plain string: the DDL text. ``sequence = (id,)``; ``event_time_ms`` is
  ``sourceTimestamp`` (seconds) * 1000.

``Column.type_name`` is the kind of value DTS sent (``INTEGER``, ``DECIMAL(p,s)``, ``DOUBLE``, ``CHARACTER``,
``DATE``/``TIME``/``DATETIME``/``YEAR``, ``TIMESTAMP``, ``TIMESTAMP WITH TIME ZONE``, ``GEOMETRY``, the
``BinaryObject``/``TextObject`` type such as ``BLOB``/``JSON``/``BIT``) so ``types.family`` types it right;
``dataTypeNumber`` is kept in ``vendor``. Lossless re-encode works as in ``oms_avro``: values the encoder would
not derive identically from (type, spec, text) are kept verbatim in ``vendor["raw"]``.
"""

from __future__ import annotations

import codecs as pycodecs
import copy
import functools
import json
import re
from decimal import Decimal
from typing import Any, Mapping, Optional, Sequence

import fastavro
import fastavro.schema

from ..base import Capabilities, Codec, ContainerDecoder, EncodedMessage, ddl_op, message_key, untyped
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..shared.avro import (SCHEMA_DIR, avro_dumps, avro_loads, check_ints, comparable, from_jsonable, read_datum,
                           same_layout, short_name, to_jsonable)
from ..shared.avro_ints import INT32_MAX, INT32_MIN
from ..shared.time_text import (DATE_RE, DATETIME_RE, TIME_RE, date_text, epoch_text, parse_date, parse_datetime,
                               parse_epoch, parse_time, split_zoned, time_text)
from ..shared.value_text import (INT64, INT_RE, b64, decimal_shape, double_text, fits, float_holds, parse_float,
                                parse_int, unb64)
from ..shared.required import ARRAY, STRING, Required, need, same_needs
from ..types import decimal_precision_scale, family
from ..shared.memo import remember
from ..shared.columns import column

NS = "com.alibaba.dts.formats.avro"
_LOADED = fastavro.schema.load_schema(str(SCHEMA_DIR / f"{NS}.Record.avsc"))
_PLAIN = {k: v for k, v in _LOADED.items() if not k.startswith("__")}
RECORD15 = fastavro.parse_schema(copy.deepcopy(_PLAIN))
RECORD14 = fastavro.parse_schema(dict(copy.deepcopy(_PLAIN), fields=copy.deepcopy(_PLAIN["fields"][:-1])))

_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "DDL": Op.DDL, "BEGIN": Op.BEGIN,
        "COMMIT": Op.COMMIT, "HEARTBEAT": Op.HEARTBEAT, "INIT": Op.SNAPSHOT}
_OP_OUT = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.DDL: "DDL", Op.BEGIN: "BEGIN",
           Op.COMMIT: "COMMIT", Op.HEARTBEAT: "HEARTBEAT", Op.SNAPSHOT: "INIT", Op.TRUNCATE: "DDL"}
_ESCAPED_DOT = "\\u002E"
_OBJECT_TYPES = {"BINARY", "BOOL", "BLOB", "XML", "JSON", "TEXT", "BFILE", "RAW", "LONG_RAW", "ROWID", "UROWID",
                 "ENUM", "SET", "BYTEA", "GEOMETRY", "XTYPE", "UUID"}
_GEOMETRY_NAMES = {"GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                   "GEOMETRYCOLLECTION", "SDO_GEOMETRY"}
# MySQL column type codes (enum_field_types), used as dataTypeNumber for events from other formats.
_MYSQL_CODES = {"TINYINT": 1, "BOOL": 1, "BOOLEAN": 1, "SMALLINT": 2, "INT": 3, "INTEGER": 3, "FLOAT": 4,
                "DOUBLE": 5, "REAL": 5, "TIMESTAMP": 7, "BIGINT": 8, "MEDIUMINT": 9, "DATE": 10, "TIME": 11,
                "DATETIME": 12, "YEAR": 13, "BIT": 16, "JSON": 245, "DECIMAL": 246, "NUMERIC": 246, "ENUM": 247,
                "SET": 248, "TINYBLOB": 249, "MEDIUMBLOB": 250, "LONGBLOB": 251, "BLOB": 252, "TEXT": 252,
                "VARCHAR": 253, "VARBINARY": 253, "CHAR": 254, "BINARY": 254, "GEOMETRY": 255}
_FAMILY_CODES = {"int": 8, "decimal": 246, "float": 5, "bit": 16, "bool": 1, "binary": 252, "date": 10,
                 "time": 11, "datetime": 12, "timestamp": 7, "zoned": 7, "json": 245}
# MySQL / Oracle charset names -> Python codecs (MySQL's latin1 is Windows-1252).
_CHARSETS = {"utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8", "al32utf8": "utf-8", "latin1": "cp1252",
             "ascii": "ascii", "us7ascii": "ascii", "gbk": "gbk", "zhs16gbk": "gbk", "gb2312": "gb2312",
             "gb18030": "gb18030", "big5": "big5", "ujis": "euc_jp", "sjis": "shift_jis", "cp932": "cp932",
             "euckr": "euc_kr", "ucs2": "utf-16-be", "utf16": "utf-16-be", "al16utf16": "utf-16-be",
             "utf16le": "utf-16-le", "utf32": "utf-32-be", "we8iso8859p1": "latin-1"}


def _rec(short: str, body: Any) -> tuple[str, Any]:
    return (f"{NS}.{short}", body)


def writable(value: Any) -> Any:
    """fastavro's writer does not take tuple notation for an enum inside an array's union; the items union has
    no string branch, so the bare symbol is unambiguous."""
    if isinstance(value, tuple) and short_name(value[0]) == "EmptyObject":
        return value[1]
    return value


@functools.lru_cache(maxsize=1024)
def python_charset(name: str) -> str:
    """A MySQL/Oracle charset name -> the Python codec name (asked for every Character value: cached)."""
    key = name.strip().lower()
    target = _CHARSETS.get(key, key)
    try:
        return pycodecs.lookup(target).name
    except LookupError as exc:
        raise ValueError(f"unknown charset {name!r}") from exc


def split_object_name(name: str) -> list[str]:
    return [part.replace(_ESCAPED_DOT, ".") for part in name.split(".")]


def join_object_name(parts: Sequence[str]) -> str:
    return ".".join(p.replace(".", _ESCAPED_DOT) for p in parts)


# Cached: asked for every value of every foreign event encoded (``_kind_for``), of a table's few type names.
@functools.lru_cache(maxsize=4096)
def _base_word(type_name: Optional[str]) -> str:
    m = re.match(r"\s*([A-Za-z_]+)", type_name or "")
    return m.group(1).upper() if m else ""


# --- values ----------------------------------------------------------------------------------------------------

def _datetime_parts(rec: Mapping[str, Any]) -> tuple[str, str]:
    """(type name, text) of a DTS DateTime by which segments are set; millis holds microseconds."""
    has = {k for k in ("year", "month", "day", "hour", "minute", "second") if rec[k] is not None}
    micros = rec["millis"] or 0
    if not 0 <= micros < 10 ** 6:
        raise ValueError(f"DateTime.millis (microseconds) out of range: {micros}")
    date_keys, time_keys = {"year", "month", "day"}, {"hour", "minute", "second"}
    if has == date_keys | time_keys:
        return "DATETIME", (f"{date_text(rec['year'], rec['month'], rec['day'])} "
                            f"{time_text(rec['hour'], rec['minute'], rec['second'], micros * 1000)}")
    if has == date_keys:
        return "DATE", date_text(rec["year"], rec["month"], rec["day"])
    if has == time_keys:
        hour = rec["hour"]
        return "TIME", time_text(abs(hour), rec["minute"], rec["second"], micros * 1000, hour < 0)
    if has == {"year"}:
        return "YEAR", str(rec["year"])
    raise ValueError(f"DateTime with an unexpected set of fields {sorted(has)}")


def value_text(value: Any) -> tuple[Optional[str], bool]:
    """An image item -> (canonical text, present). EmptyObject.NONE is 'not present'."""
    if value is None:
        return None, True
    name, rec = value
    kind = short_name(name)
    if kind == "EmptyObject":
        return None, rec != "NONE"
    if kind == "Integer":
        if not INT_RE.match(rec["value"]):
            raise ValueError(f"Integer.value is not an integer: {rec['value']!r}")
        return rec["value"], True
    if kind == "Decimal":
        return rec["value"], True
    if kind == "Float":
        return double_text(rec["value"]), True
    if kind == "Character":
        return bytes(rec["value"]).decode(python_charset(rec["charset"])), True
    if kind == "Timestamp":
        if not 0 <= rec["millis"] < 10 ** 6:
            raise ValueError(f"Timestamp.millis (microseconds) out of range: {rec['millis']}")
        return epoch_text(rec["timestamp"], rec["millis"] * 1000), True
    if kind == "DateTime":
        return _datetime_parts(rec)[1], True
    if kind == "TimestampWithTimeZone":
        kind_name, text = _datetime_parts(rec["value"])
        if kind_name != "DATETIME":
            raise ValueError(f"TimestampWithTimeZone.value is a {kind_name}, not a date and time")
        return f"{text} {rec['timezone']}", True
    if kind in ("BinaryGeometry", "BinaryObject"):
        if kind == "BinaryObject" and rec["type"].upper() == "BIT":
            return str(int.from_bytes(rec["value"], "big")), True
        return b64(rec["value"]), True
    if kind in ("TextGeometry", "TextObject"):
        return rec["value"], True
    raise ValueError(f"unexpected value type {name}")


_SIMPLE_TYPE_NAMES = {"Integer": "INTEGER", "Float": "DOUBLE", "Character": "CHARACTER", "Timestamp": "TIMESTAMP",
                      "TimestampWithTimeZone": "TIMESTAMP WITH TIME ZONE", "BinaryGeometry": "GEOMETRY",
                      "TextGeometry": "GEOMETRY"}


def column_type_name(value: Any) -> Optional[str]:
    name, rec = value
    kind = short_name(name)
    simple = _SIMPLE_TYPE_NAMES.get(kind)
    if simple is not None:
        return simple
    if kind == "Decimal":
        return f"DECIMAL({rec['precision']},{rec['scale']})"
    if kind == "DateTime":
        return _datetime_parts(rec)[0]
    if kind == "BinaryObject":
        t = rec["type"].upper()
        return t if family(t) in ("binary", "bit") else "BINARY"
    if kind == "TextObject":
        return rec["type"].upper()
    return None


def column_spec(value: Any) -> dict:
    """What the encoder needs beyond type name and text to rebuild the same value: the record kind and its
    attributes (precision, charset, object type, whether millis was null)."""
    name, rec = value
    kind = short_name(name)
    spec: dict[str, Any] = {"kind": kind}
    if kind == "Integer":
        spec["precision"] = rec["precision"]
    elif kind == "Float":
        spec.update(precision=rec["precision"], scale=rec["scale"])
    elif kind == "Character":
        spec["charset"] = rec["charset"]
    elif kind in ("BinaryObject", "TextObject", "BinaryGeometry", "TextGeometry"):
        spec["type"] = rec["type"]
        if kind == "BinaryObject" and rec["type"].upper() == "BIT":
            spec["nbytes"] = len(rec["value"])
    elif kind in ("DateTime", "TimestampWithTimeZone"):
        inner = rec if kind == "DateTime" else rec["value"]
        if inner["millis"] is None:
            spec["millis_null"] = True
    return spec


def _kind_for(column: Column, text: str) -> dict:
    """The DTS value kind for a column of another format, by its declared type."""
    base = _base_word(column.type_name)
    fam = family(column.type_name, column.jdbc_type)
    if base in _GEOMETRY_NAMES:
        try:
            unb64(text)
            return {"kind": "BinaryGeometry", "type": base}
        except ValueError:
            return {"kind": "TextGeometry", "type": base}
    by_family = {"int": "Integer", "bool": "Integer", "decimal": "Decimal", "float": "Float", "date": "DateTime",
                 "time": "DateTime", "datetime": "DateTime", "timestamp": "Timestamp",
                 "zoned": "TimestampWithTimeZone"}
    if fam in by_family:
        return {"kind": by_family[fam]}
    if fam == "bit":
        return {"kind": "BinaryObject", "type": "BIT"}
    if fam == "binary":
        return {"kind": "BinaryObject", "type": base if base in _OBJECT_TYPES else
                ("BLOB" if base.endswith("BLOB") else "BINARY")}
    if fam == "json":
        return {"kind": "TextObject", "type": "JSON"}
    if base in ("ENUM", "SET", "XML", "UUID"):
        return {"kind": "TextObject", "type": base}
    return {"kind": "Character", "charset": "utf8mb4"}


def image_value(column: Column, spec: Mapping[str, Any], text: Optional[str]) -> Any:
    """Canonical text -> DTS image item (the derivation the decoder compares against). A text the typed form
    cannot hold (a 7-9 digit fraction of a second, WKT in a binary column) is written as a utf8mb4 Character so
    the value survives exactly; only its type is lost (see NOTES.md)."""
    if text is None:
        return None
    try:
        return _typed_image_value(column, spec, text)
    except ValueError:
        return _rec("Character", {"charset": "utf8mb4", "value": text.encode("utf-8")})


def _typed_image_value(column: Column, spec: Mapping[str, Any], text: str) -> Any:
    if "kind" not in spec:
        spec = _kind_for(column, text)
    kind = spec["kind"]
    if kind == "Integer":
        digits = _bool_as_int(text)
        n = parse_int(digits)
        return _rec("Integer", {"precision": spec.get("precision", len(str(abs(n)))), "value": digits})
    if kind == "Decimal":
        ps = _int32s(decimal_precision_scale(column.type_name) or decimal_shape(text))
        return _rec("Decimal", {"value": text, "precision": ps[0], "scale": ps[1]})
    if kind == "Float":
        ps = decimal_precision_scale(column.type_name) or (0, 0)
        precision, scale = _int32s((spec.get("precision", ps[0]), spec.get("scale", ps[1])))
        value = parse_float(text)
        if not float_holds(text, double_text(value)):
            raise ValueError(f"{text!r} is not a double's value")  # a Character keeps it
        return _rec("Float", {"value": value, "precision": precision, "scale": scale})
    if kind == "Character":
        charset = spec.get("charset", "utf8mb4")
        return _rec("Character", {"charset": charset, "value": text.encode(python_charset(charset))})
    if kind == "Timestamp":
        seconds, nanos = parse_epoch(text)
        if not fits(seconds, INT64):  # Timestamp.timestamp is a long: a Character keeps such a text
            raise ValueError(f"{text!r}: epoch seconds beyond 64 bits")
        return _rec("Timestamp", {"timestamp": seconds, "millis": _micros(nanos, text)})
    if kind == "DateTime":
        return _rec("DateTime", _datetime_record(column, spec, text))
    if kind == "TimestampWithTimeZone":
        local, zone_name = split_zoned(text)
        return _rec("TimestampWithTimeZone", {"value": _datetime_record(column, spec, local),
                                              "timezone": zone_name})
    if kind == "BinaryObject" and spec.get("type", "").upper() == "BIT":
        n = parse_int(text)
        bits = decimal_precision_scale(column.type_name)
        size = spec.get("nbytes") or ((bits[0] + 7) // 8 if bits else max(1, (n.bit_length() + 7) // 8))
        if n < 0 or n.bit_length() > 8 * size:  # more bits than the column's bytes: a Character keeps the digits
            raise ValueError(f"{text!r} does not fit {size} bytes of BIT")
        return _rec("BinaryObject", {"type": spec["type"], "value": n.to_bytes(size, "big")})
    if kind in ("BinaryObject", "BinaryGeometry"):
        return _rec(kind, {"type": spec.get("type", "BLOB"), "value": unb64(text)})
    if kind in ("TextObject", "TextGeometry"):
        return _rec(kind, {"type": spec.get("type", "TEXT"), "value": text})
    raise ValueError(f"cannot encode a {kind}")


def _int32s(numbers: tuple[int, int]) -> tuple[int, int]:
    """Precision and scale as the record's Avro ints hold them; ValueError (the value is then written as text) for
    a declared ``decimal(99999999999,0)``. ``avro_dumps`` names the image array's branch, so fastavro's union
    check, which used to catch such an int, no longer runs over the items."""
    for n in numbers:
        if not INT32_MIN <= n <= INT32_MAX:
            raise ValueError(f"precision or scale {n} does not fit an Avro int")
    return numbers


def _bool_as_int(text: str) -> str:
    """Booleans of other formats ("true") become DTS integers, as MySQL stores them."""
    return {"true": "1", "false": "0"}.get(text.lower(), text)


def _micros(nanos: int, text: str) -> int:
    if nanos % 1000:
        raise ValueError(f"DTS carries microseconds; {text!r} has a finer fraction")
    return nanos // 1000


def _datetime_record(column: Column, spec: Mapping[str, Any], text: str) -> dict:
    rec: dict[str, Any] = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "millis"))
    nanos = None
    if DATETIME_RE.match(text):
        y, mo, d, h, mi, s, nanos = parse_datetime(text)
        rec.update(year=y, month=mo, day=d, hour=h, minute=mi, second=s)
    elif DATE_RE.match(text):
        rec["year"], rec["month"], rec["day"] = parse_date(text)
    elif TIME_RE.match(text):
        neg, h, mi, s, nanos = parse_time(text)
        rec.update(hour=-h if neg else h, minute=mi, second=s)
    elif re.fullmatch(r"\d{1,4}", text):
        rec["year"] = int(text)
    else:
        raise ValueError(f"not a date, time or datetime: {text!r}")
    if nanos is not None and not (spec.get("millis_null") and nanos == 0):
        rec["millis"] = _micros(nanos, text)
    return rec


# --- the codec -------------------------------------------------------------------------------------------------


# One tuple object per distinct declaration, by (name, type name) of its columns (cheaper to hash than Columns).
_DECLARED: dict[tuple, tuple[Column, ...]] = {}


def declaration(names: Sequence[str], type_names: Sequence[Optional[str]]) -> tuple[Column, ...]:
    """The declared columns of a record, one tuple object per distinct declaration: the rows of a table then
    share it, and the decode step converts each shared declaration once per batch instead of once per record."""
    key = tuple(zip(names, type_names))
    declared = _DECLARED.get(key)
    if declared is None:
        declared = remember(_DECLARED, key, tuple(column(n, t) for n, t in key))
    return declared


@functools.lru_cache(maxsize=4096)
def key_columns(info: str) -> tuple[str, ...]:
    """The key columns ``tags["pk_uk_info"]`` names: PRIMARY, else the first unique key. Every record of a table
    carries the same text, so each distinct one is parsed once. ValueError for text that is not key JSON."""
    keys = json.loads(info)
    if not isinstance(keys, dict) or not all(isinstance(v, list) for v in keys.values()):
        raise ValueError("expected an object of column-name lists")
    key = keys.get("PRIMARY") or next(iter(keys.values()), [])
    return tuple(str(k) for k in key)

# The JVM twins of the container fast path, by whether the layout ends with bornTimestamp (RECORD15).
_JVM_ROWS = {True: "cdcreplay.codecs.dts.DtsAvroPlain", False: "cdcreplay.codecs.dts.DtsAvroPlain$Record14"}

# A DTS record id is never negative; -1 stands for an event without a vendor sequence.
NO_SEQUENCE_ID = -1

def _operation(datum: dict) -> Optional[str]:
    op_name = datum.get("operation")
    return op_name if op_name in ("INSERT", "INIT", "UPDATE", "DELETE", "DDL") else None


# The Avro schema makes every field present with a type of its union; what it cannot say: a row record names its
# table (objectName db.table) and carries the images its operation implies, a DDL record its statement.
_NAMED = need("objectName", STRING, nonempty=True)
REQUIRED = Required(_operation, {
    **same_needs(("INSERT", "INIT"), _NAMED, need("afterImages", ARRAY)),
    "UPDATE": (_NAMED, need("beforeImages", ARRAY), need("afterImages", ARRAY)),
    "DELETE": (_NAMED, need("beforeImages", ARRAY)),
    "DDL": (need("afterImages", STRING),),
}, table="objectName")


class DtsAvroCodec(Codec):
    name = "dts-avro"
    required = REQUIRED
    vendor = "Aliyun DTS"
    description = "Aliyun DTS data subscription Avro Record (typed values, EmptyObject for absent columns)"
    capabilities = Capabilities(
        losses=untyped("int"),
        binary=True,
        typed_values=True,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.BEGIN, Op.COMMIT,
                       Op.HEARTBEAT}),
        transactions=True,
        notes="Times carry microseconds: a 7-9 digit fraction (or any text the typed form cannot hold) is "
              "written as a Character, value exact, type lost. TRUNCATE encodes as "
              "DDL. ROLLBACK/ABORT/CHECKPOINT/... records decode as HEARTBEAT with vendor['operation']. Column "
              "types are DTS value kinds (declared source types are not carried). sourceTimestamp is seconds.",
    )

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        datum, born = self._read(bytes(raw), position)
        return [self._required(self._event(datum, born, position), datum)]

    # jvm/DtsAvroPlain.java: the twin of dts_avro_rows.plain_rows, for each layout (``_JVM_ROWS``)
    jvm_container_decoders = True
    # a Kafka record: the twin of the layout that reads it to its end (jvm/DtsAvroMessage.java)
    jvm_message_decoder = "cdcreplay.codecs.dts.DtsAvroMessage"

    def container_decoder(self, writer_schema: Any) -> Optional[ContainerDecoder]:
        for schema, born in ((RECORD15, True), (RECORD14, False)):
            if same_layout(writer_schema, schema):
                from .dts_avro_rows import plain_rows  # the fast path builds on this module's helpers

                return ContainerDecoder(schema, lambda datum, position, raw=None, schema=schema, born=born: [
                    self._required(self._event(self._checked(schema, datum, position, raw), born, position),
                                   datum)],
                    lambda datum, at, born=born: plain_rows(datum, born, at), _JVM_ROWS[born])
        return None

    def _required(self, event: Event, datum: dict) -> Event:
        self.required.check(self.name, datum, event.position)
        return event

    def _checked(self, schema: Any, datum: dict, position: Position, raw: Optional[bytes] = None) -> dict:
        try:
            return check_ints(schema, datum, raw)
        except ValueError as exc:  # the same words ``_read`` gives the same record as bytes
            raise self.error("Record", position, f"not a readable DTS Record: {type(exc).__name__}: {exc}")

    def _read(self, raw: bytes, position: Position) -> tuple[dict, bool]:
        """14 fields first; the trailing bornTimestamp only when bytes remain. RECORD15 is RECORD14 and then that
        one long, so the long is read from where the 14 fields end (reading the whole record again with
        RECORD15 was a third of a 15-field record's decode)."""
        try:
            datum, used = avro_loads(RECORD14, raw)
            if used == len(raw):
                return datum, False
            datum["bornTimestamp"], more = read_datum("long", raw[used:])
            used += more
        except Exception as exc:  # fastavro: EOFError, UnicodeDecodeError, IndexError...
            raise self.error("Record", position, f"not a readable DTS Record: {type(exc).__name__}: {exc}")
        if used != len(raw):
            raise self.error("bornTimestamp", position, f"{len(raw) - used} bytes left after the record")
        return datum, True

    def _event(self, datum: dict, born: bool, position: Position) -> Event:
        op_name = datum["operation"]
        op = _OPS.get(op_name, Op.HEARTBEAT)
        vendor: dict[str, Any] = {
            "version": datum["version"], "sourcePosition": datum["sourcePosition"],
            "safeSourcePosition": datum["safeSourcePosition"], "source": datum["source"],
            "tags": datum["tags"], "born": datum["bornTimestamp"] if born else None,
        }
        if op_name not in _OPS:
            vendor["operation"] = op_name
        if datum["processTimestamps"] is not None:
            vendor["processTimestamps"] = datum["processTimestamps"]
        database, schema, table = self._names(datum["objectName"], position)
        if datum["objectName"] is not None and \
                join_object_name([p for p in (database, schema, table) if p is not None]) != datum["objectName"]:
            vendor["objectName"] = datum["objectName"]
        columns, numbers = self._columns(datum, position, vendor)
        ddl = None
        images: dict[str, Optional[list]] = {}
        for side in ("before", "after"):
            image = datum[f"{side}Images"]
            if isinstance(image, str):
                if side == "after" and op is Op.DDL:
                    ddl = image
                else:
                    vendor[f"{side}_text"] = image
                image = None
            elif image is not None and len(image) != len(columns):
                if image or not columns:
                    raise self.error(f"{side}Images", position, f"{len(image)} values for {len(columns)} fields")
                vendor[f"{side}_empty"] = True
            images[side] = image
        columns, specs = self._column_types(columns, images, position)
        if numbers is not None:
            vendor["fields"] = numbers
        if specs:
            vendor["specs"] = specs
        converted, raw_values = {}, {}
        for side, image in images.items():
            converted[side], kept = self._image(side, image, columns, specs, position)
            if kept:
                raw_values[side] = kept
        if raw_values:
            vendor["raw"] = raw_values
        if op is Op.DDL:
            op = ddl_op(ddl)  # TRUNCATE travels as a DDL record
        return Event(
            format=self.name, op=op, database=database, schema=schema, table=table, position=position,
            before=converted["before"], after=converted["after"], columns=columns,
            primary_key=self._primary_key(datum["tags"], position), event_time_ms=datum["sourceTimestamp"] * 1000,
            sequence=() if datum["id"] == NO_SEQUENCE_ID else (Decimal(datum["id"]),),
            transaction_id=datum["sourceTxid"] or None, ddl=ddl, vendor=vendor)

    def _names(self, object_name: Optional[str], position: Position
               ) -> tuple[Optional[str], Optional[str], Optional[str]]:
        if object_name is None:
            return None, None, None
        parts = split_object_name(object_name)
        if len(parts) == 1:
            return parts[0], None, None
        if len(parts) == 2:
            return parts[0], None, parts[1]
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        raise self.error("objectName", position, f"expected db.table or db.schema.table, got {object_name!r}")

    def _columns(self, datum: dict, position: Position, vendor: dict) -> tuple[list[Column], Optional[list]]:
        fields = datum["fields"]
        if isinstance(fields, str):
            vendor["fields_text"] = fields
            return [], None
        if fields is None:
            return [], None
        names = [f["name"] for f in fields]
        if len(set(names)) != len(names):
            raise self.error("fields", position, f"duplicate column names in {names}")
        return [column(n) for n in names], [f["dataTypeNumber"] for f in fields]

    def _column_types(self, columns: list[Column], images: Mapping[str, Optional[list]], position: Position
                      ) -> tuple[tuple[Column, ...], dict]:
        out, specs = [], {}
        for i, col in enumerate(columns):
            values = [img[i] for img in (images["after"], images["before"]) if img]
            typed = next((v for v in values if v is not None and short_name(v[0]) != "EmptyObject"), None)
            if typed is None:
                out.append(col)
                continue
            try:
                out.append(column(col.name, column_type_name(typed)))
            except ValueError as exc:
                raise self.error(f"afterImages[{i}]", position, f"column {col.name}: {exc}")
            specs[col.name] = column_spec(typed)
        return declaration([c.name for c in out], [c.type_name for c in out]), specs

    def _image(self, side: str, image: Optional[list], columns: Sequence[Column], specs: Mapping[str, dict],
               position: Position) -> tuple[Optional[Image], dict]:
        if image is None:
            return None, {}
        out: Image = {}
        kept: dict[str, Any] = {}
        for i, value in enumerate(image):
            col = columns[i]
            try:
                text, present = value_text(value)
            except (ValueError, KeyError, UnicodeDecodeError, OverflowError) as exc:
                raise self.error(f"{side}Images[{i}]", position, f"column {col.name}: {exc}")
            if not present:
                continue
            out[col.name] = text
            try:
                derived = image_value(col, specs.get(col.name, {}), text)
                # Equal datums are equal after a write+read too; only unequal ones need the closer look
                # (a float branch, NaN), which costs a walk of both.
                same = derived == value or comparable(derived) == comparable(value)
            except (ValueError, UnicodeEncodeError):
                same = False
            if not same:
                kept[col.name] = to_jsonable(value)
        return out, kept

    def _primary_key(self, tags: Mapping[str, str], position: Position) -> tuple[str, ...]:
        """PRIMARY from pk_uk_info; a table with only unique keys is keyed by its first one (see NOTES.md)."""
        info = tags.get("pk_uk_info")
        if not info:
            return ()
        try:
            return key_columns(info)
        except ValueError as exc:
            raise self.error('tags["pk_uk_info"]', position, f"not key JSON: {exc}")

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for event in events:
            datum, born = self.datum(event)
            self.written(datum, event)
            value = avro_dumps(RECORD15 if born else RECORD14, datum)
            out.append(EncodedMessage(value=value, key=message_key(event), table=event.qualified_table,
                                      op=datum["operation"], events=1))
        return out

    def datum(self, event: Event) -> tuple[dict, bool]:
        """The Record for one event, and whether it has the 15th field (bornTimestamp)."""
        vendor = event.vendor if event.format == self.name else {}
        if event.op not in _OP_OUT:
            raise EncodeError(self.name, "operation", f"cannot encode {event.op.value}")
        op = vendor.get("operation") if event.op is Op.HEARTBEAT and "operation" in vendor else _OP_OUT[event.op]
        # Image keys the declared columns do not list (e.g. Mongo's _id) are columns too.
        known = {c.name for c in event.columns}
        columns = tuple(event.columns) + tuple(
            Column(n) for n in dict.fromkeys([*(event.after or {}), *(event.before or {})]) if n not in known)
        specs, raw = vendor.get("specs", {}), vendor.get("raw", {})
        datum: dict[str, Any] = {
            "version": vendor.get("version", 0),
            "id": self._id(event),
            "sourceTimestamp": 0 if event.event_time_ms is None else event.event_time_ms // 1000,
            "sourcePosition": vendor.get("sourcePosition", ""),
            "safeSourcePosition": vendor.get("safeSourcePosition", ""),
            "sourceTxid": event.transaction_id or "",
            "source": vendor.get("source", {"sourceType": "MySQL", "version": ""}),
            "operation": op,
            "objectName": self._object_name(event, vendor),
            "processTimestamps": vendor.get("processTimestamps"),
            "tags": self._tags(event, vendor),
            "fields": self._fields(columns, vendor),
            "beforeImages": self._encode_image("before", event.before, columns, specs, raw.get("before", {}),
                                               vendor),
            "afterImages": self._encode_image("after", event.after, columns, specs, raw.get("after", {}), vendor),
        }
        if event.op in (Op.DDL, Op.TRUNCATE):
            ddl = event.ddl if event.op is Op.DDL else (event.ddl or f"TRUNCATE TABLE {event.qualified_table}")
            if ddl is not None:
                datum["afterImages"] = ddl
        born = "born" not in vendor or vendor["born"] is not None
        if born:
            datum["bornTimestamp"] = vendor.get("born", event.event_time_ms or 0)
        return datum, born

    def _id(self, event: Event) -> int:
        if not event.sequence:
            # "No vendor sequence" (a full-sync row from a format without one) must survive the trip: a re-sent
            # copy then stays the same event, and merge still ranks it as a row of unknown position.
            return NO_SEQUENCE_ID
        if len(event.sequence) == 1 and event.sequence[0] == event.sequence[0].to_integral_value():
            n = int(event.sequence[0])
            if fits(n, INT64):
                return n
        return event.position.offset

    def _object_name(self, event: Event, vendor: Mapping) -> Optional[str]:
        if "objectName" in vendor:
            return vendor["objectName"]
        parts = [p for p in (event.database, event.schema, event.table) if p is not None]
        return join_object_name(parts) if parts else None

    def _tags(self, event: Event, vendor: Mapping) -> dict:
        tags = dict(vendor.get("tags", {}))
        if "tags" in vendor and self._primary_key(tags, event.position) == event.primary_key:
            return tags
        if event.primary_key:
            tags["pk_uk_info"] = json.dumps({"PRIMARY": list(event.primary_key)}, separators=(",", ":"))
        else:
            tags.pop("pk_uk_info", None)
        return tags

    def _fields(self, columns: Sequence[Column], vendor: Mapping) -> Any:
        if "fields_text" in vendor:
            return vendor["fields_text"]
        numbers = vendor.get("fields")
        if not columns:
            return None if numbers is None else []
        if numbers is None or len(numbers) != len(columns):
            numbers = [_MYSQL_CODES.get(_base_word(c.type_name), _FAMILY_CODES.get(family(c.type_name,
                                                                                          c.jdbc_type), 253))
                       for c in columns]
        return [{"name": c.name, "dataTypeNumber": n} for c, n in zip(columns, numbers)]

    def _encode_image(self, side: str, image: Optional[Image], columns: Sequence[Column],
                      specs: Mapping[str, dict], raw: Mapping[str, Any], vendor: Mapping) -> Any:
        if f"{side}_text" in vendor:
            return vendor[f"{side}_text"]
        if image is None:
            return None
        if not image and vendor.get(f"{side}_empty"):
            return []
        out = []
        for col in columns:
            if col.name not in image:
                out.append("NONE")  # EmptyObject.NONE: not present in this image
                continue
            text = image[col.name]
            kept = raw.get(col.name)
            if kept is not None:
                original = from_jsonable(kept)
                try:
                    same = value_text(original) == (text, True)
                except (ValueError, KeyError, UnicodeDecodeError):
                    same = False
                if same:
                    out.append(writable(original))
                    continue
            try:
                out.append(image_value(col, specs.get(col.name, {}), text))
            except (ValueError, UnicodeEncodeError) as exc:
                raise EncodeError(self.name, f"{side}Images.{col.name}", str(exc))
        return out


CODEC = DtsAvroCodec()
