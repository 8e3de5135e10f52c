"""The declared decode of a codec's declaration (``Codec.jvm_declaration``, ``shared/jvm/DeclaredJson.java``) gives
exactly the rows of its ``decode`` for every message it takes, and a container twin (``ContainerDecoder.jvm_rows``)
exactly the rows of its Python fast path; they decline the rest (the replay then decodes them in Python): on the
messages the Python side's own tests use (fixtures, the scenario, their mutations and Alibaba variants) and on the
fuzz corpus. It runs as the replay runs it: ``LineRows`` in Spark, one message a block."""

from __future__ import annotations

import io
import json
import struct
from functools import partial

import fastavro
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from cdc_codecs import DecodeError, Position, available_formats, get_codec
from cdc_codecs.contract import check_events
from cdc_codecs.records import to_record
from cdc_codecs.base import jvm_container_twins, jvm_declaration_text, jvm_declared
from cdc_codecs.shared.avro import NAMED_TYPES, avro_dumps, avro_loads
from cdc_codecs.shared.plain_rows import DECODED_ROW, TWIN_FIELDS
from cdc_jobs.transforms.jvm_decode import LINE_FIELDS, stream_rows
from fuzz import corpus  # beside this file
from test_canal_oms_fast_paths import alibaba_variants, messages, mutations

pytestmark = pytest.mark.spark

# ``TypeFamilies.family`` in Java decides which of Alibaba Canal's texts the declared decode converts (TIMESTAMP,
# binary, bit, geometry): declarations of every kind of type name and JDBC number, each with values that those
# conversions would change, so that a family told apart wrongly changes a row.
TYPE_NAMES = [None, "", "int", "INT(11) UNSIGNED", "bigint(20) unsigned", "uint8", "year", "decimal(12,2)", "number",
              "float", "binary_float", "bit", "BIT(12)", "bit( 3 )", "boolean", "tinyblob", "blob", "varbinary(8)",
              "binary(4)", "long raw", "bytea", "date", "time", "time(3)", "datetime", "DATETIME(6)", "timestamp",
              "timestamp(6)", "TIMESTAMP(3)", " timestamp", "timestamp with time zone", "timestamptz",
              "timestamp without time zone", "timestamp(10)", "json", "enum('a')", "set('a')", "geometry", "POINT",
              " polygon", "geometrycollection", "varchar(10)", "text", "LONGTEXT", "mediumtext", "tinytext", "textual", "bitmap", "timestamps"]
JDBC_NUMBERS = [None, 93, -2, -4, -7, 2004, 2005, 12, 4]
VALUES = ["2024-02-29 23:59:59.125", "1970-01-01 00:00:00", "0000-00-00 00:00:00", "\u00ff\u0001", "5",
          ((4326).to_bytes(4, "little") + b"\x01\x01\x00\x00\x00" + bytes(range(16))).decode("latin-1")]


def declared_type_variants() -> list[bytes]:
    out = []
    for type_name in TYPE_NAMES:
        for jdbc in JDBC_NUMBERS:
            for value in VALUES:  # one a message: the JVM declines a whole message for one value it leaves
                msg = {"data": [{"id": "1", "c": value}], "database": "d", "table": "t", "es": 1, "ts": 1, "id": 3,
                       "isDdl": False, "pkNames": ["id"], "sql": "", "type": "INSERT",
                       "mysqlType": {"id": "int", **({} if type_name is None else {"c": type_name})},
                       "sqlType": {"id": 4, **({} if jdbc is None else {"c": jdbc})}}
                out.append(json.dumps(msg).encode())
    return out


def canal_inputs() -> list[bytes]:
    """canal-json's declared inputs, its messages in Alibaba's spellings and declarations of every type."""
    alibaba = [m for seed in messages("canal-json") for m in alibaba_variants(seed)]
    return declared_inputs("canal-json") + alibaba + declared_type_variants()


def declared_inputs(fmt: str) -> list[bytes]:
    """A declared format's fixtures and scenario messages, their mutations (every key left out, or set to values
    and number literals of every kind; the types objects inside images too) and its fuzz corpus."""
    seeds = messages(fmt)
    raws = [m for seed in seeds for m in mutations(seed)]
    declaration = get_codec(fmt).jvm_declaration
    if declaration.image_types is not None:
        raws += [m for seed in seeds for m in image_type_mutations(seed, declaration.image_types)]
    if declaration.value_conversions:
        raws += [m for seed in seeds for m in conversion_variants(seed, declaration)]
    return raws + [i.raw for i in corpus(fmt, 300, ten_mb_line=False)]


# Cell texts of the families a declaration converts: what the codec writes back, and spellings it reads otherwise
# (kept as cell fixes), cannot read (dead letters) or keeps as written.
CONVERTED_TEXTS = {
    "binary": ["[]", "[1]", "[106, 103]", "[-128, 127, 0]", "[1,2]", "[ 1, 2 ]", "[255]", "[-129]", "[01]", "[-0]",
               "x", "[1, 2", "[\u0661]"],
    "timestamp": ["2021-06-25 17:51:53", "2021-06-25 17:51:53.201", "2021-06-25 17:51:53.000000", "1970-01-01 07:59:59",
                  "2021-06-25T17:51:53", "0000-00-00 00:00:00", "0999-01-01 00:00:00", "2021-02-30 00:00:00",
                  "2021-06-25 24:00:00", "1624614713", "1624614713.5", "abc", "\u0662021-06-25 17:51:53"],
    # PostgreSQL's (DRS GaussDB): bytea hex, bit strings, timestamptz offsets
    "bit": ["0", "1", "00", "0101", "101", "00000101", "11111111", "2", "", "1" * 70, "0" * 9, "\u0661"],
    "zoned": ["2010-01-01 14:30:00+08", "2010-01-01 14:30:00+08:00", "2010-01-01 14:30:00+05:30",
              "2010-01-01 14:30:00-03:30:15", "2010-01-01 14:30:00+00:00:00", "2010-01-01 14:30:00.123456+00",
              "2010-01-01 14:30:00+0800", "2010-01-01 14:30:00 +08:00", "2010-01-01T14:30:00+08", "abc", "",
              "2010-01-01 14:30:00", "99999-12-31 23:59:59.999999999-12", "\u0662010-01-01 14:30:00+08",
              "2020-11-25 08:01:02.5 Asia/Shanghai", "2010-01-01 14:30:00 +08", "2010-01-01 14:30:00\t+08:00"],
}
# bytea as hex: what the codec writes back, the "\\x" prefix, upper case, odd lengths, other letters
CONVERTED_TEXTS["binary"] += ["", "62797465", "\\x62797465", "ABCD", "abcd", "6279746", "6g", "00ff"]


def conversion_variants(raw: bytes, declaration) -> list[bytes]:
    """Copies of a message with every cell of a column of a converted family set to each of CONVERTED_TEXTS."""
    from cdc_codecs.types import family

    msg = json.loads(raw)
    names = msg.get(declaration.reads["type_names"][0]) if "type_names" in declaration.reads else None
    if not isinstance(names, dict):
        return []
    lists = [key for role, key in declaration.images if role in ("rows", "row_befores")]
    out = []
    for column, type_name in names.items():
        fam = family(type_name) if isinstance(type_name, str) else None
        if fam not in declaration.value_conversions:
            continue
        for text in CONVERTED_TEXTS.get(fam, ()):  # Canal's byte families: declared_type_variants
            m = json.loads(json.dumps(msg))
            for key in lists:
                for row in m.get(key) or ():
                    if isinstance(row, dict) and column in row:
                        row[column] = text
            out.append(json.dumps(m).encode())
    return out


TYPE_SPECS = [None, "x", 5, [], {}, {"other": "INT"}, {"schemaType": None}, {"schemaType": 5},
              {"schemaType": ""}, {"schemaType": "INT64", "extra": 1}]


def image_type_mutations(raw: bytes, types) -> list[bytes]:
    """Copies of a message with the types object of one image changed: removed, another JSON value, one column's
    entry another spec, an entry left out, one added for a column no image has, the entries reversed, the object
    copied into an image without one."""
    msg = json.loads(raw)
    out = []

    def variant(key: str, change) -> None:
        m = json.loads(json.dumps(msg))
        change(m[key])
        out.append(json.dumps(m).encode())

    for key in types.order:
        image = msg.get(key)
        if not isinstance(image, dict):
            continue
        variant(key, lambda i: i.pop(types.key, None))
        for value in VALUES_OF_TYPES:
            variant(key, lambda i, v=value: i.update({types.key: v}))
        typed = image.get(types.key)
        if isinstance(typed, dict) and typed:
            first = next(iter(typed))
            for spec in TYPE_SPECS:
                variant(key, lambda i, s=spec: i[types.key].update({first: s}))
            variant(key, lambda i: i[types.key].pop(first))
            variant(key, lambda i: i[types.key].update({"no_such_column": {types.member: "INT"}}))
            variant(key, lambda i: i.update({types.key: dict(reversed(list(i[types.key].items())))}))
        other = [k for k in types.order if k != key and isinstance(msg.get(k), dict)]
        if typed is None and other and types.key in msg[other[0]]:
            variant(key, lambda i: i.update({types.key: msg[other[0]][types.key]}))
    return out


