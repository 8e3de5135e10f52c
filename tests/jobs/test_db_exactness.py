"""Exactness against real databases (issue 12): tables with every column type family in MariaDB and PostgreSQL,
rows with NULLs and edge values, the messages real producers write for them (Canal and Debezium rendered per
their documented type mappings, see ``db_producers.py``; every registered format as its codec writes it),
replayed and merged with the CLI, and the merged state compared value for value with ``SELECT``.

Where a format cannot carry a type family exactly, its ``Capabilities.losses`` says so (``cdc-replay formats``
prints it) and the test checks exactly that declared loss, nothing more.
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import json
import re
import struct
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from services import missing

import db_producers as prod  # beside this file
from cdc_codecs import Column, Event, Op, Position, get_codec
from cdc_codecs.event_schema import DECODED_ARROW, EVENT_ARROW, EVENT_FIELDS, RAW_ARROW
from cdc_codecs.registry import FORMATS
from cdc_codecs.types import family
from cdc_jobs import cli
from cdc_jobs.transforms.decode import assembled_rows, decode_batches
from cdc_jobs.transforms.state_types import typing_for

pytestmark = [pytest.mark.db, pytest.mark.spark]

BASE_MS = 1_735_689_600_000

# ------------------------------------------------------------------------------------------------ MariaDB

MARIA_COLUMNS = """id INT PRIMARY KEY, i8 TINYINT, u8 TINYINT UNSIGNED, i64 BIGINT, u64 BIGINT UNSIGNED,
  d DECIMAL(65,30), f FLOAT, dbl DOUBLE, bt BIT(64), bn BINARY(4), vb VARBINARY(300), bl BLOB, c CHAR(10), tx TEXT,
  dte DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(6) NULL, yr YEAR, en ENUM('a','b'), st SET('x','y'),
  js JSON, g GEOMETRY"""
ALL_BYTES = bytes(range(256))
MARIA_ROWS = [
    "1, -128, 255, -9223372036854775808, 18446744073709551615, "
    "'-99999999999999999999999999999999999.999999999999999999999999999999', -3.40282e38, -1.7976931348623157e308, "
    "b'1111111111111111111111111111111111111111111111111111111111111111', x'00ff807f', x'{all}', x'{rev}', "
    "'é', '😀 𝄞 中文 \"q\" \\\\ ', '1000-01-01', '-838:59:59.000000', '1000-01-01 00:00:00.000000', "
    "'1970-01-01 00:00:01.000000', 1901, 'a', 'x,y', '{{\"a\": [1, 2.50, \"😀\"]}}', ST_GeomFromText('POINT(1 2)')",
    "2, 127, 0, 9223372036854775807, 0, '0.000000000000000000000000000001', 1.17549e-38, 5e-324, b'0', "
    "x'00', x'', x'00', '', '', '9999-12-31', '838:59:59.999999', '9999-12-31 23:59:59.999999', "
    "'2038-01-19 03:14:07.999999', 2155, 'b', '', '[]', ST_GeomFromText('LINESTRING(0 0, 1.5 -2)')",
    "3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL",
]

# --------------------------------------------------------------------------------------------- PostgreSQL

PG_COLUMNS = """id INT PRIMARY KEY, i2 SMALLINT, i8 BIGINT, n NUMERIC, d NUMERIC(65,30), f4 REAL,
  f8 DOUBLE PRECISION, bt BIT(12), by BYTEA, c CHAR(3), tx TEXT, bo BOOLEAN, dte DATE, tm TIME(6), ts TIMESTAMP(6),
  tz TIMESTAMPTZ(6), js JSON, jb JSONB, u UUID, pt POINT"""
PG_ROWS = [
    "1, -32768, -9223372036854775808, 123456789012345678901234567890.123456789012345678901234567890123, "
    "'-99999999999999999999999999999999999.999999999999999999999999999999', -3.40282e38, -1.7976931348623157e308, "
    "B'111111111111', '\\x{all}', 'é😀', '😀 𝄞 中文', true, '0001-01-01', '00:00:00', "
    "'0001-01-01 00:00:00', '2020-06-01 12:00:00.5+08', '{{\"a\": [1, 2.50]}}', '{{\"b\": 2.50, \"a\": 1}}', "
    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '(1.5,-2)'",
    "2, 32767, 9223372036854775807, 0.000001, '0.000000000000000000000000000001', 1.17549e-38, 5e-324, "
    "B'000000000001', '\\x', '', '', false, '9999-12-31', '23:59:59.999999', '9999-12-31 23:59:59.999999', "
    "'1999-12-31 23:59:59.999999-05:30', '[]', '[]', '00000000-0000-0000-0000-000000000000', '(0,0)'",
    "3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL",
]


def _hex(b: bytes) -> str:
    return b.hex()


# ------------------------------------------------------------------------------------- canonical rendering


def maria_canonical(type_name: str, v: Any) -> Optional[str]:
    """A MariaDB text-protocol value -> canonical text (``cdc_codecs.event``)."""
    if v is None:
        return None
    word = re.match(r"\w+", type_name).group(0)
    if word == "bit":
        return str(int.from_bytes(v, "big"))
    if word == "geometry":  # MySQL's value is a 4-byte SRID then the WKB; the canonical text is the WKB
        return base64.b64encode(v[4:]).decode()
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if word == "timestamp":  # the session zone is UTC: wall time -> epoch seconds
        return _epoch_text(v)
    return v


def _epoch_text(text_utc: str) -> str:
    d = dt.datetime.fromisoformat(text_utc)
    frac = f".{d.microsecond:06d}".rstrip("0").rstrip(".") if d.microsecond else ""
    return f"{calendar.timegm(d.timetuple())}{frac}"


def pg_canonical(data_type: str, v: Optional[str]) -> Optional[str]:
    if v is None:
        return None
    if data_type == "bytea":
        return base64.b64encode(bytes.fromhex(v[2:])).decode()
    if data_type == "bit":
        return str(int(v, 2))
    if data_type == "timestamp with time zone":
        return v[:-3] + " +00:00" if v.endswith("+00") else v
    if data_type == "boolean":
        return "true" if v == "t" else "false"
    if data_type == "point":
        return base64.b64encode(prod._pg_point_wkb(v)).decode()
    return v


# -------------------------------------------------------------------------------------------------- sources


class Source:
    """One table in one database: its declared columns, and the row images read back around each statement."""

    def __init__(self, label: str, columns: tuple[Column, ...], raw_types: dict[str, Any]):
        self.label, self.columns, self.raw_types = label, columns, raw_types
        self.steps: list[tuple[str, Optional[dict], Optional[dict]]] = []  # (op, before, after) raw images
        self.final: dict[str, dict] = {}

    def canonical(self, row: Optional[dict]) -> Optional[dict]:
        if row is None:
            return None
        conv = maria_canonical if self.label == "my" else pg_canonical
        return {c.name: conv(self.raw_types[c.name], row[c.name]) for c in self.columns}


def _statements(run, read, table: str, insert_rows: list[str]) -> list[tuple[str, Optional[dict], Optional[dict]]]:
    """The same statements on both databases: three inserts, an update, an insert + delete of a copy."""
    steps = []
    for values in insert_rows:
        run(f"INSERT INTO {table} VALUES ({values})")
        key = int(values.split(",")[0])
        steps.append(("c", None, read(key)))
    before = read(2)
    run(f"UPDATE {table} SET tx = 'changed ✓', c = NULL WHERE id = 2")
    steps.append(("u", before, read(2)))
    run(f"INSERT INTO {table} SELECT 4, {', '.join('x.' + c for c in _cols(read))} FROM {table} x WHERE id = 1")
    steps.append(("c", None, read(4)))
    before = read(4)
    run(f"DELETE FROM {table} WHERE id = 4")
    steps.append(("d", before, None))
    return steps


def _cols(read) -> list[str]:
    return [c for c in read.columns if c != "id"]


@pytest.fixture(scope="module")
def maria():
    import pymysql
    try:
        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", connect_timeout=3, autocommit=True,
                               conv={}, charset="utf8mb4")
    except Exception as exc:
        missing(f"MariaDB is not reachable on 127.0.0.1:3306 as root without password: {exc}")
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS test")
    cur.execute("SET time_zone = '+00:00'")
    table = f"test.x12_{uuid.uuid4().hex[:8]}"
    cur.execute(f"CREATE TABLE {table} ({MARIA_COLUMNS}) CHARACTER SET utf8mb4")
    try:
        # conv={} (text protocol values) has no parameter escaping: only generated names and ints are inlined
        cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'test' "
                    f"AND TABLE_NAME = '{table.split('.')[1]}' ORDER BY ORDINAL_POSITION")
        types = {n: t for n, t in cur.fetchall()}
        names = list(types)

        def read(key: int) -> Optional[dict]:
            cur.execute(f"SELECT {', '.join(names)} FROM {table} WHERE id = {int(key)}")
            r = cur.fetchone()
            return None if r is None else dict(zip(names, r))
        read.columns = names  # type: ignore[attr-defined]

        rows = [r.format(all=_hex(ALL_BYTES), rev=_hex(ALL_BYTES[::-1])) for r in MARIA_ROWS]
        steps = _statements(cur.execute, read, table, rows)
        # the declared type of a JSON column in MariaDB is LONGTEXT: Canal says so, Debezium says Json
        columns = tuple(Column(n, t) for n, t in types.items())
        src = Source("my", columns, types)
        src.steps = steps
        cur.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY id")
        src.final = {int(r[0]): dict(zip(names, r)) for r in cur.fetchall()}
        # what SELECT returns for geometry is MySQL's internal value (SRID + WKB): kept so
        yield src
    finally:
        cur.execute(f"DROP TABLE {table}")
        conn.close()


@pytest.fixture(scope="module")
def postgres():
    import psycopg2
    try:
        conn = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", connect_timeout=3)
    except Exception as exc:
        missing(f"PostgreSQL is not reachable on 127.0.0.1:5432 (trust, db test): {exc}")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET TimeZone = 'UTC'")
    table = f"x12_{uuid.uuid4().hex[:8]}"
    cur.execute(f"CREATE TABLE {table} ({PG_COLUMNS})")
    try:
        cur.execute("SELECT column_name, data_type, numeric_precision, numeric_scale, character_maximum_length "
                    "FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position", (table,))
        meta = {r[0]: r[1:] for r in cur.fetchall()}
        names = list(meta)

        def read(key: int) -> Optional[dict]:
            cur.execute(f"SELECT {', '.join(n + '::text' for n in names)} FROM {table} WHERE id = %s", (key,))
            r = cur.fetchone()
            return None if r is None else dict(zip(names, r))
        read.columns = names  # type: ignore[attr-defined]

        rows = [r.format(all=_hex(ALL_BYTES)) for r in PG_ROWS]
        steps = _statements(cur.execute, read, table, rows)
        columns = tuple(Column(n, _pg_type_name(*meta[n])) for n in names)
        src = Source("pg", columns, {n: m[0] for n, m in meta.items()})
        src.meta = meta  # type: ignore[attr-defined]
        src.steps = steps
        cur.execute(f"SELECT {', '.join(n + '::text' for n in names)} FROM {table} ORDER BY id")
        src.final = {int(r[0]): dict(zip(names, r)) for r in cur.fetchall()}
        yield src
    finally:
        cur.execute(f"DROP TABLE {table}")
        conn.close()


def _pg_type_name(data_type: str, precision, scale, length) -> str:
    if data_type == "numeric" and precision is not None:
        return f"numeric({precision},{scale})"
    if data_type == "bit":
        return f"bit({length})"
    if data_type == "timestamp with time zone":
        return "timestamptz"
    if data_type == "timestamp without time zone":
        return "timestamp without time zone(6)"
    return data_type


# --------------------------------------------------------------------------------------------- archives


OFFSET = {"my": 0, "pg": 100}  # both databases share one table per format: keys apart, columns prefixed


def shared_name(src: Source, column: str) -> str:
    return column if column == "id" else f"{src.label}_{column}"


def _shared_image(src: Source, image: Optional[dict]) -> Optional[dict]:
    if image is None:
        return None
    return {shared_name(src, k): (str(int(v) + OFFSET[src.label]) if k == "id" else v) for k, v in image.items()}


def canonical_events(src: Source, database: str) -> list[list[Event]]:
    """The captured statements as canonical events for table ``database.t``, in the shared-table naming (one
    merged table per format keeps the merge to few tables: its cost grows with the table count)."""
    op_of = {"c": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
    columns = tuple(Column(shared_name(src, c.name), c.type_name) for c in src.columns)
    out = []
    for n, (op, before, after) in enumerate(src.steps):
        out.append([Event(format="canonical", op=op_of[op], database=database, table="t",
                          position=Position("db", offset=n), before=_shared_image(src, src.canonical(before)),
                          after=_shared_image(src, src.canonical(after)), columns=columns, primary_key=("id",),
                          event_time_ms=BASE_MS + n * 1000, sequence=(Decimal(n),))])
    return out


def write_archive(fmt: str, groups: list[list[Event]], path: Path) -> None:
    codec = get_codec(fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for events in groups:
            for m in codec.encode(events):
                fh.write((base64.b64encode(m.value) if codec.capabilities.binary else m.value) + b"\n")


def canal_archive(src: Source, database: str, path: Path) -> None:
    kinds = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for n, (op, before, after) in enumerate(src.steps):
            row = after if after is not None else before
            olds = None
            if op == "u":
                olds = [{k: v for k, v in before.items() if after[k] != v}]
            fh.write(prod.canal_message(database, "t", kinds[op], [row], olds, src.raw_types,
                                        BASE_MS + n * 1000, n + 1) + b"\n")


def debezium_archive(src: Source, database: str, path: Path) -> None:
    if src.label == "my":
        fields = [(c.name, *prod.debezium_mysql_field(c.name, c.type_name)) for c in src.columns]
    else:
        fields = [(c.name, *prod.debezium_pg_field(c.name, src.meta[c.name][0], src.meta[c.name][1],
                                                   src.meta[c.name][2], src.meta[c.name][3]))
                  for c in src.columns]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for n, (op, before, after) in enumerate(src.steps):
            ts = BASE_MS + n * 1000
            if src.label == "my":
                source = {"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": ts,
                          "snapshot": "false", "db": database, "table": "t", "server_id": 1, "gtid": None,
                          "file": "mysql-bin.000003", "pos": 1000 + 100 * n, "row": 0, "thread": 7, "query": None}
            else:
                lsn = 24023128 + 64 * n
                source = {"version": "2.7.3.Final", "connector": "postgresql", "name": "pgserver1", "ts_ms": ts,
                          "snapshot": "false", "db": database, "sequence": json.dumps([str(lsn - 8), str(lsn)]),
                          "schema": "public", "table": "t", "txId": 700 + n, "lsn": lsn, "xmin": None}
                if op == "u":
                    before = None  # default REPLICA IDENTITY: no old row on UPDATE
                elif op == "d":  # ... and only the key on DELETE (other columns null)
                    before = {k: (v if k == "id" else None) for k, v in before.items()}
            fh.write(prod.debezium_message(fields, op, before, after, source, ts) + b"\n")


def slug(fmt: str) -> str:
    return fmt.replace("-", "_")


# --------------------------------------------------------------------------------------------- comparison


def value_key(fam: str, type_name: str, v: Any) -> Any:
    """A state value or canonical text -> the value it denotes, so spellings compare equal (1.50 == 1.5 is not
    allowed to pass for 1.5 == 1.49: decimals compare as Decimal, floats bit for bit at their width)."""
    if v is None:
        return None
    if fam in ("int", "bit"):
        return int(v)
    if fam == "decimal":
        return Decimal(v) if not isinstance(v, Decimal) else v
    if fam == "float":
        x = float(v)
        single = re.match(r"(float|real)\b", type_name.lower()) is not None
        return struct.pack(">f", x) if single else x
    if fam == "bool":
        return v if isinstance(v, bool) else str(v).lower() in ("true", "t", "1")
    if fam == "binary" or type_name in ("geometry", "point"):
        return v if isinstance(v, bytes) else base64.b64decode(v)
    if fam == "date":
        return v.isoformat() if isinstance(v, dt.date) else v
    if fam == "time":
        return prod._micros_of_day(v)
    if fam == "datetime":
        return v.replace(tzinfo=None) if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(v)
    if fam in ("timestamp", "zoned"):  # an instant: epoch text, zoned text or a UTC datetime
        if isinstance(v, dt.datetime):
            return Decimal(calendar.timegm(v.utctimetuple())) + Decimal(v.microsecond) / 1_000_000
        if re.fullmatch(r"-?\d+(\.\d+)?", v):
            return Decimal(v)
        d = dt.datetime.fromisoformat(v.replace(" +", "+").replace(" -", "-").replace("Z", "+00:00"))
        assert d.tzinfo is not None, f"{v!r} names no zone: not an instant"
        return Decimal(calendar.timegm(d.utctimetuple())) + Decimal(d.microsecond) / 1_000_000
    if type_name in ("json", "jsonb", "longtext") and isinstance(v, str):
        try:
            return json.loads(v, parse_float=Decimal)
        except ValueError:
            return v
    return v


def check_state(state: Path, fmt: str, src: Source, database: str, losses: dict[str, str], shared: bool = True
                ) -> list[str]:
    """Every (row, column) of the merged table against SELECT; returns what differs (empty = exact)."""
    table = state / f"{database}.t"
    assert table.exists(), f"{fmt}: no merged table {database}.t in {sorted(p.name for p in state.iterdir())}"
    offset = OFFSET[src.label] if shared else 0
    merged_table = DeltaTable(str(table)).to_pyarrow_table()
    got = {int(r["id"]) - offset: r for r in merged_table.to_pylist() if offset <= int(r["id"]) < offset + 100}
    assert sorted(got) == sorted(src.final), f"{fmt}/{src.label}: rows {sorted(got)} != {sorted(src.final)}"
    problems = []
    for key, row in src.final.items():
        expected = src.canonical(row)
        for c in src.columns:
            fam = family(c.type_name)
            name = shared_name(src, c.name) if shared else c.name
            if key == min(src.final):  # the column's type, once: typed as declared, or the declared loss
                typed = typing_for(c.type_name).spark_type != "string"
                is_text = pa.types.is_string(merged_table.schema.field(name).type)
                # "untyped" allows text (its producers may not carry the type); nothing else may fall to text
                if typed and is_text and losses.get(fam) != "untyped":
                    problems.append(f"{fmt}/{src.label} {c.name} ({c.type_name}): merged as text, not "
                                    f"{typing_for(c.type_name).spark_type}, and no loss is declared for {fam}")
            want, have = expected[c.name], got[key][name]
            if c.name == "id":
                have = int(have) - offset
            # every value compares by what it denotes, whatever column type carries it: a declared "untyped"
            # loss only allows the column to be text (checked above); "wall-clock" is read as UTC, and the
            # source session zone is UTC, so it is exact here (the shift is asserted in the codec tests)
            try:
                ok = value_key(fam, c.type_name, have) == value_key(fam, c.type_name, want)
            except (ValueError, ArithmeticError, TypeError, AssertionError):
                ok = False
            if not ok:
                problems.append(f"{fmt}/{src.label} id={key} {c.name} ({c.type_name}): state {have!r} != "
                                f"source {want!r}")
    return problems


DEAD: dict[str, list[str]] = {}  # format -> dead-letter reasons of the decoded archives (valid: must be none)


def decode_archive(fmt: str, path: Path, label: Optional[str] = None, key: Optional[list[str]] = None
                   ) -> list[dict]:
    """The replay's own decode step (``cdc_jobs.transforms.decode``: codec, dead letters, fragment assembly) run on
    one archive file in process, so seventeen archives cost no Spark job each (replay's Spark plumbing is format
    neutral and tested by the replay tests); ``key`` is what ``replay --primary-key`` declares."""
    lines = path.read_bytes().splitlines()
    binary = get_codec(fmt).capabilities.binary
    n = len(lines)
    batch = pa.RecordBatch.from_pydict({
        "value": [base64.b64decode(x) if binary else x for x in lines], "pos_source": [str(path)] * n,
        "pos_partition": [-1] * n, "pos_offset": list(range(1, n + 1)), "pos_timestamp_ms": [None] * n,
        "pos_key": [None] * n, "pos_headers": [[] for _ in range(n)]}, schema=RAW_ARROW)
    decoded = pa.Table.from_batches(list(decode_batches(fmt, [batch])), schema=DECODED_ARROW)
    dead = [r["dl_reason"] for r in decoded.to_pylist() if r["dl_reason"] is not None]
    DEAD.setdefault(label or fmt, []).extend(dead)
    rows = [r for r in decoded.to_pylist() if r["op"] not in ("FRAGMENT", "TOMBSTONE") and r["fragment_key"] is None]
    fragments: dict[str, list[dict]] = {}
    for r in decoded.to_pylist():
        if r["fragment_key"] is not None and r["op"] != "FRAGMENT":
            fragments.setdefault(r["fragment_key"], []).append(r)
    for group in fragments.values():
        rows += pa.Table.from_pylist(assembled_rows(fmt, group), schema=DECODED_ARROW).to_pylist()
    if key is None and not get_codec(fmt).capabilities.primary_key:
        key = ["id"]  # what `replay --primary-key '*.t=id'` declares for a format without key names
    if key is not None:
        rows = [{**r, "primary_key": key} if r["op"] in ("SNAPSHOT", "INSERT", "UPDATE", "DELETE") else r
                for r in rows]
    return [{k: r[k] for k in EVENT_FIELDS} for r in rows]


@pytest.fixture(scope="module")
def merged(maria, postgres, tmp_path_factory):
    """Archives of both tables in every format and the Canal and Debezium producer renderings, decoded by the
    replay's decode step, then one merge (one Spark run) over all of them with the CLI."""
    root = tmp_path_factory.mktemp("db_exactness")
    rows = []
    for fmt in sorted(FORMATS):
        for src in (maria, postgres):
            path = root / "archive" / fmt / f"{src.label}.jsonl"
            write_archive(fmt, canonical_events(src, slug(fmt)), path)
            rows += decode_archive(fmt, path)
    canal_archive(maria, "producer_canal_my", root / "producer" / "canal-json" / "my.jsonl")
    rows += decode_archive("canal-json", root / "producer" / "canal-json" / "my.jsonl", "producer canal-json")
    for src in (maria, postgres):
        path = root / "producer" / "debezium-json" / f"{src.label}.jsonl"
        debezium_archive(src, f"producer_debezium_{src.label}", path)
        # Debezium keys are in the Kafka record key, which files do not have: the user declares them
        rows += decode_archive("debezium-json", path, "producer debezium-json", key=["id"])
    replays = [root / "replay"]
    pq.write_to_dataset(pa.Table.from_pylist(rows, schema=EVENT_ARROW), str(replays[0] / "events"),
                        partition_cols=["table_name"])
    state = root / "state"
    args = ["merge", "--out", str(state)]
    for r in replays:
        args += ["--replay", str(r)]
    assert cli.main(args) == 0
    return state


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_merges_both_databases_to_what_select_returns(fmt, merged, maria, postgres):
    assert not DEAD.get(fmt), f"{fmt}: valid messages dead-lettered: {DEAD[fmt][:3]}"
    losses = dict(get_codec(fmt).capabilities.losses)
    problems = []
    for src in (maria, postgres):
        problems += check_state(merged, fmt, src, slug(fmt), losses)
    assert not problems, "\n".join(problems)


def test_canal_producer_rendering_merges_to_what_select_returns(merged, maria):
    assert not DEAD.get("producer canal-json"), DEAD["producer canal-json"][:3]
    losses = dict(get_codec("canal-json").capabilities.losses)
    assert not check_state(merged, "canal-json (Canal's own rendering)", maria, "producer_canal_my", losses,
                           shared=False)


@pytest.mark.parametrize("label", ["my", "pg"])
def test_debezium_producer_rendering_merges_to_what_select_returns(merged, maria, postgres, label):
    src = maria if label == "my" else postgres
    assert not DEAD.get("producer debezium-json"), DEAD["producer debezium-json"][:3]
    losses = dict(get_codec("debezium-json").capabilities.losses)
    table = f"producer_debezium_{label}" + (".public" if label == "pg" else "")  # PostgreSQL names its schema
    assert not check_state(merged, "debezium-json (connector rendering)", src, table, losses, shared=False)
