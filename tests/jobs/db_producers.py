"""What real producers write for rows read from a real database, following each vendor's documented type mapping.

Used by ``test_db_exactness.py``. Each producer takes a row as the database prints it (text protocol: MariaDB
``conv={}``, PostgreSQL ``::text``) and renders it the way the vendor's connector does:

* Alibaba Canal (MySQL binlog -> FlatMessage JSON, ``LogEventConvert``): every value a string; binary, varbinary,
  blob, bit and geometry columns are the raw bytes as ISO-8859-1 text (one character per byte); TIMESTAMP is the
  wall-clock text in the server's time zone; ``mysqlType`` is the column type, ``sqlType`` the java.sql.Types.
* Debezium MySQL / PostgreSQL connectors with the JSON converter and ``schemas.enable=true`` (connector
  reference, "Data type mappings"): ``decimal.handling.mode=precise`` (Decimal / VariableScaleDecimal),
  ``time.precision.mode=adaptive_time_microseconds`` (MySQL) / ``adaptive`` (PostgreSQL), ``binary.handling.mode=
  bytes`` (base64 in JSON), ``bigint.unsigned.handling.mode=precise`` (so unsigned 64-bit values survive).
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import json
import re
import struct
from decimal import Decimal
from typing import Any, Optional

EPOCH = dt.date(1970, 1, 1)


# ----------------------------------------------------------------------------------------------------- Canal

CANAL_BYTES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit", "geometry")
MYSQL_JDBC = {"tinyint": -6, "smallint": 5, "mediumint": 4, "int": 4, "bigint": -5, "decimal": 3, "float": 7,
              "double": 8, "bit": -7, "binary": -2, "varbinary": -3, "blob": 2004, "char": 1, "varchar": 12,
              "text": 2005, "longtext": 2005, "date": 91, "time": 92, "datetime": 93, "timestamp": 93, "year": 12,
              "enum": 4, "set": -7, "geometry": -2}


def canal_message(database: str, table: str, kind: str, rows: list[dict], olds: Optional[list[dict]],
                  types: dict[str, str], es: int, batch: int) -> bytes:
    """One Canal FlatMessage for ``rows`` (MariaDB text values; bytes for binary columns)."""
    def cell(col: str, v: Any) -> Optional[str]:
        if v is None:
            return None
        if isinstance(v, bytes):
            return v.decode("latin-1")  # Canal: new String(bytes, ISO_8859_1)
        return v

    data = [{c: cell(c, v) for c, v in r.items()} for r in rows]
    old = None if olds is None else [{c: cell(c, v) for c, v in o.items()} for o in olds]
    msg = {"data": data, "database": database, "es": es, "id": batch, "isDdl": False, "mysqlType": types,
           "old": old, "pkNames": ["id"], "sql": "",
           "sqlType": {c: MYSQL_JDBC.get(re.match(r"\w+", t).group(0), 12) for c, t in types.items()},
           "table": table, "ts": es + 7, "type": kind}
    return json.dumps(msg, ensure_ascii=False).encode()


# -------------------------------------------------------------------------------------------------- Debezium


def _f(name: str, ftype: str, logical: Optional[str] = None, **params: Any) -> dict:
    out: dict[str, Any] = {"type": ftype, "optional": name != "id", "field": name}
    if logical:
        out["name"] = logical
    if params:
        out["parameters"] = {k: str(v) for k, v in params.items()}
    return out


def _unscaled_b64(text: str, scale: int) -> str:
    """Java BigDecimal.unscaledValue().toByteArray(), base64: exact integer arithmetic (no 28-digit context)."""
    sign, digits, exp = Decimal(text).as_tuple()
    n = int("".join(map(str, digits))) * 10 ** (exp + scale)
    n = -n if sign else n
    size = (n if n >= 0 else ~n).bit_length() // 8 + 1
    return base64.b64encode(n.to_bytes(size, "big", signed=True)).decode()


def _micros_of_day(text: str) -> int:
    m = re.fullmatch(r"(-)?(\d+):(\d\d):(\d\d)(?:\.(\d+))?", text)
    sign, h, mi, s, frac = m.groups()
    n = ((int(h) * 60 + int(mi)) * 60 + int(s)) * 1_000_000 + int(((frac or "") + "000000")[:6])
    return -n if sign else n


def _datetime_micros(text: str) -> int:
    d = dt.datetime.fromisoformat(text)
    return (calendar.timegm(d.timetuple())) * 1_000_000 + d.microsecond


def _zoned(text_utc: str) -> str:
    """Debezium ZonedTimestamp: ISO-8601 in UTC with 'Z', fraction as written (trailing zeros dropped)."""
    d, t = text_utc.split(" ")
    if "." in t:
        t = t.rstrip("0").rstrip(".")
    return f"{d}T{t}Z"


MYSQL_FIELDS = {
    # MySQL column type word -> (Connect type, logical name, value renderer from MariaDB text/bytes)
    "tinyint": ("int16", None, int), "smallint": ("int16", None, int), "int": ("int32", None, int),
    "bigint": ("int64", None, int), "float": ("float32", None, float), "double": ("float64", None, float),
    "char": ("string", None, str), "varchar": ("string", None, str), "text": ("string", None, str),
    "longtext": ("string", "io.debezium.data.Json", str),
    "date": ("int32", "io.debezium.time.Date", lambda v: (dt.date.fromisoformat(v) - EPOCH).days),
    "time": ("int64", "io.debezium.time.MicroTime", _micros_of_day),
    "datetime": ("int64", "io.debezium.time.MicroTimestamp", _datetime_micros),
    "timestamp": ("string", "io.debezium.time.ZonedTimestamp", _zoned),
    "year": ("int32", "io.debezium.time.Year", int),
    "binary": ("bytes", None, lambda b: base64.b64encode(b).decode()),
    "varbinary": ("bytes", None, lambda b: base64.b64encode(b).decode()),
    "blob": ("bytes", None, lambda b: base64.b64encode(b).decode()),
}


def debezium_mysql_field(name: str, column_type: str) -> tuple[dict, Any]:
    word = re.match(r"\w+", column_type).group(0)
    unsigned = "unsigned" in column_type
    if word == "bigint" and unsigned:  # bigint.unsigned.handling.mode=precise
        return _f(name, "bytes", "org.apache.kafka.connect.data.Decimal", scale=0,
                  **{"connect.decimal.precision": 20}), lambda v: _unscaled_b64(v, 0)
    if word == "tinyint" and unsigned:
        return _f(name, "int16"), int
    if word == "decimal":
        p, s = map(int, re.findall(r"\d+", column_type))
        return _f(name, "bytes", "org.apache.kafka.connect.data.Decimal", scale=s,
                  **{"connect.decimal.precision": p}), lambda v: _unscaled_b64(v, s)
    if word == "bit":
        n = int(re.findall(r"\d+", column_type)[0])
        # io.debezium.data.Bits: the bit string as bytes, least significant byte first
        return _f(name, "bytes", "io.debezium.data.Bits", length=n), \
            lambda b: base64.b64encode(int.from_bytes(b, "big").to_bytes((n + 7) // 8, "little")).decode()
    if word == "enum":
        return _f(name, "string", "io.debezium.data.Enum", allowed=column_type[5:-1].replace("'", "")), str
    if word == "set":
        return _f(name, "string", "io.debezium.data.EnumSet", allowed=column_type[4:-1].replace("'", "")), str
    if word == "geometry":
        field = _f(name, "struct", "io.debezium.data.geometry.Geometry")
        field["fields"] = [{"type": "bytes", "optional": False, "field": "wkb"},
                           {"type": "int32", "optional": True, "field": "srid"}]
        # MySQL's internal value is a 4-byte little-endian SRID then the WKB
        return field, lambda b: {"wkb": base64.b64encode(b[4:]).decode(),
                                 "srid": int.from_bytes(b[:4], "little") or None}
    ftype, logical, render = MYSQL_FIELDS[word]
    return _f(name, ftype, logical), render


def _pg_point_wkb(text: str) -> bytes:
    x, y = map(float, text.strip("()").split(","))
    return struct.pack("<BIdd", 1, 1, x, y)


PG_FIELDS = {
    "integer": ("int32", None, int), "smallint": ("int16", None, int), "bigint": ("int64", None, int),
    "real": ("float32", None, float), "double precision": ("float64", None, float),
    "text": ("string", None, str), "character": ("string", None, str), "boolean": ("boolean", None,
                                                                                     lambda v: v == "t"),
    "date": ("int32", "io.debezium.time.Date", lambda v: (dt.date.fromisoformat(v) - EPOCH).days),
    "time without time zone": ("int64", "io.debezium.time.MicroTime", _micros_of_day),
    "timestamp without time zone": ("int64", "io.debezium.time.MicroTimestamp", _datetime_micros),
    "timestamp with time zone": ("string", "io.debezium.time.ZonedTimestamp",
                                 lambda v: _zoned(v.rsplit("+", 1)[0])),  # session TimeZone=UTC: "...+00"
    "json": ("string", "io.debezium.data.Json", str), "jsonb": ("string", "io.debezium.data.Json", str),
    "uuid": ("string", "io.debezium.data.Uuid", str),
    "bytea": ("bytes", None, lambda v: base64.b64encode(bytes.fromhex(v[2:])).decode()),
}


def debezium_pg_field(name: str, data_type: str, precision: Optional[int], scale: Optional[int],
                      bits: Optional[int]) -> tuple[dict, Any]:
    if data_type == "numeric" and scale is None:
        field = _f(name, "struct", "io.debezium.data.VariableScaleDecimal")
        field["fields"] = [{"type": "int32", "optional": False, "field": "scale"},
                           {"type": "bytes", "optional": False, "field": "value"}]

        def vsd(v: str) -> dict:
            s = max(0, -Decimal(v).as_tuple().exponent)
            return {"scale": s, "value": _unscaled_b64(v, s)}
        return field, vsd
    if data_type == "numeric":
        return _f(name, "bytes", "org.apache.kafka.connect.data.Decimal", scale=scale,
                  **{"connect.decimal.precision": precision}), lambda v: _unscaled_b64(v, scale)
    if data_type == "bit":
        return _f(name, "bytes", "io.debezium.data.Bits", length=bits), \
            lambda v: base64.b64encode(int(v, 2).to_bytes((bits + 7) // 8, "little")).decode()
    if data_type == "point":
        field = _f(name, "struct", "io.debezium.data.geometry.Point")
        field["fields"] = [{"type": "float64", "optional": False, "field": "x"},
                           {"type": "float64", "optional": False, "field": "y"},
                           {"type": "bytes", "optional": True, "field": "wkb"},
                           {"type": "int32", "optional": True, "field": "srid"}]

        def point(v: str) -> dict:
            x, y = map(float, v.strip("()").split(","))
            return {"x": x, "y": y, "wkb": base64.b64encode(_pg_point_wkb(v)).decode(), "srid": None}
        return field, point
    ftype, logical, render = PG_FIELDS[data_type]
    return _f(name, ftype, logical), render


def debezium_message(fields: list[tuple[str, dict, Any]], op: str, before: Optional[dict], after: Optional[dict],
                     source: dict, ts_ms: int) -> bytes:
    """The JSON converter's value: {"schema": envelope schema, "payload": {...}}."""
    row_schema = {"type": "struct", "fields": [f for _, f, _ in fields], "optional": True,
                  "name": f"{source['db']}.{source['table']}.Value"}

    def image(row: Optional[dict]) -> Optional[dict]:
        if row is None:
            return None
        return {name: None if row[name] is None else render(row[name]) for name, _, render in fields}

    schema = {"type": "struct", "optional": False, "name": f"{source['db']}.{source['table']}.Envelope",
              "fields": [{**row_schema, "field": "before"}, {**row_schema, "field": "after"},
                         {"type": "struct", "fields": [], "optional": False, "name": "io.debezium.connector.Source",
                          "field": "source"},
                         {"type": "string", "optional": False, "field": "op"},
                         {"type": "int64", "optional": True, "field": "ts_ms"}]}
    payload = {"before": image(before), "after": image(after), "source": source, "op": op, "ts_ms": ts_ms}
    return json.dumps({"schema": schema, "payload": payload}, ensure_ascii=False).encode()
