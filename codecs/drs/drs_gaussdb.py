"""Huawei Cloud DRS to Kafka, JSON format for GaussDB (primary/standby and distributed) and PostgreSQL sources
(the same layout is documented for Oracle and SQL Server sources). It is DRS JSON (``drs_json``) with:

- ``columnType`` (source type names such as ``timestamp without time zone``) instead of ``mysqlType``;
- ``dbType``, ``schema`` and ``opType`` (the same op as ``type``); ``event.schema`` is set, so the qualified
  table is ``database.schema.table``; ``database`` is empty for Oracle and becomes None;
- ``sqlType`` numbers that are DRS-internal type codes, *not* java.sql.Types (smallint is 2, boolean 8, bytea
  15). ``Column.jdbc_type`` is therefore derived from the type name (PostgreSQL JDBC driver mapping); the codes
  are re-derived on encode from the documented table below, and any code that differs is kept in the fix;
- PostgreSQL text renderings: ``bytea`` as hex (``62797465``, optionally ``\\x``-prefixed) -> base64; ``bit``
  strings -> their decimal value (width and leading zeros re-derived from ``bit(n)``, otherwise kept in the cell
  fix); ``timestamp with time zone`` ``2010-01-01 14:30:00+08`` -> ``2010-01-01 14:30:00 +08:00``.
"""

from __future__ import annotations

import base64
import functools
import re
from dataclasses import replace
from typing import Any, Optional

from .drs_json import OP_TO_TYPE, Dialect, DrsJsonCodec, Values
from .drs_wire import base64_bytes, text_field
from ..event import Column, Event, Position
from ..types import JDBC, family

FORMAT = "drs-gaussdb"
DEFAULT_DB_TYPE = "GaussDB Primary/Standby"

# DRS's own sqlType codes, as documented in its GaussDB example. Types not listed fall back to java.sql.Types.
DRS_TYPE_CODES = {
    "smallint": 2, "boolean": 8, "character": 9, "bytea": 15, "timestamp without time zone": 16, "bit": 20,
    "json": 22, "int4range": 42, "tstzrange": 46,
}

# PostgreSQL type name -> java.sql.Types, as the PostgreSQL JDBC driver reports them.
PG_JDBC = {
    "smallint": "SMALLINT", "int2": "SMALLINT", "integer": "INTEGER", "int": "INTEGER", "int4": "INTEGER",
    "bigint": "BIGINT", "int8": "BIGINT", "numeric": "NUMERIC", "decimal": "NUMERIC", "real": "REAL",
    "float4": "REAL", "double precision": "DOUBLE", "float8": "DOUBLE", "money": "DOUBLE", "boolean": "BOOLEAN",
    "bool": "BOOLEAN", "character": "CHAR", "char": "CHAR", "bpchar": "CHAR", "character varying": "VARCHAR",
    "varchar": "VARCHAR", "text": "VARCHAR", "name": "VARCHAR", "bytea": "BINARY", "date": "DATE",
    "time": "TIME", "time without time zone": "TIME", "time with time zone": "TIME_WITH_TIMEZONE",
    "timetz": "TIME_WITH_TIMEZONE", "timestamp": "TIMESTAMP", "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP_WITH_TIMEZONE", "timestamptz": "TIMESTAMP_WITH_TIMEZONE",
    "bit": "BIT", "xml": "SQLXML", "json": "OTHER", "jsonb": "OTHER", "uuid": "OTHER", "interval": "OTHER",
    "inet": "OTHER", "cidr": "OTHER", "macaddr": "OTHER", "bit varying": "OTHER", "varbit": "OTHER",
}
_FAMILY_PG = {"int": "bigint", "decimal": "numeric", "float": "double precision", "bit": "bit",
              "bool": "boolean", "binary": "bytea", "date": "date", "time": "time without time zone",
              "datetime": "timestamp without time zone", "timestamp": "timestamp",
              "zoned": "timestamp with time zone", "json": "jsonb"}


# Type names PG_JDBC does not list, by their base's ending or start (a range, an array), in the order they are tried.
PG_NAME_RULES = (("suffix", "range", JDBC["OTHER"]), ("suffix", "[]", JDBC["ARRAY"]), ("prefix", "_", JDBC["ARRAY"]))


# Cached: asked for every column of every event encoded, of a table's few type names.
@functools.lru_cache(maxsize=4096)
def pg_base(type_name: str) -> str:
    """``character varying(255)`` -> ``character varying``; ``numeric(10, 2)`` -> ``numeric``."""
    return re.sub(r"\s+", " ", re.sub(r"\(.*?\)", "", type_name)).strip().lower()


def pg_jdbc(type_name: Optional[str]) -> Optional[int]:
    if not type_name:
        return None
    base = pg_base(type_name)
    if base in PG_JDBC:
        return JDBC[PG_JDBC[base]]
    for where, text, code in PG_NAME_RULES:
        if base.endswith(text) if where == "suffix" else base.startswith(text):
            return code
    return None


_PG_ZONED = re.compile(r"(\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?)([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?\Z")
_CANON_ZONED = re.compile(r"(\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?) (\S+)\Z")
_CANON_OFFSET = re.compile(r"([+-])(\d\d):(\d\d)(?::(\d\d))?\Z")


