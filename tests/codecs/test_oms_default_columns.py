"""oms-default's column-wise encode (``plain_columns``: whole Arrow batches, ``shared.arrow_json``), and its
variant oms-extend-column-type's, write every message byte for byte as the Event path (``encode``) and, for
oms-default, its row path (``plain_messages``, ``orjson.dumps`` of a dict) do, with the same key, table and record
type, and decline only rows the row path declines too: on the events of every format and on
values chosen to break a hand-written JSON writer (quotes, backslashes, every control character, non-ASCII, digits
that are not ASCII, numbers and near-numbers in number columns, missing and empty key values, NULL images and
names, negative times, sequences of 0-2 components), in whole batches and in slices of them."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from cdc_codecs import Column, Op, Position, get_codec
from cdc_codecs.event import Event
from cdc_codecs.event_schema import EVENT_ARROW
from cdc_codecs.records import declared_columns, events_from_batch, to_record

from tests.jobs.test_encode_fast_path import events_of_every_format

OMS = get_codec("oms-default")
EXTEND = get_codec("oms-extend-column-type")
NASTY = ["", " ", '"', "\\", '\\"', "a\"b\\c", "\x00", "\x01", "\x1f", "\x7f", "\b\t\n\f\r", "\u2028", "é", "日本",
         "😀", "0", "-0", "1", "-1", "01", "1.", ".5", "1.5", "1e5", "1E-5", "-1.5e+10", "1\u0661", "\u0661",
         "NaN", "Infinity", "18446744073709551615", "0x10", "1 ", " 1", "true", "null", "{}", "[1]"]
TYPES = [(None, None, False), (None, None, True), ("int", 4, False), ("bigint unsigned", -5, False),
         ("decimal(10,2)", 3, False), ("varchar(10)", 12, False), ("double", 8, False), (None, 12, False),
         ("text", None, True), ("datetime", 93, False)]


def hostile_events(seed: int, n: int) -> list[Event]:
    rnd = random.Random(seed)
    events = []
    for i in range(n):
        names = rnd.sample(["id", "k", "v", "w", "x\"y", "é", "a\x01b", ""], rnd.randint(1, 5))
        twice = rnd.sample(names, rnd.randint(0, min(2, len(names))))  # declared again, maybe with another type
        columns = tuple(Column(name, *rnd.choice(TYPES)) for name in names + twice)

        def image():
            if rnd.random() < 0.15:
                return None
            return {name: rnd.choice([None, *NASTY, str(rnd.randint(-10**6, 10**6))]) for name in names
                    if rnd.random() < 0.85}

        op = rnd.choice([Op.INSERT, Op.UPDATE, Op.DELETE, Op.SNAPSHOT, Op.DDL, Op.HEARTBEAT])
        pk = tuple(rnd.sample([*names, "missing"], rnd.randint(0, min(3, len(names) + 1))))
        events.append(Event(
            format=rnd.choice(["canal-json", "debezium-json", "dts-avro", "oms-default"]), op=op,
            # a row without database or table is the row path's EncodeError (declined): rarer, so most rows are taken
            database=rnd.choice([None, "", *["shop", "sh\"op", "日本"] * 3]),
            schema=rnd.choice([None, None, "", "public"]),
            table=rnd.choice([None, "", *["orders", "t\\1", "t\x02"] * 3]),
            position=Position(f"p{i % 3}.jsonl", rnd.choice([-1, 0, 7]), i + 1), before=image(), after=image(),
            columns=columns, primary_key=pk,
            event_time_ms=rnd.choice([None, 0, 1, 999, 1000, -1, -999, -1000, -1001, 1700000000123, 2**62]),
            sequence=tuple(Decimal(rnd.randint(-10**20, 10**20)) for _ in range(rnd.choice([0, 1, 1, 2]))),
            transaction_id=rnd.choice([None, "", "tx-1", "\"t\\x\n"]),
            ddl="CREATE TABLE t (id int)" if op is Op.DDL else None))
    return events


def _compare(batch: pa.RecordBatch, codec=OMS) -> tuple[int, int]:
    """(rows taken, rows declined); asserts every taken row equals the Event path's message (and, for oms-default,
    the row path's), and that oms-default declines only what its row path declines."""
    got = codec.plain_columns(batch)
    assert got is not None
    for array in (got.value, got.key, got.table, got.op, got.taken):
        assert len(array) == batch.num_rows
    cols = {n: batch.column(n).to_pylist() for n in batch.schema.names if n != "columns"}
    declared = declared_columns(batch.column("columns"))
    events = events_from_batch(batch)
    taken = got.taken.to_pylist()
    values, keys, tables, ops = (a.to_pylist() for a in (got.value, got.key, got.table, got.op))
    for i in range(batch.num_rows):
        want = OMS.plain_messages(cols, declared, range(i, i + 1)) if codec is OMS else None
        if not taken[i]:
            if codec is OMS:
                assert want is None or cols["format"][i] == OMS.name, (i, want)  # the row path declines too
            continue
        reference = codec.encode([events[i]])
        assert len(reference) == 1, i
        m = reference[0]
        assert (values[i], keys[i], tables[i], ops[i]) == (m.value, m.key, m.table, m.op), (i, values[i], m.value)
        if codec is OMS:
            assert want is not None and [(w.value, w.key, w.table, w.op) for w in want] == [
                (m.value, m.key, m.table, m.op)], i
    return taken.count(True), taken.count(False)


