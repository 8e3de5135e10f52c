"""Declared column types -> type families, from the java.sql.Types table and vendor type names.

The family decides how canonical text is typed in the merged state (``cdc_jobs.transforms.state_types``) and how codecs
render values (bare JSON number or string). Unknown types are ``string``: text is never lossy.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

# java.sql.Types constants (as in the CloudCanal and OMS documents).
JDBC = {
    "BIT": -7, "TINYINT": -6, "SMALLINT": 5, "INTEGER": 4, "BIGINT": -5, "FLOAT": 6, "REAL": 7, "DOUBLE": 8,
    "NUMERIC": 2, "DECIMAL": 3, "CHAR": 1, "VARCHAR": 12, "LONGVARCHAR": -1, "DATE": 91, "TIME": 92,
    "TIMESTAMP": 93, "BINARY": -2, "VARBINARY": -3, "LONGVARBINARY": -4, "NULL": 0, "OTHER": 1111,
    "JAVA_OBJECT": 2000, "DISTINCT": 2001, "STRUCT": 2002, "ARRAY": 2003, "BLOB": 2004, "CLOB": 2005,
    "REF": 2006, "DATALINK": 70, "BOOLEAN": 16, "ROWID": -8, "NCHAR": -15, "NVARCHAR": -9,
    "LONGNVARCHAR": -16, "NCLOB": 2011, "SQLXML": 2009, "REF_CURSOR": 2012, "TIME_WITH_TIMEZONE": 2013,
    "TIMESTAMP_WITH_TIMEZONE": 2014,
}
JDBC_NAME = {v: k for k, v in JDBC.items()}

_JDBC_FAMILY = {
    -7: "bit", -6: "int", 5: "int", 4: "int", -5: "int", 6: "float", 7: "float", 8: "float", 2: "decimal",
    3: "decimal", 91: "date", 92: "time", 93: "datetime", -2: "binary", -3: "binary", -4: "binary",
    2004: "binary", 16: "bool", 2013: "time", 2014: "zoned",
}

_NAME_FAMILY = [
    (r"^(tinyint|smallint|mediumint|int|integer|bigint|int\d+|uint\d*|long|serial|bigserial|smallserial|year)\b", "int"),
    (r"^(decimal|numeric|number|dec|money)\b", "decimal"),
    (r"^(float|double|real|binary_float|binary_double|float\d+)\b", "float"),
    (r"^(bit)\b", "bit"),
    (r"^(bool|boolean)\b", "bool"),
    (r"^(tinyblob|blob|mediumblob|longblob|binary|varbinary|bytea|bytes|raw|long raw)\b", "binary"),
    (r"^(date)$", "date"),
    (r"^(time)(\(\d\))?$", "time"),
    (r"^(datetime|timestamp without time zone)\b", "datetime"),
    (r"^(timestamp with local time zone|timestamptz|timestamp with time zone)\b", "zoned"),
    (r"^(timestamp)(\(\d\))?$", "timestamp"),
    (r"^(json|jsonb)\b", "json"),
    # Text-valued types whose JDBC number misleads (Canal sends SET as BIT, ENUM as INTEGER, geometry as BINARY,
    # and TEXT as LONGVARBINARY or CLOB: the binlog does not tell TEXT from BLOB, the type name does)
    (r"^(tinytext|text|mediumtext|longtext|enum|set|geometry|point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection)\b",
     "string"),
]
_NAME_FAMILY_RE = [(re.compile(pattern), fam) for pattern, fam in _NAME_FAMILY]
_UNSIGNED_INT = re.compile(r"^(tinyint|smallint|mediumint|int|integer|bigint)")


# Cached: a table's few declarations are asked about once per value of every event (encode renders each value
# by its family), and the answer depends on the declaration alone.
@lru_cache(maxsize=4096)
def family(type_name: Optional[str], jdbc_type: Optional[int] = None) -> str:
    """The family of a declared type; the vendor's type name wins over the JDBC number because it is more
    specific (MySQL TIMESTAMP and DATETIME both map to JDBC 93 but are different things)."""
    if type_name:
        t = type_name.strip().lower()
        if "unsigned" in t and _UNSIGNED_INT.match(t):
            return "int"
        for pattern, fam in _NAME_FAMILY_RE:
            if pattern.match(t):
                return fam
    if jdbc_type is not None and jdbc_type in _JDBC_FAMILY:
        return _JDBC_FAMILY[jdbc_type]
    return "string"


NUMERIC_FAMILIES = frozenset({"int", "decimal", "float"})


def decimal_precision_scale(type_name: Optional[str]) -> tuple[int, int] | None:
    """``decimal(10,2)`` -> (10, 2); None when the declaration does not say."""
    if not type_name:
        return None
    m = re.search(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", type_name)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


# The JDBC type a column of each canonical family is written with, by formats that carry JDBC type numbers
# (Canal's sqlType, CloudCanal's jdbcType) when the event has no number of its own.
FAMILY_JDBC = {"int": JDBC["BIGINT"], "decimal": JDBC["DECIMAL"], "float": JDBC["DOUBLE"], "bit": JDBC["BIT"],
               "bool": JDBC["BOOLEAN"], "binary": JDBC["BLOB"], "date": JDBC["DATE"], "time": JDBC["TIME"],
               "datetime": JDBC["TIMESTAMP"], "timestamp": JDBC["TIMESTAMP"],
               "zoned": JDBC["TIMESTAMP_WITH_TIMEZONE"]}


def jdbc_type_name(jdbc_type: Optional[int]) -> str:
    """Lower-case JDBC type name of a type number (what Canal-style producers write as a column type); varchar
    when the number is unknown."""
    if jdbc_type is not None and jdbc_type in JDBC_NAME:
        return JDBC_NAME[jdbc_type].lower()
    return "varchar"