class GaussValues(Values):
    """PostgreSQL/GaussDB text renderings (see the module docstring); everything else is the source's text."""

    def to_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "binary":
            hex_text = text[2:] if text.startswith("\\x") else text
            if len(hex_text) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", hex_text):
                raise ValueError("expected hex bytes such as 62797465 or \\x62797465")
            return base64.b64encode(bytes.fromhex(hex_text)).decode()
        if fam == "bit":
            if not re.fullmatch(r"[01]+", text):
                raise ValueError("expected a bit string of 0 and 1")
            return str(int(text, 2))
        if fam == "zoned":
            m = _PG_ZONED.match(text)
            if m:
                seconds = f":{m.group(5)}" if m.group(5) else ""
                return f"{m.group(1)} {m.group(2)}{m.group(3)}:{m.group(4) or '00'}{seconds}"
        return text

    def from_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "binary":
            return base64_bytes(text).hex()
        if fam == "bit":
            if not re.fullmatch(r"\d+", text):
                raise ValueError(f"bit value {text!r} is not a non-negative integer")
            width = re.search(r"\((\d+)\)", column.type_name or "")
            return format(int(text), "b").zfill(int(width.group(1)) if width else 1)
        if fam == "zoned":
            return self._pg_zoned(text)
        return text

    @staticmethod
    def _pg_zoned(text: str) -> str:
        m = _CANON_ZONED.match(text)
        if not m:
            return text
        stamp, zone = m.groups()
        offset = _CANON_OFFSET.match(zone)
        if offset is None:
            # A zone id (from another format) has no PostgreSQL rendering; writing the offset in force would
            # lose the zone, so the canonical text is written as is and read back as is.
            return text
        sign, h, mi, s = offset.groups()
        return f"{stamp}{sign}{h}" + (f":{mi}" if mi != "00" or s else "") + (f":{s}" if s else "")


GAUSS_DIALECT = Dialect(
    name=FORMAT,
    description="Huawei DRS JSON for GaussDB/PostgreSQL (also Oracle, SQL Server): columnType, schema, dbType, "
                "opType, DRS type codes in sqlType",
    values=GaussValues(),
    types_key="columnType",
    schema_level=True,
    notes="UPDATE old is the full before image; DELETE row in old (accepted in data too); id is DRS's monotonic "
          "sequence; sqlType holds DRS type codes (jdbc_type is derived from the type name); a zone id in a "
          "timestamptz value is written verbatim (PostgreSQL prints offsets); no heartbeat, transaction or truncate records.",
)


def _declaration():
    """DRS JSON's declaration (``DrsJsonCodec.jvm_declaration``) with GaussDB's differences: the schema a level of
    its own, ``columnType``, the columns' JDBC types from their names (``sqlType`` holds DRS's own codes, derived
    back by name), the header keys dbType, schema and opType in the encoder's order, and the PostgreSQL renderings
    ``GaussValues`` converts (bytea hex, bit strings, timestamptz offsets)."""
    base = DrsJsonCodec.jvm_declaration
    header = {"columnType": "type_names", "dbType": f'="{DEFAULT_DB_TYPE}"', "schema": "schema", "opType": "op"}
    return replace(base, reads={**base.reads, "schema": ("schema", "text"), "type_names": ("columnType", "object")},
                   writes={**header, **{k: v for k, v in base.writes.items() if k != "mysqlType"}},
                   schema_level=True,
                   value_conversions={"binary": "pg_hex", "bit": "pg_bit", "zoned": "pg_zoned"},
                   jdbc_by_name={name: JDBC[kind] for name, kind in PG_JDBC.items()},
                   jdbc_name_rules=PG_NAME_RULES, codes_by_name=DRS_TYPE_CODES)


class DrsGaussDbCodec(DrsJsonCodec):
    jvm_declaration = _declaration()

    def __init__(self) -> None:
        super().__init__(GAUSS_DIALECT)

    def _names(self, msg: dict, position: Position) -> dict[str, Optional[str]]:
        names = super()._names(msg, position)
        schema = text_field(self, msg, "schema", position)
        names["schema"] = schema.strip() or None if schema is not None else None
        return names

    def _column(self, name: str, type_name: Optional[str], code: Any, number: bool) -> Column:
        # `code` is DRS's internal type code, not java.sql.Types; the re-derivation is checked by the fix.
        return Column(name, type_name, pg_jdbc(type_name), number)

    def _header(self, first: Event) -> dict[str, Any]:
        base = super()._header(first)
        base["database"] = first.database or ""
        return {"dbType": DEFAULT_DB_TYPE, "schema": first.schema, "opType": OP_TO_TYPE[first.op], **base}

    def _type_name(self, column: Column) -> str:
        if column.type_name:
            return column.type_name
        return _FAMILY_PG.get(family(None, column.jdbc_type), "text")

    def _sql_type(self, column: Column) -> int:
        code = DRS_TYPE_CODES.get(pg_base(column.type_name)) if column.type_name else None
        if code is not None:
            return code
        if column.jdbc_type is not None:
            return column.jdbc_type
        return pg_jdbc(self._type_name(column)) or JDBC["VARCHAR"]


CODEC = DrsGaussDbCodec()