VALUES_OF_TYPES = [None, "", 0, True, [], {}]


# Every format with a declared JVM decode is compared on its own inputs.
# Connect fields of every kind the declared decode reads (debezium-json), each with cells in the one spelling its
# conversion writes back and in others (kept per cell by the codec, or dead letters): one message a cell.
DECIMAL = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal"}
BASE64_CELLS = ["AQ==", "AAE=", "AQ", "/w==", "gA==", "AIA=", "AP//////////", "DK8D", "DK8D=", "", "A", "A===",
                "AQ==\n", "@@@@", 5, True, {}, "\u0661Q=="]
CONNECT_CELLS = [
    *[({**DECIMAL, "parameters": params}, BASE64_CELLS)
      for params in ({"scale": "2", "connect.decimal.precision": "12"}, {"scale": "0"}, {"scale": "-2"},
                     {"scale": "x"}, {}, {"scale": "30", "connect.decimal.precision": "65",
                                          "__debezium.source.column.type": "decimal(65,30)"})],
    ({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"},
     [{"scale": 3, "value": "erc="}, {"scale": 0, "value": "AQ=="}, {"scale": 0, "value": "AAE="},
      {"scale": -1, "value": "AQ=="}, {"scale": "3", "value": "erc="}, {"scale": 3.0, "value": "erc="},
      {"scale": 3, "value": "erc=", "x": 1}, {"value": "AQ=="}, {"scale": 3}, "AQ==", {"scale": 3, "value": ""}]),
    *[({"type": "int32", "name": name}, [0, 18591, -719162, -719163, 2932896, 2932897, "18591", 1.5, 1e3, 10**19])
      for name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")],
    *[({"type": "int64", "name": f"io.debezium.time.{name}"},
       [0, 1, 62123456, -3020399000000, 86400000000, 999999999, 123456789012345, -1, "5", 2.5, 10**20])
      for name in ("Time", "MicroTime", "NanoTime")],
    *[({"type": "int64", "name": f"io.debezium.time.{name}"},
       [0, 1, -1, 1606262462123, 1676557841398055, -62135596800000, -62135596800001, -62135596800000000,
        253402300799999, 253402300800000, 253402300799999999, 9223372036854775807, -9223372036854775808, "5", 1.0])
      for name in ("Timestamp", "MicroTimestamp", "NanoTimestamp")],
    *[({"type": "string", "name": "io.debezium.time.ZonedTimestamp", "parameters": params},
       ["2020-11-24T16:01:02.5Z", "2020-11-24T16:01:02.50Z", "2020-11-24T16:01:02Z", "2020-11-24T16:01:02+08:00",
        "2020-11-24T16:01:02+00:00", "2020-11-24T16:01:02.123456789-05:30:15", "2020-11-24 16:01:02Z",
        "2020-11-24T16:01:02", "2020-11-24T25:01:02Z", "1969-12-31T23:59:59.999999999Z", "0001-01-01T00:00:00Z",
        "0000-01-01T00:00:00Z", "2020-02-30T00:00:00Z", "2262-04-11T23:47:16.854775807Z",
        "2262-04-11T23:47:16.854775808Z", "9999-12-31T23:59:59Z", "99999-01-01T00:00:00Z",
        "\u06602020-11-24T16:01:02Z", 5])
      for params in ({"__debezium.source.column.type": "timestamp"},
                     {"__debezium.source.column.type": "TIMESTAMP(3)"},
                     {"__debezium.source.column.type": "timestamptz"}, {})],
    ({"type": "string", "name": "io.debezium.time.ZonedTime"},
     ["16:01:02Z", "16:01:02.5+08:00", "16:01:02+00:00", "25:61:61Z", "16:01Z", "16:01:02.1234567890Z", 5]),
    *[({"type": "bytes", "name": "io.debezium.data.Bits", "parameters": params},
       ["AQ==", "AQA=", "AAA=", "", "AA==", "/////////w==", "AQ", "gA==", 1])
      for params in ({"length": "1"}, {"length": "12"}, {"length": "64"}, {}, {"length": "x"})],
    ({"type": "int64"}, [1, "1", 1.5, True, -9223372036854775808, 1e400]),
    ({"type": "float64"}, [1.5e-300, 1, "NaN"]),
    ({"type": "string"}, ["x", "", 1, True, {}]),
    ({"type": "boolean"}, [True, False, 1, "true"]),
    ({"type": "struct", "fields": []}, [{"a": 1}, [1, 2], {}, "x"]),
    ({"type": "array", "items": {"type": "int32"}}, [[1, 2], [], 1]),
    ({"type": "bytes"}, ["AP8Q/w==", "x", 5]),
    ({"type": "struct", "name": "io.debezium.data.geometry.Point"},
     [{"x": 1.0, "y": 2.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": None}]),
]


def connect_message(field: dict, value, op: str = "c", source: dict | None = None, envelope: str = "schema",
                    before=None) -> bytes:
    """A Debezium change of a row (id, c) whose column c has the Connect ``field`` and the cell ``value``."""
    columns = [{"type": "int32", "optional": False, "field": "id"}, {**field, "optional": True, "field": "c"}]
    schema = {"type": "struct", "optional": False, "name": "s.t.Envelope", "fields": [
        {"type": "struct", "fields": columns, "optional": True, "name": "s.t.Value", "field": "before"},
        {"type": "struct", "fields": columns, "optional": True, "name": "s.t.Value", "field": "after"},
        {"type": "struct", "fields": [], "optional": False, "name": "io.debezium.connector.mysql.Source",
         "field": "source"},
        {"type": "string", "optional": False, "field": "op"}]}
    payload = {"before": before, "after": None if op == "d" else {"id": 1, "c": value},
               "source": source or {"version": "2.5.0.Final", "connector": "mysql", "db": "shop", "table": "t",
                                    "ts_ms": 1606233662000, "file": "mysql-bin.000003", "pos": 154, "row": 0},
               "op": op, "ts_ms": 1606233662345}
    if op == "d":
        payload["before"] = {"id": 1, "c": value}
    msg = {"schema": schema, "payload": payload} if envelope == "schema" else (
        {"payload": payload} if envelope == "payload" else payload)
    return json.dumps(msg).encode()


SOURCES = [
    # binlog positions (MySQL, MariaDB, or nameless with file and pos)
    *[{"connector": c, "file": f, "pos": p, "row": r}
      for c in ("mysql", "MySQL", "mariadb", None)
      for f, p, r in (("mysql-bin.000003", 154, 2), ("", 0, 0), (None, 5, None), (None, None, None),
                      ("mysql-bin.000003", None, 1), ("bin", 1, 1), ("bin.12 ", 1, 1), (5, 1, 1), ("b.7", "154", 1),
                      ("b.7", "x", 1), ("b.7", 1.5, 1), ("b.7", 1, "2"), ("b.\u0661", 1, 1), ("b.7", True, 1))],
    {"connector": "mysql", "pos": 7}, {"file": "b.1"}, {"connector": "mysql"},
    # log sequence numbers (PostgreSQL, or nameless with lsn)
    *[{"connector": c, **extra} for c in ("postgresql", None) for extra in (
        {"lsn": 46523128}, {"lsn": "0/2C5F6A8"}, {"lsn": "x/y"}, {"lsn": "0x1/2"}, {"lsn": None},
        {"sequence": '["46523120","46523128"]', "lsn": 46523128}, {"sequence": '[null,"46523128"]', "lsn": 1},
        {"sequence": '["1/A",null]', "lsn": 46523128}, {"sequence": '["1/A",null]', "lsn": None},
        {"sequence": "[1,2]", "lsn": 2}, {"sequence": "[1]", "lsn": 2}, {"sequence": "x", "lsn": 2},
        {"sequence": 5, "lsn": 2}, {"sequence": "", "lsn": 2}, {"sequence": " ", "lsn": 2}, {"sequence": None, "lsn": 2},
        {"sequence": ["1", "2"], "lsn": 3}, {"sequence": "[1.5,2]", "lsn": 2}, {"sequence": '[true,"2"]', "lsn": 2},
        {"sequence": "[01,2]", "lsn": 2}, {"sequence": '["1/g",2]', "lsn": 2})],
    # hex LSNs (SQL Server, Db2, or nameless with either)
    *[{"connector": c, **extra} for c in ("sqlserver", "db2", None) for extra in (
        {"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003", "event_serial_no": 1},
        {"commit_lsn": "NULL", "change_lsn": ""}, {"commit_lsn": None, "change_lsn": "00000000:00000000:0000"},
        {"change_lsn": "0027:zz"}, {"change_lsn": 5}, {"change_lsn": "a" * 40}, {"commit_lsn": "1::2"},
        {"change_lsn": "00000000:00000000:0000000000000a1f", "event_serial_no": "x"},
        {"commit_lsn": "0F", "event_serial_no": None})],
    # system change numbers (Oracle, or nameless with scn)
    *[{"connector": c, **extra} for c in ("oracle", None) for extra in (
        {"scn": "2122184", "commit_scn": "2122185"}, {"scn": "2122184", "commit_scn": ""}, {"scn": "2122184"},
        {"scn": None, "commit_scn": "1"}, {"scn": 5, "commit_scn": None}, {"scn": "x"},
        {"scn": "1", "commit_scn": True})],
    {"connector": "mongodb", "ord": 1}, {"ord": 1}, {"connector": "vitess", "pos": 5}, {"connector": True},
    {"connector": 5}, {"connector": ""}, {"connector": "\u00e9"},
]


def position_variants() -> list[bytes]:
    """A change with each of SOURCES (names, time and a transaction added), its time written otherwise too."""
    out = []
    for extra in SOURCES:
        source = {"db": "shop", "table": "t", "ts_ms": 1606233662000,
                  **{k: v for k, v in extra.items() if v is not None}}
        out.append(connect_message({"type": "string"}, "x", source=source))
        out.append(connect_message({"type": "string"}, "x", source={**source, "ts_ms": "1606233662000"}))
    for source in ({"db": "shop", "table": "t", "gtid": "abc:1"}, {"db": "shop", "table": "t", "txId": 557},
                   {"db": "shop", "schema": "public", "table": "t", "ts_ms": 1}, {"db": "", "table": "t"},
                   {"db": "shop", "schema": "", "table": "t"}, {"table": "t", "ts_ms": 1.5}, {"db": "shop"},
                   {"db": 5, "table": "t"}, {"db": "shop", "table": "t", "ts_ms": None}):
        out.append(connect_message({"type": "string"}, "x", source=source))
    return out


def connect_inputs() -> list[bytes]:
    """debezium-json's declared inputs, cells of every Connect kind in each op and envelope, and positions."""
    out = declared_inputs("debezium-json") + position_variants()
    for field, values in CONNECT_CELLS:
        for value in values:
            out.append(connect_message(field, value))
        for op, envelope in (("u", "payload"), ("d", "schema"), ("r", "bare")):
            out.append(connect_message(field, values[0], op=op, envelope=envelope, before={"id": 1, "c": values[0]}))
    return out


# Extended JSON values of every kind ext_typed reads (debezium-bson), in the spellings it types and others it keeps as
# written or cannot read: one document field each.
OID = {"$oid": "5f1a2b3c4d5e6f7a8b9c0d1e"}
EXTENDED_VALUES = [
    None, True, False, 0, -1, 2147483647, 2147483648, -2147483649, 18446744073709551615, 1.5, 1e5, -0.0, float("inf"),
    "s", "", "\u00e9\u4e2d\U0001f600", "a\"b\\c\n", [], [1, "a", OID, None], {}, {"a": 1, "b": {"$numberLong": "5"}},
    OID, {"$oid": "5F1A2B3C4D5E6F7A8B9C0D1E"}, {"$oid": "5f1a"}, {"$oid": 5}, {"$oid": "5f1a2b3c4d5e6f7a8b9c0d1e", "x": 1},
    {"$numberLong": "5"}, {"$numberLong": "-5"}, {"$numberLong": "5.0"}, {"$numberLong": 5}, {"$numberInt": "7"},
    {"$numberLong": "\u0665"},
    *[{"$numberDouble": t} for t in ("1.5", "NaN", "Infinity", "-Infinity", "1e400", "abc", "-")],
    *[{"$numberDecimal": t} for t in ("1.50", "-0", "1E+3", "+1", ".5", "1.", "NaN", "Infinity", " 1", "1_000", "abc",
                                     "\u0661")],
    *[{"$date": t} for t in (0, -1, 1704063600123, 10**20, {"$numberLong": "1704063600123"}, {"$numberLong": 5},
                            {"$numberLong": "x"}, "2023-05-17T09:18:31.439Z", "2023-05-17T09:18:31Z",
                            "2023-05-17T09:18:31.1234567+05:30", "2023-05-17T09:18:31-0800", "1969-12-31T23:59:59.5Z",
                            "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "2023-02-30T00:00:00Z",
                            "2023-05-17T24:00:00Z", "2023-05-17T09:18:31.12345678901234567890123Z",
                            "2023-05-17 09:18:31Z", "\u06602023-05-17T09:18:31Z", "bad", 1.5, "17")],
    {"$binary": "AAEC", "$type": "00"}, {"$binary": "AAEC", "$type": "80"}, {"$binary": "AAEC", "$type": "5"},
    {"$binary": "AAEC", "$type": "g"}, {"$binary": "A", "$type": "00"}, {"$binary": "", "$type": "00"},
    {"$type": "00", "$binary": "AAEC"}, {"$binary": {"base64": "AAEC", "subType": "04"}},
    {"$binary": {"base64": "AAEC"}}, {"$binary": "AAEC"},
    {"$timestamp": {"t": 1, "i": 2}}, {"$timestamp": {"t": "1", "i": 2}}, {"$timestamp": {"t": 1}},
    {"$regularExpression": {"pattern": "a.*", "options": "i"}}, {"$regularExpression": {"pattern": "a", "options": "I"}},
    {"$regex": "a", "$options": "i"}, {"$options": "i", "$regex": "a"}, {"$regex": "a"},
    {"$minKey": 1}, {"$maxKey": 1}, {"$undefined": True}, {"$symbol": "x"}, {"$code": "f()", "$scope": {}},
]


def document_message(doc: dict | None, op: str = "c", before: dict | None = None, description: dict | None = None,
                     spaced: bool = False, envelope: str = "bare", source: dict | None = None) -> bytes:
    """A Debezium MongoDB change whose documents are the Extended JSON text of ``doc`` and ``before`` (compact as
    our encoder writes them, or ``spaced`` as the connector's writer does)."""
    text = (lambda d: None if d is None else json.dumps(d, separators=(", ", ": ") if spaced else (",", ":")))
    payload = {"before": text(before), "after": text(doc), "updateDescription": description,
               "source": source or {"version": "2.5.0.Final", "connector": "mongodb", "name": "m", "rs": "rs0",
                                    "db": "shop", "collection": "c", "ts_ms": 1704063600000, "ord": 3},
               "op": op, "ts_ms": 1704063600123}
    if envelope == "schema":
        return json.dumps({"schema": DOCUMENT_SCHEMA, "payload": payload}).encode()
    return json.dumps({"payload": payload} if envelope == "payload" else payload).encode()


# The Connect schema of the MongoDB connector's JsonConverter messages (schemas.enable=true)
DOCUMENT_SCHEMA = {"type": "struct", "optional": False, "name": "m.shop.c.Envelope", "fields": [
    {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": "before"},
    {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": "after"},
    {"type": "struct", "optional": True, "name": "io.debezium.connector.mongodb.changestream.updatedescription",
     "field": "updateDescription", "fields": [
         {"type": "array", "items": {"type": "string", "optional": False}, "optional": True,
          "field": "removedFields"},
         {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1,
          "field": "updatedFields"}]},
    {"type": "struct", "optional": False, "name": "io.debezium.connector.mongo.Source", "field": "source",
     "fields": [{"type": "string", "optional": False, "field": "connector"}]},
    {"type": "string", "optional": True, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"}]}


def document_changes(value) -> list[bytes]:
    """Changes of a document with one field of ``value``: inserted, deleted, updated (its update described)."""
    doc, old = {"_id": OID, "v": value}, {"_id": OID, "v": 1}
    described = {"removedFields": None, "updatedFields": json.dumps({"v": value}), "truncatedArrays": None}
    return [document_message(doc), document_message(doc, spaced=True), document_message(None, "d", before=doc),
            document_message(None, "u", before=old, description=described),
            document_message(None, "u", before=doc, description=described, spaced=True)]


def document_inputs() -> list[bytes]:
    """debezium-bson's declared inputs, documents of every Extended JSON kind, updates described every way, and
    the positions of every connector."""
    out = declared_inputs("debezium-bson")
    for value in EXTENDED_VALUES:
        out += document_changes(value)
    doc, old = {"_id": 7, "a": 1, "b": "x"}, {"_id": 7, "a": 2147483648, "b": "x"}
    for described in ({"removedFields": None, "updatedFields": '{"a":2}', "truncatedArrays": None},
                      {"removedFields": [], "updatedFields": '{"a":2}', "truncatedArrays": None},
                      {"removedFields": ["b"], "updatedFields": '{"a":2}', "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": '{"a":2}', "truncatedArrays": [{"field": "c", "size": 1}]},
                      {"removedFields": None, "updatedFields": None, "truncatedArrays": None},
                      {"updatedFields": '{"a":2}'}, {"removedFields": None, "updatedFields": '{"_id":7,"a":2}',
                                                     "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": '{"a":2,"_id":8}', "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": '{"a": 2}', "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": '{"a":2.5}', "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": '{"b":5}', "truncatedArrays": None},
                      {"removedFields": None, "updatedFields": 5, "truncatedArrays": None}, "x", None):
        for before in (doc, old, None):
            out.append(document_message(None, "u", before=before, description=described))
            out.append(document_message(None, "u", before=before, description=described, spaced=True))
    out += [document_message(doc, "u", before=old), document_message(doc, "c", before=old),
            document_message(doc, "d", before=old), document_message(None, "d"), document_message(doc, "x"),
            document_message(doc, envelope="payload"), document_message({}), document_message(None, "c"),
            *[document_message(doc, envelope="schema") for _ in range(2)],
            document_message(None, "d", before=doc, envelope="schema"),
            document_message(None, "u", before=old, envelope="schema",
                             description={"removedFields": None, "updatedFields": '{"a":2}', "truncatedArrays": None}),
            json.dumps({"schema": {"type": 5}, "payload": json.loads(document_message(doc))}).encode()]
    for extra in SOURCES:
        source = {"db": "shop", "collection": "c", "ts_ms": 1704063600000, **{k: v for k, v in extra.items()
                                                                            if v is not None}}
        out.append(document_message(doc, source=source))
    for source in ({"connector": "mongodb", "db": "shop", "collection": "c", "ord": "3", "ts_ms": "5"},
                   {"connector": "mongodb", "db": "", "collection": "c", "ts_ms": 5},
                   {"connector": "mongodb", "collection": "", "ord": 1}, {"db": "shop", "collection": 5},
                   {"connector": "mongodb", "db": "shop", "collection": "c", "ord": 1.5}):
        out.append(document_message(doc, source=source))
    return out


# Shell-JSON values (drs-mongo): each type in the form the encoder writes it back, and spellings the codec reads
# otherwise (kept as fixes), keeps as written or names as errors.
SHELL_OID = 'ObjectId("5f1a2b3c4d5e6f7a8b9c0d1e")'
SHELL_VALUES = [
    '"abc"', '""', '"a\\"b"', '"tab\\there"', '"\\\\"', '"\\u0001"', '"\\u001f"', '"\\u0041"', '"\\u000a"',
    '"\\/"', '"\\U0001"', '"\\u00e9"', '"é"', '"😀"', '"\\ud83d\\ude00"', '"\\ud800"', '"a\tb"', '"\x7f"',
    '"\u00a0"', "'abc'", '"unterminated',
    "5", "-5", "-0", "007", "2147483647", "2147483648", "-2147483649", "99999999999999999999999", "1.5", "1.50",
    "1e5", "-1.5E-3", "1.", ".5", "1.5.3", "1e", "-", "-Infinity", "Infinity", "NaN", "0x10",
    "null", "true", "false", "nullx", "True", "foo",
    "NumberLong(5)", "NumberLong(-5)", 'NumberLong("5")', 'NumberLong("9223372036854775807")',
    "NumberLong(9223372036854775807)", "NumberLong(007)", "NumberLong( 5)", "NumberLong(5.5)", "NumberInt(5)",
    'NumberInt("5")', "NumberInt(99999999999)", "NumberInt(-0)",
    'NumberDecimal("1.50")', 'NumberDecimal("-1E+5")', 'NumberDecimal("1e-5")', 'NumberDecimal("NaN")',
    'NumberDecimal(" 1")', "NumberDecimal(1.5)", 'NumberDecimal("1_000")', 'NumberDecimal(".5")',
    SHELL_OID, 'ObjectId("5F1A2B3C4D5E6F7A8B9C0D1E")', 'ObjectId("xyz")', "ObjectId()",
    'ObjectId ("5f1a2b3c4d5e6f7a8b9c0d1e")',
    'new BinData(0, "AQID")', 'new BinData(4, "AQIDBA==")', 'new BinData(255, "")', 'BinData(0, "AQID")',
    'new BinData(00, "AQID")', 'new BinData(256, "AQID")', 'new BinData(0, "AQI")', 'new  BinData(0, "AQID")',
    'new BinData(0,"AQID")',
    'ISODate("2023-05-17T09:18:31.439Z")', 'ISODate("2023-05-17T09:18:31Z")', 'ISODate("2023-05-17T09:18:31.439123Z")',
    'ISODate("1969-12-31T23:59:59.500Z")', 'ISODate("0001-01-01T00:00:00.000Z")', 'ISODate("9999-12-31T23:59:59.999Z")',
    'ISODate("0000-01-01T00:00:00.000Z")', 'ISODate("2023-02-30T00:00:00.000Z")', 'ISODate("2023-05-17T24:00:00.000Z")',
    'ISODate("2023-05-17T09:18:31.439+08:00")', "new Date(1684315111439)", "new Date(-62198755200000)",
    "Timestamp(1684315111, 1)", "Timestamp(1,2)", "Timestamp(-1, 2)", "Timestamp(01, 2)",
    "/ab+c/i", "MinKey", "MaxKey", "undefined", 'UUID("0123456789abcdef0123456789abcdef")',
    '{"a": 1, "b": [1, 2]}', '{"a":1}', "{}", "[]", '[1, "x", null, true, {"k": NumberLong(5)}]',
    '{"a": ObjectId("5f1a2b3c4d5e6f7a8b9c0d1e"), "b": new BinData(0, "AQ==")}', '{"a\\u0041": 1}',
    '{"a": "x\\ty"}', '{"a": "x, y: z"}', "{a: 1}", "{'a': 1}", "[1 , 2]", '{"a": foo}', '{"a": /x/}',
    '{"a": Foo()}', '{"a": new Foo(1, [2])}', '{"a": new  Foo(1)}', '{"a": 1.5e3}', '{"a": -Infinity}',
    '{"a": {"b": {"c": [[], {}]}}}', "[" * 70 + "]" * 70, '{"a": 1, "a": 2}', '{"a": 1}x', '{"a": 1} ',
]
SHELL_NAMES = ['"_id"', '"a.b"', '"$x"', '"a\\"b"', '"\\u0001"', '"é"', '""', "a", '"a\tb"']


def shell_message(op: str, value, where=None, record_type="insert", **header) -> bytes:
    """A DRS oplog entry (drs-mongo) as the codec writes one, with ``header`` keys set (None: left out)."""
    msg = {"id": 601, "op": op, "dbType": "MongoDB", "db": "shop", "coll": "c", "value": value, "where": where,
           "recordType": record_type, "extra": record_type, "es": 1704063600000, "ts": 1704063600000,
           "clusterTime": None}
    for k, v in header.items():
        if v is None:
            msg.pop(k)
        else:
            msg[k] = v
    return json.dumps(msg, ensure_ascii=False).encode()


def shell_changes(field: str, value: str) -> list[bytes]:
    """A document with one field ``field`` of ``value``: inserted, deleted, updated by $set, replaced."""
    key = f'{{"_id": {SHELL_OID}}}'
    doc = f'{{"_id": {SHELL_OID}, {field}: {value}}}'
    return [shell_message("INSERT", doc), shell_message("DELETE", doc, record_type="doc"),
            shell_message("UPDATE", f'{{"$set": {{{field}: {value}}}}}', key, "update"),
            shell_message("UPDATE", doc, key, "replace")]


def shell_inputs() -> list[bytes]:
    """drs-mongo's declared inputs, documents of every shell-JSON kind and spelling, updates and keys written every
    way, and header keys of every kind."""
    out = declared_inputs("drs-mongo")
    for value in SHELL_VALUES:
        out += shell_changes('"v"', value)
    for name in SHELL_NAMES:
        out += shell_changes(name, "1")
    key, doc = f'{{"_id": {SHELL_OID}}}', f'{{"_id": {SHELL_OID}, "a": 1}}'
    for value, where, kind in [
            ('{"$set": {"a": 2}}', key, "update"), ('{"$set":{"a":2}}', key, "update"),
            ('{"$set": {}}', key, "update"), (f'{{"$set": {{"_id": {SHELL_OID}, "a": 2}}}}', key, "update"),
            ('{"$set": {"_id": 5}}', key, "update"), ('{"$set": {"a": 2}, "$unset": {"b": 1}}', key, "update"),
            ('{"$unset": {"b": ""}}', key, "update"), ('{"$v": 2, "$set": {"a": 2}}', key, "update"),
            ('{"$unset": {"b": true}, "$set": {"a": 2}}', key, "update"), ('{"$unset": {}}', key, "update"),
            ('{"$set": {"a": 2}, "$unset": {"a": 1}}', key, "update"), ('{"$unset": {"_id": 1}}', key, "update"),
            ('{"$unset": {"b": 1, "b": 2}}', key, "update"), ('{"$unset": {"b": {"x": [1, 2]}, "c": ""}}', key,
                                                             "update"),
            ('{"$unset":{"b":1}}', key, "update"), ('{"$set": {"a": 2}, "$set": {"b": 3}}', key, "update"),
            ('{"$unset": {"b": 1}, "$unset": {"c": 1}}', key, "update"), ('{"$unset": {"b": 01}}', key, "update"),
            ('{"$unset": {"b": foo}}', key, "update"), ('{"$unset": 5}', key, "update"), ("{}", key, "update"),
            ('{"$inc": {"a": 1}}', key, "update"), ('{"$set": {"a": 2}}', "{}", "update"),
            ('{"$set": {"a": 2}}', '{"k": 1, "j": "x"}', "update"), ('{"$set": {"a": 2}}', None, "update"),
            ('{"$set": {"a": 2}}', '{"_id": 5}', "update"), ('{"$set": {"a": 2}}', key, "replace"),
            ('{"$set": {"a": 2}}', "[]", "update"), ('{"$set": {"a": 2}}', "5", "update"),
            (doc, key, "replace"), (doc, '{"_id": "5f1a2b3c4d5e6f7a8b9c0d1e"}', "replace"), (doc, "{}", "replace"),
            ('{"a": 1}', key, "replace"), ('{"a": 1, "_id": 5}', '{"_id": 5.0}', "replace"), (doc, key, "doc"),
            (doc, key, None), (doc, key, 5)]:
        out.append(shell_message("UPDATE", value, where, kind))
    for op, value, where, kind in [("INSERT", doc, None, "update"), ("INSERT", doc, key, "insert"),
                                   ("INSERT", "{}", None, "insert"), ("INSERT", '{"a": 1}', None, "insert"),
                                   ("INSERT", "[]", None, "insert"), ("INSERT", 5, None, "insert"),
                                   ("INSERT", None, None, "insert"), ("INSERT", doc, None, None),
                                   ("DELETE", key, None, "replace"), ("DELETE", key, None, None),
                                   ("DELETE", key, None, "insert"), ("DELETE", key, key, "doc"),
                                   ("DELETE", '{"k": 1, "j": "x"}', None, "doc"), ("DELETE", "{}", None, "doc"),
                                   ("DDL", '{"create": "c"}', None, "ddl"), ("REPLACE", doc, key, "replace")]:
        out.append(shell_message(op, value, where, kind))
    for header in [{"id": "601"}, {"id": None}, {"id": 6.5}, {"es": "1704063600000"}, {"es": None}, {"es": 1.5},
                   {"ts": None}, {"ts": "5"}, {"extra": "other"}, {"extra": None}, {"dbType": "mongo"},
                   {"clusterTime": "x"}, {"db": ""}, {"db": None}, {"db": " shop "}, {"coll": ""}, {"coll": 5},
                   {"other": [1, {"a": 2}]}, {"where": None}]:
        out.append(shell_message("INSERT", doc, **header))
    return out


DECLARED = [f for f in available_formats() if jvm_declared(get_codec(f))]
INPUTS = {**{f: partial(declared_inputs, f) for f in DECLARED}, "canal-json": canal_inputs,
          "debezium-json": connect_inputs, "debezium-bson": document_inputs, "drs-mongo": shell_inputs}
# How much of what the Python side takes the JVM must take. The declared formats' inputs are mostly values of
# every JSON kind (booleans, objects) in cells and metadata, DDL and control records, left to Python by design.
TAKEN_SHARE = {"canal-json": 0.6, "maxwell-json": 0.4, **{f: 0.3 for f in DECLARED if f != "maxwell-json"}}


# Codecs whose container fast paths have JVM twins (``ContainerDecoder.jvm_rows``), with their inputs: the
# container records the Python fast path's own tests use (``test_dts_avro_rows``: fixtures, the scenario and their
# mutations) as (writer schema, datum).
CONTAINER_TWINS = [f for f in available_formats() if jvm_container_twins(get_codec(f))]


def dts_avro_records() -> list[tuple[dict, dict]]:
    """(writer schema, datum as the encoder writes it) of every fast-path test record of dts-avro."""
    from cdc_codecs.dts.dts_avro import RECORD14, RECORD15, writable
    from test_dts_avro_rows import mutations, seeds

    def written(datum: dict) -> dict:
        return {**datum, **{side: [writable(v) for v in datum[side]] for side in ("beforeImages", "afterImages")
                            if isinstance(datum[side], list)}}

    out = [(RECORD15 if born else RECORD14, written(m)) for datum, born in seeds() for m in mutations(datum)]
    # text the vendor JSON must escape as orjson does: quotes, backslashes, every control character, non-ASCII
    odd = "".join(map(chr, range(32))) + '"\\/\x7f\u00e9\u4e2d\U0001f600'
    for schema, raw in day_records("dts-avro")[:40:4]:
        datum = avro_loads(schema, raw)[0]
        out.append((schema, written(dict(datum, sourcePosition=odd, safeSourcePosition=odd[::-1], sourceTxid=odd,
                                         tags={**datum["tags"], odd: odd, "k": ""}))))
    return out


CONTAINER_INPUTS = {"dts-avro": dts_avro_records}


def _dts_schema():
    from cdc_codecs.dts.dts_avro import RECORD15

    return RECORD15


# The writer schema of the format's own messages (what its Avro topic archives hold).
WRITER_SCHEMAS = {"dts-avro": _dts_schema}


def one_line(raw: bytes) -> bool:
    """A message that is one line as the replay reads lines (the block tests cover the splitting)."""
    return b"\n" not in raw and raw.rstrip(b"\r") == raw and bool(raw.strip())


def python_rows(fmt: str, raw: bytes, line: int):
    """What the declared decode must equal: the codec's ``decode`` (None where it names an error: the JVM must
    decline those)."""
    codec = get_codec(fmt)
    try:
        events = codec.decode(raw, Position("archive", -1, line))
        check_events(codec.name, events)
    except DecodeError:
        return None
    records = [dict(to_record(e), first_of_record=i == 0) for i, e in enumerate(events)]
    return [{f: r[f] for f in TWIN_FIELDS} for r in records]


def plain_dicts(rows):
    """A fast path's DECODED rows as the twin's fields read back from Arrow (None: declined)."""
    if rows is None:
        return None
    at = {name: i for i, name in enumerate(DECODED_ROW)}
    out = []
    for r in rows:
        d = {f: r[at[f]] for f in TWIN_FIELDS}
        d.update(before=None if d["before"] is None else list(d["before"].items()),
                 after=None if d["after"] is None else list(d["after"].items()),
                 primary_key=list(d["primary_key"]), sequence=list(d["sequence"]),
                 columns=[dict(c) for c in d["columns"]], removed_columns=list(d["removed_columns"] or ()))
        out.append(d)
    return out


def jvm_rows(spark, fmt: str, raws: list[bytes]) -> list:
    """What the replay's decode step reads from the declared decode (``LineRows``), one message a block: its rows,
    or None (declined)."""
    from cdc_jobs import jvm
    from cdc_jobs.transforms.jvm_decode import line_rows

    assert jvm.available(spark), "the JVM side did not build (javac missing?)"
    blocks = spark.createDataFrame([("m.jsonl", i + 1, r) for i, r in enumerate(raws)],
                                   "pos_source string, first_line long, value binary")
    lines = line_rows(blocks, fmt)
    assert tuple(lines.columns) == ("pos_source", *LINE_FIELDS)
    out: list = [None] * len(raws)
    by_line: dict[int, list] = {}
    for x in lines.toArrow().to_pylist():  # maps as lists of (key, value) in order
        by_line.setdefault(x["pos_offset"], []).append(x)
    assert sorted(by_line) == list(range(1, len(raws) + 1))
    for line, rows in by_line.items():
        if rows[0]["value"] is not None:
            assert len(rows) == 1 and rows[0]["value"] == raws[line - 1]  # declined: the exact bytes
            continue
        out[line - 1] = [{f: x[f] for f in TWIN_FIELDS} for x in rows]
    return out


def compared(jvm: list, python: list, raws: list[bytes]) -> tuple[int, int]:
    """(messages the JVM took, messages the Python side took); fails where the JVM took one that Python declines
    or rejects, or gave other rows."""
    for raw, got, expected in zip(raws, jvm, python):
        if got is not None:
            assert expected is not None, f"the JVM took a message the Python side declines: {raw[:300]!r}"
            assert got == expected, raw[:300]
    return sum(t is not None for t in jvm), sum(p is not None for p in python)


def test_a_drs_json_c_codec_of_another_zone_leaves_timestamps_to_python():
    from cdc_codecs.drs.drs_json_c import DrsJsonCCodec

    declared = json.loads(jvm_declaration_text(get_codec("drs-json-c")))
    assert declared["value_conversions"]["timestamp"] == "local_seconds+08:00"
    other = json.loads(jvm_declaration_text(DrsJsonCCodec("UTC")))
    assert "timestamp" not in other["value_conversions"] and other["decline_families"] == ["timestamp"]


def test_a_gaussdb_message_of_a_postgresql_table_decodes_in_the_jvm(spark):
    """What DRS writes for a PostgreSQL table (a schema, bytea, bit, timestamptz) is taken, to the codec's rows; a
    timestamptz the codec would write back otherwise (+0800) is left to it."""
    msg = {"columnType": {"a": "integer", "b": "bytea", "c": "bit(4)", "z": "timestamp with time zone",
                          "n": "numeric(10,2)", "r": "int4range", "v": "character varying(8)"},
           "dbType": "GaussDB Primary/Standby", "schema": "public", "opType": "UPDATE", "id": 9, "es": 5000,
           "database": "shop", "table": "t", "type": "UPDATE", "isDdl": False, "sql": "",
           "sqlType": {"a": 4, "b": 15, "c": 20, "z": 46, "n": 2, "r": 42, "v": 12},
           "data": [{"a": "1", "b": "00ff", "c": "0101", "z": "2010-01-01 14:30:00+05:30", "n": "1.50",
                     "r": "[1,5)", "v": "x"}],
           "old": [{"a": "1", "b": "", "c": "0000", "z": "2010-01-01 14:30:00+08", "n": "1.25", "r": None,
                    "v": "y"}], "pkNames": ["a"]}
    other = json.loads(json.dumps(msg))
    other["data"][0]["z"] = "2010-01-01 14:30:00+0800"
    raws = [json.dumps(msg).encode(), json.dumps(other).encode()]
    taken, declined = jvm_rows(spark, "drs-gaussdb", raws)
    assert taken == python_rows("drs-gaussdb", raws[0], 1) and declined is None
    row = taken[0]
    assert (row["schema"], row["table_name"]) == ("public", "shop.public.t")
    assert dict(row["after"]) == {"a": "1", "b": "AP8=", "c": "5", "z": "2010-01-01 14:30:00 +05:30", "n": "1.50",
                                  "r": "[1,5)", "v": "x"}
    assert [c["jdbc_type"] for c in row["columns"]] == [4, -2, -7, 2014, 2, 1111, 12]


def test_the_record_key_names_the_primary_key_of_a_debezium_change(spark):
    """A Kafka record's key names the primary key (a connector writes the key columns there, bare or in a Connect
    envelope): the declared decode reads the names as the codec does; a key it cannot read, or one naming a column the
    change's keyed image lacks (which the codec would read from the key, or name as an error), is left to the codec."""
    codec = get_codec("debezium-json")
    decoder = spark._jvm.cdcreplay.codecs.DeclaredJson(jvm_declaration_text(codec))
    wrapped = b'{"schema":{"type":"struct","fields":[{"type":"int32","field":"id"}]},"payload":{"id":1}}'
    names = {b'{"id":1}': ["id"], wrapped: ["id"], b'{"c":"x","id":1}': ["c", "id"], b"{}": [], b"": [], None: []}
    others = [b'{"other":1}', b"5", b'"k"', b"not json", b'{"id":1,"id":2}',
              b'{"schema":{},"payload":{"id":1},"x":1}']
    for raw in (connect_message({"type": "string"}, "x"), connect_message({"type": "string"}, "x", op="d"),
                connect_message({"type": "string"}, "x", op="u", envelope="bare", before={"id": 1, "c": "w"})):
        for key in [*names, *others]:
            events = codec.decode(raw, Position("t", 0, 1, key=key))
            got = decoder.rows(bytearray(raw), 0, len(raw), None, None if key is None else bytearray(key))
            if key in names:
                assert got is not None and list(got[0][7]) == names[key] == list(events[0].primary_key), key
            else:
                assert got is None, key


def java_rows(got) -> list[dict] | None:
    """A declared decoder's rows (py4j: Object[] in ``PlainDecoder.FIELDS`` order) as ``python_rows`` gives them."""
    if got is None:
        return None
    out = []
    for r in got:
        d = dict(zip(TWIN_FIELDS, list(r) + [None] * (len(TWIN_FIELDS) - len(r))))
        d.update(before=None if d["before"] is None else list(d["before"].items()),
                 after=None if d["after"] is None else list(d["after"].items()),
                 columns=[dict(zip(("name", "type_name", "jdbc_type", "number"), c)) for c in d["columns"]],
                 primary_key=list(d["primary_key"]), sequence=list(d["sequence"]),
                 removed_columns=list(d["removed_columns"] or ()))  # none: an empty list, as the adapters write
        out.append(d)
    return out


def test_the_record_key_gives_a_mongodb_change_its_document_key(spark):
    """A Debezium MongoDB change's record key holds the document's _id as Extended JSON (a relational row's: its key
    columns): the declared decode reads it as the codec does, for the primary key, a delete's or an update's
    before and the key's types; a key it cannot read as the codec would is left to the codec."""
    codec = get_codec("debezium-bson")
    decoder = spark._jvm.cdcreplay.codecs.DeclaredJson(jvm_declaration_text(codec))
    ids = [OID, "abc", 5, 2**40, {"order_id": 7, "line_no": 2}, {"a": {"$numberDecimal": "1.5"}}, {}, None, [1],
           {"$date": 5}]
    keys = [None, b"", *[json.dumps({"id": json.dumps(i)}).encode() for i in ids],
            json.dumps({"schema": {"type": "struct"}, "payload": {"id": json.dumps(OID)}}).encode(),
            b'{"x":"1"}', b'{"id":null}', b"5"]
    # Keys it leaves to the codec: a number or text that is no Extended JSON where the _id's belongs, a wrapper the
    # codec keeps as written, duplicate names, no JSON at all (a key with no value once crashed the JVM's task).
    unread = [json.dumps({"id": json.dumps({"$symbol": "x"})}).encode(), b'{"id":5}', b'{"id":"abc"}',
              b'{"id":"[1,]"}', b'{"id":""}', b'{"id":" "}', b" ", b"not json", b'{"id":"1","id":"2"}']
    described = {"removedFields": None, "updatedFields": '{"v":2}', "truncatedArrays": None}
    messages = [document_message({"v": 1}), document_message({"_id": 9, "v": 1}), document_message(None, "d"),
                document_message(None, "d", before={"order_id": 7, "v": 1}),
                document_message(None, "u", description=described), document_message({"_id": 9, "v": 2}, "u"),
                document_message(None, "u", before={"order_id": 7, "line_no": 2, "v": 1}, description=described)]
    taken, decoded = 0, 0
    for raw in messages:
        for key in keys + unread:
            try:
                events = codec.decode(raw, Position("t", 0, 1, key=key))
                check_events(codec.name, events)
                expected = [{f: r[f] for f in TWIN_FIELDS}
                            for r in [dict(to_record(e), first_of_record=i == 0) for i, e in enumerate(events)]]
                decoded += 1
            except DecodeError:
                expected = None
            got = java_rows(decoder.rows(bytearray(raw), 0, len(raw), None, None if key is None else bytearray(key)))
            assert got is None or key not in unread, (raw, key)
            if got is not None:
                assert got == expected, (raw, key)
                taken += 1
            decoded -= key in unread and expected is not None
    assert taken >= 0.85 * decoded, (taken, decoded)  # the rest: changes it leaves to the codec


# Values as the Java driver writes them (each type in its one form): DRS's own messages, which the JVM decodes.
DRIVER_SPELLED = ['"abc"', '"a\\"b"', '"\\u0001"', '"é"', "5", "2147483648", "1.50", "null", "true", "NumberLong(5)",
                  'NumberLong("9223372036854775807")', "NumberInt(5)", 'NumberDecimal("1.50")', SHELL_OID,
                  'new BinData(4, "AQIDBA==")', 'ISODate("1969-12-31T23:59:59.500Z")', "Timestamp(1684315111, 1)",
                  '{"a": 1, "b": [1, 2]}', '[1, "x", null, {"k": NumberLong(5)}]']
# Updates as DRS writes them: removed fields ($unset, Huawei's example) beside set ones, in either order.
UNSET_UPDATES = ['{"$unset": {"c1": true}, "$set": {"column1": "aaa"}}', '{"$set": {"a": 2}, "$unset": {"b": ""}}',
                 '{"$unset": {"b": 1, "c": {"x": [1, 2]}}}']
# The same values spelled otherwise: decoded by the codec, which keeps the spelling as a fix of the message.
RESPELLED = ['"\\u0041"', 'NumberLong("5")', "NumberLong( 5)", 'new BinData(0,"AQID")', "BinData(0, \"AQID\")",
             'ISODate("2023-05-17T09:18:31Z")', "new Date(1684315111439)", "Timestamp(1,2)", '{"a":1}', "[1 , 2]"]


def test_a_drs_mongo_document_in_the_drivers_spelling_decodes_in_the_jvm(spark):
    """Inserts, deletes, $set updates and replaces of a document with a field of each BSON type as the Java driver
    writes it, and updates that remove fields ($unset), decode in the JVM, to the codec's rows; the same values
    spelled otherwise (the codec keeps the spelling as a fix, so that a re-encode writes it back) are left to the
    codec."""
    def both(values: list[str]) -> tuple[list, list]:
        raws = [raw for v in values for raw in shell_changes('"v"', v)]
        return jvm_rows(spark, "drs-mongo", raws), [python_rows("drs-mongo", r, 1) for r in raws]

    jvm, python = both(DRIVER_SPELLED)
    assert all(p is not None and "fix" not in (p[0]["vendor"] or "") for p in python)
    assert jvm == python
    updates = [shell_message("UPDATE", u, f'{{"_id": {SHELL_OID}}}', "update") for u in UNSET_UPDATES]
    python = [python_rows("drs-mongo", r, 1) for r in updates]
    assert all(p[0]["removed_columns"] and "fix" not in p[0]["vendor"] for p in python)
    assert jvm_rows(spark, "drs-mongo", updates) == python
    jvm, python = both(RESPELLED)
    assert all(p is not None and '"fix"' in p[0]["vendor"] for p in python)
    assert jvm == [None] * len(python)


@pytest.mark.parametrize("fmt", ["drs-json", "drs-json-c"])
def test_a_bit_0_column_is_bits_where_the_codec_reads_it_so(spark, fmt):
    """Canal's bytes read a bit(0) column as binary; DRS's family is bit, whose text stays as written. (The JVM
    once applied Canal's rule everywhere and turned DRS's "[1, 2]" into base64.)"""
    msg = {"mysqlType": {"a": "int", "b": "bit(0)"}, "id": 9, "es": 5000, "database": "shop", "table": "t",
           "type": "INSERT", "isDdl": False, "sql": "", "sqlType": {"a": 4, "b": -7},
           "data": [{"a": "1", "b": "[1, 2]"}], "old": None, "pkNames": ["a"]}
    raw = json.dumps(msg).encode()
    got = jvm_rows(spark, fmt, [raw])[0]
    assert got is not None and got == python_rows(fmt, raw, 1)
    assert dict(got[0]["after"])["b"] == "[1, 2]"


def test_every_declared_format_has_inputs():
    assert DECLARED and set(DECLARED) <= set(INPUTS)


@pytest.mark.parametrize("fmt", DECLARED)
def test_declared_rows_equal_the_python_decode(spark, fmt):
    raws = [r for r in INPUTS[fmt]() if one_line(r)]
    python = [python_rows(fmt, r, i + 1) for i, r in enumerate(raws)]
    taken, python_taken = compared(jvm_rows(spark, fmt, raws), python, raws)
    # Most of what the codec decodes, the JVM takes too (it declines only rare shapes by design).
    assert python_taken > 500 and taken >= TAKEN_SHARE[fmt] * python_taken, (taken, python_taken, len(raws))


@pytest.mark.parametrize("fmt", DECLARED)
def test_declared_decode_takes_every_message_of_a_plain_day(spark, fmt):
    """A simulated day of two plain MySQL tables as the codec encodes it: the JVM decodes every message, to the
    rows the Python side gives (what a replay of such an archive runs on)."""
    raws = day_messages(fmt)
    got = jvm_rows(spark, fmt, raws)
    for i, raw in enumerate(raws):
        assert got[i] is not None and got[i] == python_rows(fmt, raw, i + 1), raw[:300]
    assert len(raws) > 2000


# Values spliced into a message as an extra key, for the checks the JVM makes before it trusts Jackson's reading:
# nesting about the Python readers' limit (the message is one level more; orjson writes 254 levels, and a message
# of more than 255 brackets is written again to check it), brackets beyond it side by side, -0 as a number and
# inside text, and text beyond ASCII at every offset of an eight-byte word: valid, overlong, a surrogate, beyond
# U+10FFFF, cut short, a stray continuation byte.
NESTED = [b"[" * d + b"]" * d for d in (252, 253, 254, 255, 300)] + [b"[" + b",".join([b"{}"] * 300) + b"]"]
NEGATIVE_ZERO = [b"-0", b"[-0]"]  # orjson reads it as 0: the JVM leaves it to Python
NUMBERS = [*NEGATIVE_ZERO, b"-0.0", b"-0e1", b'"-0"', b'"a-0b"', b'"x -0"']
UTF8 = [b"\xc3\xa9", "\u4e2d".encode(), "\U0001f600".encode(), b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80",
        b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8", b"\x80", b"\xff"]


def with_extra(raw: bytes, value: bytes) -> bytes:
    return raw[:-1] + b',"extra":' + value + b"}"


def raw_check_variants(raw: bytes) -> list[bytes]:
    spliced = [with_extra(raw, value) for value in NESTED + NUMBERS]
    spliced += [with_extra(raw, b'"' + b"x" * pad + char + b'"') for pad in range(8) for char in UTF8]
    return spliced + [b"\xef\xbb\xbf" + raw]


@pytest.mark.parametrize("fmt", ["canal-json", "oms-dataworks"])
def test_declared_decode_reads_bytes_and_nesting_as_python_does(spark, fmt):
    """Where the Python readers refuse a message (nesting beyond theirs, bytes that are not UTF-8, a byte order mark),
    the JVM declines; every other of these it takes (-0 aside), to the rows the codec gives: 300 objects side by
    side too, which a count of brackets used to decline."""
    seeds = day_messages(fmt)[:3]
    raws = [v for raw in seeds for v in raw_check_variants(raw)]
    python = [python_rows(fmt, r, i + 1) for i, r in enumerate(raws)]
    jvm = jvm_rows(spark, fmt, raws)
    compared(jvm, python, raws)
    left = [r for r, j, p in zip(raws, jvm, python) if p is not None and j is None]
    assert sorted(left) == sorted(with_extra(raw, z) for raw in seeds for z in NEGATIVE_ZERO), left
    assert sum(p is None for p in python) >= 3 * 60
    side_by_side = {with_extra(raw, NESTED[-1]) for raw in seeds}
    assert all(j is not None for r, j in zip(raws, jvm) if r in side_by_side)


# Keys that hold a dot, beside the keys the declarations name: found by the JVM sweep (fuzz_sweep.py --jvm, seed 35),
# where the declared decode fixed "checkpoi.tTime" as the path checkpoi -> tTime (written back as another object).
_ODW = ('{"version":"2.0","schema":{"source":{"dbType":"ob_mysql","dbName":"shop","schema":null,"table":"orders"},'
        '"column":[{"name":"id","type":"BIGINT"}],"pk":["id"]},"payload":{"before":null,"after":{"data":{"id":7}},'
        '"op":"INSERT","timestamp":{"eventTime":1647581000000,%s},"ddl":null,"scn":"42"}%s}')
DOTTED_KEYS = {"oms-dataworks": [_ODW % ('"checkpoi.tTime":1647581000', ""),
                                 _ODW % ('"checkpointTime":1647581000', ',"payload.op":"DELETE"'),
                                 _ODW % ('"checkpointTime":1647581000', ',"schema.source":{"dbName":"x"}')],
               "canal-json": ['{"data":[{"id":"1"}],"database":"d","table":"t","es":1,"ts":1,"id":3,"isDdl":false,'
                              '"pkNames":["id"],"sql":"","type":"INSERT","mysqlType":{"id":"int"},"sqlType":{"id":4},'
                              '"a.b":1,"data.0":2}']}


@pytest.mark.parametrize("fmt", sorted(DOTTED_KEYS))
def test_a_key_with_a_dot_is_no_key_path(spark, fmt):
    raws = [m.encode() for m in DOTTED_KEYS[fmt]]
    python = [python_rows(fmt, r, i + 1) for i, r in enumerate(raws)]
    got = jvm_rows(spark, fmt, raws)
    compared(got, python, raws)
    assert all(p is not None for p in python) and got == [None] * len(raws)  # Python keeps the key whole
    assert '["payload","timestamp","checkpoi.tTime"]' in python[0][0]["vendor"] if fmt == "oms-dataworks" else True


def test_a_payload_after_a_known_schema_is_read_as_the_whole_message_is(spark):
    """A converter's message whose schema the decode has seen is read without its schema: nesting about the Python
    readers' limit inside the payload, bytes they refuse, blanks after it and keys beside it give what the whole
    message's reading gives (the codec's rows, or declined where the codec refuses or keeps the envelope's keys)."""
    seed = day_messages("debezium-json")[0]
    assert seed.startswith(b'{"schema":') and b',"op":' in seed
    inside = [seed.replace(b',"op":', b',"x":' + value + b',"op":', 1) for value in NESTED + NUMBERS]
    inside += [seed.replace(b',"op":', b',"x":"' + b"x" * pad + char + b'","op":', 1)
               for pad in range(8) for char in UTF8]
    around = [seed + b" ", seed + b"\t", seed[:-1] + b' }', seed[:-1] + b',"x":1}', seed[:-1] + b',"payload":{}}',
              seed[:-1] + b"}}", seed[:-1]]
    raws = [seed, *inside, *around]
    python = [python_rows("debezium-json", r, i + 1) for i, r in enumerate(raws)]
    jvm = jvm_rows(spark, "debezium-json", [seed, *raws])[1:]  # the seed first: its schema is known from then on
    compared(jvm, python, raws)
    left = [r for r, j, p in zip(raws, jvm, python) if p is not None and j is None]
    assert sorted(left) == sorted([seed.replace(b',"op":', b',"x":' + z + b',"op":', 1) for z in NEGATIVE_ZERO]
                                  + [seed[:-1] + b',"x":1}']), left  # -0, and a key beside the envelope's two
    assert sum(p is None for p in python) >= 60


def test_every_container_twin_has_inputs():
    assert CONTAINER_TWINS and set(CONTAINER_TWINS) <= set(CONTAINER_INPUTS) & set(WRITER_SCHEMAS)


def frame(*records: bytes) -> bytes:
    """One container block of these records, framed as ``read_avro_blocks`` frames it."""
    data = b"".join(records)
    return struct.pack(">ii", len(records), len(data)) + data


def container_twin_rows(spark, twin: str, raws: list[bytes], valid: bool = True) -> list:
    """What the replay's decode step reads from a container twin, one record a block: its rows, or None.
    ``valid``: every record is one Avro can read, which the twin must not hand over unread (fuzzed bytes need not
    be: a record the twin hands over, from which Python then reads on, is None too)."""
    from cdc_jobs import jvm

    assert jvm.available(spark), "the JVM side did not build (javac missing?)"
    blocks = spark.createDataFrame([(i + 1, frame(r)) for i, r in enumerate(raws)], "first_line long, value binary")
    streams = blocks.select("first_line", F.call_function(jvm.AVRO_BLOCK_DECODE, F.lit(twin), "first_line",
                                                          "value").alias("lines")).collect()
    out: list = [None] * len(raws)
    for r in streams:
        rows = stream_rows(r["lines"]).to_pylist()
        assert rows and all(x["pos_offset"] == r["first_line"] for x in rows)
        assert not valid or rows[0]["value"] is not None or rows[0]["op"] is not None, \
            "the twin could not read a valid record"
        if rows[0]["value"] is not None:  # declined: the record's bytes (of fuzzed bytes, the record it read)
            assert len(rows) == 1 and (not valid or rows[0]["value"] == raws[r["first_line"] - 1])
            continue
        if rows[0]["op"] is None:  # handed over: Python reads on from this record
            continue
        out[r["first_line"] - 1] = [{f: x[f] for f in TWIN_FIELDS} for x in rows]
    return out


def container_python_rows(decoder, raw: bytes, number: int):
    """The Python fast path's rows for the datum ``read_avro`` reads from ``raw``."""
    datum = fastavro.schemaless_reader(io.BytesIO(raw), decoder.schema, None, **NAMED_TYPES)
    return plain_dicts(decoder.rows(datum, ("archive", -1, number, None, None, [])))


@pytest.mark.parametrize("fmt", CONTAINER_TWINS)
def test_container_twin_rows_equal_the_python_fast_path(spark, fmt):
    codec = get_codec(fmt)
    by_layout: dict[str, tuple] = {}
    for schema, datum in CONTAINER_INPUTS[fmt]():
        decoder = codec.container_decoder(schema)
        try:
            raw = avro_dumps(decoder.schema, datum)
        except Exception:  # noqa: BLE001 - a mutation no writer writes (an int beyond 64 bits)
            continue
        by_layout.setdefault(decoder.jvm_rows, (decoder, []))[1].append(raw)
    assert len(by_layout) == 2  # both layouts: with and without bornTimestamp
    taken = python_taken = 0
    for twin_class, (decoder, raws) in by_layout.items():
        got = compared(container_twin_rows(spark, twin_class, raws),
                       [container_python_rows(decoder, r, i + 1) for i, r in enumerate(raws)], raws)
        taken, python_taken = taken + got[0], python_taken + got[1]
    # The inputs are mostly of every value kind, which the twin leaves to Python (rare in real tables); it must
    # still take the plain ones among them, and every record of a plain day (the test below).
    assert python_taken > 500 and taken > 50, (taken, python_taken)


def day_messages(fmt: str) -> list[bytes]:
    """The messages of a simulated day of two plain MySQL tables, as the codec encodes it."""
    from cdc_jobs.commands.sample import simulate

    w = simulate(3, "2024-01-01", rows=200, changes=2000)
    return [m.value for e in w.snapshot + w.changes for m in get_codec(fmt).encode([e])]


def day_records(fmt: str) -> list[tuple[dict, bytes]]:
    """(writer schema, record bytes) of a simulated day of two plain MySQL tables, as the codec encodes it."""
    schema = WRITER_SCHEMAS[fmt]()
    return [(schema, raw) for raw in day_messages(fmt)]


@pytest.mark.parametrize("fmt", CONTAINER_TWINS)
def test_container_twin_takes_every_record_of_a_plain_day(spark, fmt):
    codec = get_codec(fmt)
    records = day_records(fmt)
    decoder = codec.container_decoder(records[0][0])
    raws = [raw for _, raw in records]
    twin = container_twin_rows(spark, decoder.jvm_rows, raws)
    for i, raw in enumerate(raws):
        assert twin[i] is not None and twin[i] == container_python_rows(decoder, raw, i + 1), raw[:300]
    assert len(raws) > 2000


@pytest.mark.parametrize("fmt", CONTAINER_TWINS)
def test_container_twin_hands_over_bytes_it_cannot_tell_apart(spark, fmt):
    """Truncated or garbled bytes are never decoded: the twin marks the record from which Python reads on."""
    from cdc_jobs import jvm

    codec = get_codec(fmt)
    schema, raw = day_records(fmt)[5]
    twin = codec.container_decoder(schema).jvm_rows
    cases = {"truncated": frame(raw, raw[:-3]), "garbage": frame(raw, b"\xff" * 40),
             "bad utf-8 in a string": frame(raw, raw.replace(b"shop", b"sh\xffp", 1)),
             "more records than the block's data holds": struct.pack(">ii", 2, len(raw)) + raw + raw}
    df = spark.createDataFrame([(k, 7, v) for k, v in cases.items()], "case string, first_line long, value binary")
    got = {r["case"]: pa.ipc.open_stream(r["lines"]).read_all().to_pylist() for r in df.select(
        "case", F.call_function(jvm.AVRO_BLOCK_DECODE, F.lit(twin), "first_line", "value").alias("lines")).collect()}
    for case, rows in got.items():
        assert [r["pos_offset"] for r in rows] == [7, 8], case
        assert rows[0]["op"] is not None, case  # the whole record before it is decoded
        assert rows[1]["value"] is None and rows[1]["op"] is None, case  # Python reads on from record 8
