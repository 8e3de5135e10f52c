"""The one canonical scenario: every column type family and every operation, as canonical events.

Codec tests encode it in each format and decode it back; job and DAG tests replay it. Values are chosen at the
edges where exactness breaks: a 65-digit decimal, 2**64-1, 9 fractional digits, a zone id, binary with bytes that
are not UTF-8, NULL next to empty string.
"""

from __future__ import annotations

from decimal import Decimal

from .base import Capabilities, flat_database
from .event import Column, Event, Op, Position

MISSING = "<absent>"

DATABASE = "demo"
TABLE = "all_types"
SOURCE = "scenario"
BASE_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z

COLUMNS: tuple[Column, ...] = (
    Column("id", "bigint unsigned", -5),
    Column("c_tinyint", "tinyint", -6),
    Column("c_int", "int", 4),
    Column("c_ubigint", "bigint unsigned", -5),
    Column("c_decimal", "decimal(65,30)", 3),
    Column("c_float", "float", 7),
    Column("c_double", "double", 8),
    Column("c_varchar", "varchar(255)", 12),
    Column("c_text", "text", -1),
    Column("c_blob", "blob", 2004),
    Column("c_bit", "bit(8)", -7),
    Column("c_date", "date", 91),
    Column("c_time", "time(6)", 92),
    Column("c_datetime", "datetime(6)", 93),
    Column("c_datetime9", "datetime(9)", 93),
    Column("c_timestamp", "timestamp(6)", 93),
    Column("c_zoned", "timestamp with time zone", 2014),
    Column("c_interval", "interval day to second", 1111),
    Column("c_enum", "enum('a','b','c')", 1),
    Column("c_set", "set('x','y','z')", 1),
    Column("c_json", "json", 1111),
    Column("c_geometry", "geometry", 1111),  # WKT text: OTHER, not binary
)
PRIMARY_KEY = ("id",)

ROW_1 = {
    "id": "1",
    "c_tinyint": "-128",
    "c_int": "2147483647",
    "c_ubigint": "18446744073709551615",
    "c_decimal": "12345678901234567890123456789012345.123456789012345678901234567890",
    "c_float": "1.2222",
    "c_double": "9.999999999999",
    "c_varchar": "héllo, \"world\"\n",
    "c_text": "",
    "c_blob": "AP8Q/w==",  # bytes 00 ff 10 ff: not valid UTF-8
    "c_bit": "5",
    "c_date": "2020-11-25",
    "c_time": "00:01:02.123456",
    "c_datetime": "2020-11-25 00:01:02.123456",
    "c_datetime9": "2020-11-25 00:01:02.123456789",
    "c_timestamp": "1606233662.012345",
    "c_zoned": "2020-11-25 08:01:02.5 Asia/Shanghai",
    "c_interval": "+01 02:03:04.500000",
    "c_enum": "b",
    "c_set": "x,z",
    "c_json": '{"k": [1, 2.50, "v"]}',
    "c_geometry": "POINT(1 2)",
}
ROW_2 = {k: None for k in ROW_1} | {"id": "2", "c_varchar": "second", "c_int": "0"}
SNAPSHOT_ROW = ROW_1 | {"id": "10", "c_varchar": "from full sync", "c_decimal": "-0.000000000000000000000000000001"}


def _pos(i: int) -> Position:
    return Position(source=SOURCE, partition=-1, offset=i)


def _event(i: int, op: Op, before=None, after=None, **kw) -> Event:
    data_kw = dict(columns=COLUMNS, primary_key=PRIMARY_KEY) if op.is_data else {}
    fields = dict(database=DATABASE, table=TABLE) | data_kw | kw
    return Event(
        format="canonical",
        op=op,
        position=_pos(i),
        before=before,
        after=after,
        event_time_ms=BASE_MS + i * 1000,
        sequence=(Decimal(i + 1),),
        **fields,
    )


