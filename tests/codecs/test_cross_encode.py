"""Re-encoding into another format (``replay --to-format``): an event another format accepted is written as a message
the target decodes to the same values, or refused with an ``EncodeError`` that names the target's field (the encode
step's dead letter), never a crash that names nothing and never a message the target's own decoder refuses.

``test_format_matrix`` proves this for the canonical scenario; here it runs over fuzzed events (the seeded corpus
of ``fuzz.py``) and over the cases the sweep (``fuzz_sweep.py --cross``) found, each of which failed before its fix.

Values the sweep still sees change (the real producers' fixtures and seed 1; not fixed, so the fuzzed-events test
checks crashes and refused messages only). Spellings of one value: a DATETIME(6) at a whole second loses its six
zero digits in oms-avro and dts-avro, and the MongoDB formats' epoch text ``1739455397.970`` (BSON dates keep three
digits) becomes ``1739455397.97`` elsewhere; dts-avro writes a BOOLEAN as 1/0, typed targets an oms-dataworks
BOOLEAN 1 as true. Images: an UPDATE without before image (PostgreSQL without REPLICA IDENTITY FULL) comes back
from Canal and Maxwell with the after image as its before image (no ``old``: nothing changed) and from DRS,
SharePlex and drs-mongo with an empty one; Canal and Maxwell read a column an UPDATE's before image lacks as not
changed (their ``old`` lists changed columns only); debezium-avro-confluent writes such a column NULL (an Avro
record has every field).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_codecs import Column, EncodeError, Op, Position, available_formats, get_codec
from cdc_codecs.event import Event
from fuzz_sweep import cross_check  # beside this file

FORMATS = available_formats()
CROSS_PER_FORMAT = 12  # x 2 corpora x 18 formats, each accepted event into 17 targets: ~10 s


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzzed_events_encode_into_every_format_or_name_the_field(fmt):
    import fuzz

    raws = [i.raw for i in fuzz.corpus(fmt, CROSS_PER_FORMAT, ten_mb_line=False)]
    raws += [i.raw for i in fuzz.structural(fmt, CROSS_PER_FORMAT)]
    assert cross_check(fmt, raws, values=False) == []


def _event(column: Column, value: str | None, op: Op = Op.INSERT, **fields) -> Event:
    image = {"id": "1", column.name: value}
    return Event(format="ogg-json", op=op, database="shop", table="t", position=Position("found.jsonl", -1, 3),
                 columns=(Column("id", "bigint", -5, True), column), primary_key=("id",),
                 before=image if op in (Op.UPDATE, Op.DELETE) else None,
                 after=None if op is Op.DELETE else image, event_time_ms=1700000000000,
                 sequence=(Decimal(7),), **fields)


def _back(fmt: str, e: Event) -> Event:
    codec = get_codec(fmt)
    [message] = codec.encode([e])
    [back] = codec.decode(message.value, Position("out", -1, 1, key=message.key))
    return back


# (target, column, value): each crashed (ValueError, OverflowError, TypeError) or came back as another value
KEPT_AS_WRITTEN = [
    # an int column holding what no Avro int holds: written as a string field
    ("debezium-avro-confluent", Column("c", "int", 4, True), "1.5"),
    ("debezium-avro-confluent", Column("c", "int", 4, True), "1e400"),
    ("debezium-avro-confluent", Column("c", "int", 4, True), "0.0000000001"),
    # a decimal of a billion digits spelled in twelve characters: the unscaled integer hung the encode task
    ("debezium-json", Column("c", "decimal(10,2)", 3, True), "1E+999999999"),
    ("debezium-avro-confluent", Column("c", "decimal(10,2)", 3, True), "-1E-999999999"),
    # an integer text JSON cannot spell bare (a leading zero): the MongoDB formats write it as a string
    *[(fmt, Column("c", "int", 4, True), text) for fmt in ("debezium-bson", "drs-mongo") for text in ("0147483647", "1.")],
    # a declared precision beyond the Avro int DecimalObject holds it in
    ("oms-avro", Column("c", "decimal(2147483649,2)", 3, True), "1.50"),
    # MongoDB's NaN decimal: no scale, no unscaled bytes
    ("debezium-json", Column("c", "decimal128", 3, False), "NaN"),
    ("debezium-avro-confluent", Column("c", "decimal128", 3, False), "NaN"),
    # a BIT value wider than the column, epoch seconds beyond 64 bits: the string forms keep them
    ("dts-avro", Column("c", "bit(8)", -7, False), "18446744073709551616"),
    ("dts-avro", Column("c", "timestamp", 93, False), "18446744073709551616"),
    ("oms-avro", Column("c", "timestamp", 93, False), "-18446744073709551616.5"),
    ("oms-avro", Column("c", "timestamp with time zone", 2014, False), "18446744073709551616"),
    # what a double does not hold: Infinity, or more digits than it has
    *[(fmt, Column("c", "double", 8, True), text) for fmt in ("oms-avro", "dts-avro", "debezium-avro-confluent")
      for text in ("1e400", "9.999999999999999093266253372484619954704887340320456937072250493")],
    # Connect's float64 is a double (its first word read FLOAT: a 32-bit float gave 10.0 back)
    ("oms-avro", Column("c", "float64", 8, True), "9.999999999999"),
    ("debezium-avro-confluent", Column("c", "float32", 6, True), "9.999999999999"),
]


@pytest.mark.parametrize("fmt,column,value", KEPT_AS_WRITTEN,
                         ids=[f"{f}:{c.type_name}:{v[:12]}" for f, c, v in KEPT_AS_WRITTEN])
def test_values_another_format_wrote_come_back_as_written(fmt, column, value):
    assert _back(fmt, _event(column, value)).after["c"] == value


def test_a_column_typed_only_by_jdbc_timestamp_is_written_as_a_datetime_to_canal():
    """JDBC's 93 alone is a DATETIME (``types.family``): written with mysqlType "timestamp", Canal's decoder read
    its text as an instant's wall clock and refused epoch text."""
    assert _back("canal-json", _event(Column("c", None, 93, False), "1606233662.012345")).after["c"] == \
        "1606233662.012345"