@pytest.mark.parametrize("codec", [OMS, EXTEND], ids=lambda c: c.name)
def test_the_events_of_every_format_encode_as_the_event_path_encodes_them(codec):
    table = events_of_every_format().combine_chunks()
    taken, declined = _compare(table.to_batches()[0], codec)
    assert taken > 90 and declined > 10


@pytest.mark.parametrize("codec", [OMS, EXTEND], ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(4))
def test_hostile_values_encode_as_the_event_path_encodes_them(seed, codec):
    events = hostile_events(seed, 400)
    table = pa.Table.from_pylist([to_record(e) for e in events], schema=EVENT_ARROW).combine_chunks()
    taken, declined = _compare(table.to_batches()[0], codec)
    assert taken > (90 if codec is OMS else 40) and declined > 50  # the corpus declares columns twice often
    # slices (a batch handed over mid-array: offsets into the maps and lists) give the same messages
    for start, length in ((1, 37), (123, 200), (399, 1)):
        _compare(table.slice(start, length).to_batches()[0], codec)


def test_the_extended_variant_declines_what_its_type_object_would_overwrite():
    """A column named ``__light_type``, or declared twice with two types: the Event path writes those (the dict
    keeps the first place and the last value); the column path leaves them to it."""
    base = hostile_events(3, 1)[0]
    clash = base.with_(format="canal-json", op=Op.INSERT, after={"id": "1", "__light_type": "x"},
                       columns=(Column("id", "int"), Column("__light_type", "text")), primary_key=("id",))
    twice = clash.with_(after={"id": "1"}, columns=(Column("id", "int"), Column("id", "bigint")))
    plain = clash.with_(after={"id": "1"}, columns=(Column("id", "int"),))
    batch = pa.RecordBatch.from_pylist([to_record(e) for e in (clash, twice, plain)], schema=EVENT_ARROW)
    assert EXTEND.plain_columns(batch).taken.to_pylist() == [False, False, True]
    _compare(batch, EXTEND)


def test_a_null_name_in_a_key_leaves_the_batch_to_the_row_path():
    e = hostile_events(9, 1)[0]
    record = to_record(e)
    record["primary_key"] = ["id", None]
    batch = pa.RecordBatch.from_pylist([record], schema=EVENT_ARROW)
    assert OMS.plain_columns(batch) is None