def scenario_events() -> list[Event]:
    """Full sync, then one transaction of changes, a heartbeat and a DDL. Images are full (every column)."""
    row1_v2 = ROW_1 | {"c_int": None, "c_text": "now set", "c_varchar": None}  # sets one NULL, clears others
    row2_v2 = ROW_2 | {"c_decimal": "0.5", "c_blob": "", "c_int": "-1"}  # NULLs replaced by values
    row1_rekeyed = row1_v2 | {"id": "3"}  # update of the key column
    tx = "tx-1"
    return [
        _event(0, Op.SNAPSHOT, after=SNAPSHOT_ROW),
        _event(1, Op.BEGIN, transaction_id=tx),
        _event(2, Op.INSERT, after=ROW_1, transaction_id=tx),
        _event(3, Op.INSERT, after=ROW_2, transaction_id=tx),
        _event(4, Op.UPDATE, before=ROW_1, after=row1_v2, transaction_id=tx),
        _event(5, Op.UPDATE, before=ROW_2, after=row2_v2, transaction_id=tx),
        _event(6, Op.UPDATE, before=row1_v2, after=row1_rekeyed, transaction_id=tx),
        _event(7, Op.DELETE, before=row2_v2, transaction_id=tx),
        _event(8, Op.COMMIT, transaction_id=tx),
        _event(9, Op.HEARTBEAT, database=None, table=None),
        _event(10, Op.DDL, ddl="ALTER TABLE `all_types` ADD COLUMN `c_new` int NULL"),
    ]


def final_state() -> dict[str, dict]:
    """The table after the scenario, keyed by id: what merge must produce."""
    row1 = ROW_1 | {"c_int": None, "c_text": "now set", "c_varchar": None, "id": "3"}
    return {"10": SNAPSHOT_ROW, "3": row1}


# Comparing a trip through formats with the scenario ----------------------------------------------------------

def carried(caps: list[Capabilities], events: list[Event]) -> list[Event]:
    return [e for e in events if all(c.carries(e.op) for c in caps)]


def op_after(op: Op, caps: list[Capabilities]) -> str:
    if op is Op.SNAPSHOT and not all(Op.SNAPSHOT in c.ops for c in caps):
        return Op.INSERT.value
    return op.value


def _restrict(image, columns) -> dict | None:
    if image is None:
        return None
    return {k: image.get(k, MISSING) for k in columns}


def view(e: Event, ref: Event, caps: list[Capabilities]) -> tuple:
    """``e`` as far as formats with ``caps`` carry it; which columns count is decided by the reference event."""
    op = op_after(ref.op, caps)
    table = e.qualified_table if all(c.schema_level for c in caps) else \
        ".".join(p for p in (flat_database(e), e.table) if p)
    if not ref.op.is_data:
        return (op, table, e.ddl) if ref.op in (Op.DDL, Op.TRUNCATE) else (op,)
    before, after = e.before, e.after
    if op == "INSERT":
        before = None
    elif op == "UPDATE":
        kinds = {c.before_image for c in caps}
        if "none" in kinds:
            before = None
        elif "key" in kinds:
            before = _restrict(before, ref.primary_key)
        if any(c.after_image == "changed" for c in caps):
            after = _restrict(after, [k for k in ref.after or () if (ref.before or {}).get(k, MISSING) != ref.after[k]])
    elif op == "DELETE" and any(c.delete_image == "key" for c in caps):
        before = _restrict(before, ref.primary_key)
    return (op, table, before, after)


def assert_same_as_scenario(got: list[Event], caps: list[Capabilities]) -> None:
    """``got`` (the scenario after a trip through formats with ``caps``) equals the scenario, event by event,
    up to what those formats declare they carry."""
    expected = carried(caps, scenario_events())
    assert [op_after(e.op, caps) for e in got] == [op_after(e.op, caps) for e in expected]
    for g, x in zip(got, expected):
        assert view(g, x, caps) == view(x, x, caps)