@pytest.mark.parametrize("fmt", ["oms-avro", "dts-avro", "debezium-avro-confluent"])
def test_a_double_spelled_another_way_stays_a_double(fmt):
    """DRS writes Java's 1.2510357E7: the same double as 12510357.0, so it is written as a double (a string would
    change the column's type for every consumer), and comes back as the same number."""
    back = _back(fmt, _event(Column("c", "double", 8, True), "1.2510357E7"))
    assert Decimal(back.after["c"]) == Decimal("1.2510357E7")
    assert back.after["c"] != "1.2510357E7"  # read from a double (the string form keeps the text as written)


# (target, event, field): an event of another format that lacks what the target always writes; each was written
# as a message the target's own decoder refuses
MISSING_WHAT_THE_TARGET_NEEDS = [
    # an UPDATE without before image (PostgreSQL without REPLICA IDENTITY FULL, through Debezium)
    *[(fmt, _event(Column("c", "int", 4, True), "2", op=Op.UPDATE).with_(before=None), field)
      for fmt, field in (("cloudcanal-json", "before"), ("oms-default", "prevStruct"), ("dts-avro", "beforeImages"),
                         ("oms-dataworks", "payload.before.data"))],
    # and no key columns to name the document by
    ("debezium-bson", _event(Column("c", "int", 4, True), "2", op=Op.UPDATE).with_(before=None, primary_key=()),
     "payload.before"),
    # a row without database (Maxwell, OGG messages that name only a table)
    *[(fmt, _event(Column("c", "int", 4, True), "2").with_(database=None), field)
      for fmt, field in (("canal-json", "database"), ("oms-default", "allMetaData.db"), ("oms-avro", "schemaName"))],
    # a DELETE whose before image lacks its key (a DELETE of OMS without the key column): no row named
    *[(fmt, _event(Column("c", "int", 4, True), "2", op=Op.DELETE).with_(before={"c": "2"}), "payload.before")
      for fmt in ("debezium-json", "debezium-avro-confluent")],
    # what the target cannot write: a BIT of more than 64 bits, an event time beyond year 9999 as wall-clock text
    ("canal-json", _event(Column("c", "bit(8)", -7, False), str(2 ** 70)), "c"),
    ("debezium-bson", _event(Column("c", "int", 4, True), "2", op=Op.DELETE).with_(before=None), "payload.before"),
    # a TIMESTAMP kept as the invalid wall-clock text Canal wrote: DRS JSON-C writes local text it must read back
    ("drs-json-c", _event(Column("c", "timestamp(6)", 93, False), "2024-13-01 00:00:00"), "c"),
    ("canal-json", _event(Column("c", "geometry", None, False), "POINT(1 1)\u202e"), "c"),  # one character a byte
    ("oms-shareplex", _event(Column("c", "int", 4, True), "2").with_(event_time_ms=2 ** 62), "meta.time"),
]


@pytest.mark.parametrize("fmt,event,field", MISSING_WHAT_THE_TARGET_NEEDS,
                         ids=[f"{f}:{d}" for f, _, d in MISSING_WHAT_THE_TARGET_NEEDS])
def test_an_event_without_what_the_target_needs_is_refused_naming_the_field(fmt, event, field):
    with pytest.raises(EncodeError) as err:
        get_codec(fmt).encode([event])
    assert (err.value.vendor, err.value.field) == (fmt, field)


@pytest.mark.parametrize("fmt", ["dataworks-json", "oms-dataworks"])
def test_a_truncate_without_statement_is_written_with_the_one_it_stands_for(fmt):
    """Debezium's op "t" carries no statement; DataWorks' TRUNCATE does (its decoder requires it)."""
    e = _event(Column("c", "int", 4, True), None).with_(op=Op.TRUNCATE, before=None, after=None, columns=(),
                                                        primary_key=())
    back = _back(fmt, e)
    assert (back.op, back.ddl) == (Op.TRUNCATE, "TRUNCATE TABLE shop.t")


def test_a_sequence_part_of_minus_zero_packs_as_zero():
    """Two-part sequences are packed into one sequenceId: a -0 part put a sign inside the digits."""
    e = _event(Column("c", "int", 4, True), "2").with_(sequence=(Decimal(5), Decimal("-0")))
    assert _back("dataworks-json", e).sequence == (Decimal("0000000000000000000500000000000000000000"),)


def test_an_event_without_columns_encodes_into_debezium_avro():
    """An Avro value needs a schema even for an event without columns (a MongoDB envelope, an OMS Avro row
    without fields): a KeyError before."""
    e = _event(Column("c", "int", 4, True), None).with_(columns=(), primary_key=(), after={})
    assert _back("debezium-avro-confluent", e).after == {}


def test_a_column_absent_from_the_row_stays_absent_in_debezium_avro():
    """A Canal message's rows need not list the same columns (a row without ``other``): an Avro record writes every
    field of its schema, so the column was written as NULL; it is left out of that event's schema."""
    e = _event(Column("c", "int", 4, True), "2").with_(after={"id": "1"})
    assert _back("debezium-avro-confluent", e).after == {"id": "1"}


def test_a_column_an_update_left_out_of_its_after_image_keeps_the_before_value_in_debezium_avro():
    """SharePlex, or OGG without full supplemental logging, leave unchanged columns out of the after image; written
    as NULL, a consumer applying the after image would set them to NULL."""
    e = _event(Column("c", "int", 4, True), "2", op=Op.UPDATE).with_(after={"id": "1"})
    assert _back("debezium-avro-confluent", e).after == {"id": "1", "c": "2"}


TWO_LEVEL = [f for f in FORMATS if not get_codec(f).capabilities.schema_level]


@pytest.mark.parametrize("fmt", TWO_LEVEL)
def test_a_schema_is_written_as_the_database_where_the_format_has_no_schema_level(fmt):
    """PostgreSQL's ``public.users`` and ``audit.users`` of one database: written with the database, both became
    ``appdb.users``, one table for every consumer. DRS writes such a source's schema as the database."""
    events = [_event(Column("c", "int", 4, True), "2").with_(database="appdb", schema=s, table="users")
              for s in ("public", "audit")]
    assert [_back(fmt, e).qualified_table for e in events] == ["public.users", "audit.users"]
