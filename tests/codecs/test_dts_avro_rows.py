"""dts-avro's container fast path (``ContainerDecoder.rows``, ``dts_avro_rows``) must give exactly the DECODED
rows the reference (``ContainerDecoder.decode``: ``_event``, the record contract, ``to_record``) gives for the
same datum, or decline (None) so that the reference runs: on every fixture, every scenario record, and mutations
of each that a producer (or a flipped bit) could write: other operations and names, out-of-range ints, every
value kind, charsets, precisions that differ from the column's, absent and NULL values."""

from __future__ import annotations

import copy
import json

import pyarrow as pa
import pytest

from cdc_codecs import DecodeError, Position
from cdc_codecs.contract import check_events
from cdc_codecs.dts.dts_avro import CODEC, NS, RECORD14, RECORD15
from cdc_codecs.event_schema import DECODED_ARROW
from cdc_codecs.records import to_record
from cdc_codecs.scenario import scenario_events
from cdc_codecs.shared.avro import avro_loads
from cdc_codecs.shared.plain_rows import DECODED_ROW
from test_dts_avro import GOLDEN, datum_of  # beside this file

AT = ("archive/part-00000.avro", -1, 41, None, None, [])
AT_POSITION = Position("archive/part-00000.avro", -1, 41)
DECODERS = {True: CODEC.container_decoder(RECORD15), False: CODEC.container_decoder(RECORD14)}


def _v(kind: str, **rec) -> tuple:
    return (f"{NS}.{kind}", rec)


# Image values of every kind, in shapes the column's first typed value may or may not share.
VALUES = [
    None, (f"{NS}.EmptyObject", "NONE"), (f"{NS}.EmptyObject", "NULL"),
    _v("Integer", precision=11, value="7"), _v("Integer", precision=3, value="-12"),
    _v("Integer", precision=2, value="+7"), _v("Integer", precision=1, value="1.5"),
    _v("Integer", precision=2**31, value="7"), _v("Integer", precision=1, value="99999999999999999999999"),
    _v("Decimal", value="1.50", precision=10, scale=2), _v("Decimal", value="1.5", precision=5, scale=1),
    _v("Decimal", value="x", precision=-1, scale=0), _v("Decimal", value="1", precision=2**32, scale=0),
    _v("Character", charset="utf8mb4", value="gr\u00fc\u00df".encode()), _v("Character", charset="utf8", value=b"a"),
    _v("Character", charset="UTF8MB4", value=b"a"), _v("Character", charset="latin1", value=b"\xe9\x80"),
    _v("Character", charset="gbk", value="\u4e2d".encode("gbk")), _v("Character", charset="utf8mb4", value=b"\xff"),
    _v("Character", charset="no-such-charset", value=b"a"),
    _v("Float", value=1.5, precision=0, scale=0), _v("Float", value=float("nan"), precision=12, scale=2**31),
    _v("Timestamp", timestamp=1700000000, millis=123456), _v("Timestamp", timestamp=1, millis=10**6),
    _v("DateTime", year=2024, month=2, day=29, hour=23, minute=59, second=58, millis=5),
    _v("DateTime", year=2024, month=2, day=29, hour=None, minute=None, second=None, millis=None),
    _v("DateTime", year=None, month=None, day=None, hour=-838, minute=59, second=59, millis=None),
    _v("DateTime", year=2024, month=None, day=None, hour=None, minute=None, second=None, millis=2**31),
    # whole DateTimes at the edges of the text that reads back as the same record (``_plain_datetime``)
    *(_v("DateTime", year=y, month=mo, day=d, hour=h, minute=mi, second=sec, millis=ms)
      for y, mo, d, h, mi, sec, ms in ((2024, 2, 29, 23, 59, 58, None), (2024, 2, 29, 23, 59, 58, 0),
                                       (9999, 99, 99, 99, 99, 99, 999999), (10000, 1, 1, 0, 0, 0, 0),
                                       (-5, 1, 1, 0, 0, 0, 1), (-10000, 1, 1, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0),
                                       (2024, 100, 1, 0, 0, 0, 0), (2024, 1, 1, 100, 0, 0, 0),
                                       (2024, 1, 1, -1, 0, 0, 0), (2024, 1, 1, 0, -1, 0, 0),
                                       (2024, 1, 1, 0, 0, 0, 10**6), (2024, 1, 1, 0, 0, 0, -1),
                                       (2024, 1, 1, 0, 0, 0, 2**31))),
    _v("TimestampWithTimeZone", value={"year": 2024, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0,
                                        "millis": 0}, timezone="+08:00"),
    _v("BinaryObject", type="BIT", value=b"\x05"), _v("BinaryObject", type="BLOB", value=b"\x00\xff"),
    _v("TextObject", type="JSON", value='{"a": 1}'), _v("BinaryGeometry", type="POINT", value=b"\x01"),
    _v("TextGeometry", type="POINT", value="POINT(1 2)"),
]


def seeds() -> list[tuple[dict, bool]]:
    out = []
    for name in GOLDEN:
        datum, schema = datum_of(name)
        out.append((datum, schema is RECORD15))
    for msg in CODEC.encode(scenario_events()):
        datum, used = avro_loads(RECORD14, msg.value)
        born = used != len(msg.value)
        out.append((avro_loads(RECORD15, msg.value)[0] if born else datum, born))
    return out


def mutations(datum: dict) -> list[dict]:
    """The datum, and copies with one top-level field or one image value changed."""
    out = [datum]

    def variant(**changes) -> None:
        d = copy.deepcopy(datum)
        d.update(changes)
        out.append(d)

    for op in ("INSERT", "UPDATE", "DELETE", "INIT", "DDL", "BEGIN", "ROLLBACK"):
        variant(operation=op)
    for name in (None, "shop", "shop.t", "a.b.c", "sh\\u002Eop.t", "sh\x01op.t", "s." + "t" * 300, ".t", "s."):
        variant(objectName=name)
    for key, values in (("version", (-1, 2**31, -(2**31) - 1)), ("id", (-1, 0, 2**63 - 1)),
                        ("sourceTimestamp", (0, -5, 2**62)), ("sourceTxid", ("", "tx-9")),
                        ("processTimestamps", (None, [1, 2]))):
        for v in values:
            variant(**{key: v})
    for info in (None, "", "not json", "[1]", '{"u": ["a"]}', '{"PRIMARY": []}'):
        variant(tags={} if info is None else {"pk_uk_info": info, "other": "x"})
    fields = datum["fields"]
    variant(fields=None)
    variant(fields="c1 int")
    if isinstance(fields, list) and fields:
        variant(fields=fields + [dict(fields[0])])  # a duplicate name
        variant(fields=[{**fields[0], "dataTypeNumber": 2**31}] + fields[1:])
        for side in ("beforeImages", "afterImages"):
            variant(**{side: None})
            variant(**{side: "some text"})
            variant(**{side: []})
            image = datum[side]
            if isinstance(image, list) and image:
                variant(**{side: image[:-1]})
                for i in sorted({0, len(image) - 1}):
                    for v in VALUES:
                        d = copy.deepcopy(datum)
                        d[side][i] = copy.deepcopy(v)
                        out.append(d)
    return out


def reference_rows(datum: dict, born: bool) -> list[dict] | None:
    try:
        events = DECODERS[born].decode(copy.deepcopy(datum), AT_POSITION)
        check_events(CODEC.name, events)
    except DecodeError:
        return None
    return [to_record(e) | {"dl_reason": None, "dl_field": None, "dl_raw": None, "first_of_record": i == 0}
            for i, e in enumerate(events)]


def fast_path_agrees(datum: dict, born: bool) -> bool:
    """Whether the fast path took ``datum``; fails the test when it took it and differs from the reference."""
    rows = DECODERS[born].rows(datum, AT)
    if rows is None:
        return False
    expected = reference_rows(datum, born)
    assert expected is not None, f"the fast path accepted a record the reference rejects: {datum}"
    got = pa.Table.from_pylist([dict(zip(DECODED_ROW, r)) for r in rows], schema=DECODED_ARROW)
    want = pa.Table.from_pylist(expected, schema=DECODED_ARROW)
    assert got.equals(want), json.dumps([got.to_pylist(), want.to_pylist()], default=repr)[:3000]
    return True


@pytest.mark.parametrize("seed", seeds(), ids=lambda s: f"{s[0]['operation']}-{s[0]['id']}")
def test_fast_path_rows_equal_the_reference(seed):
    datum, born = seed
    taken = [fast_path_agrees(m, born) for m in mutations(datum)]
    if taken[0]:
        assert sum(taken) > 10  # most variants of a plain record stay in the fast path


def test_the_fast_path_takes_the_plain_records_of_fixtures_and_scenario():
    taken = [fast_path_agrees(datum, born) for datum, born in seeds()
             if datum["operation"] in ("INSERT", "UPDATE", "DELETE", "INIT")]
    assert len(taken) >= 10 and sum(taken) >= len(taken) - 2  # a three-part name, an empty image


def test_fast_path_declines_what_the_reference_must_name():
    datum, born = datum_of("insert_mysql_14_fields.datum.json")[0], False
    assert fast_path_agrees(datum, born)
    bad_int = copy.deepcopy(datum)
    bad_int["afterImages"][0] = _v("Integer", precision=2**31, value="1")
    with pytest.raises(DecodeError, match="precision"):  # the reference names the out-of-range int
        DECODERS[born].decode(copy.deepcopy(bad_int), AT_POSITION)
    assert DECODERS[born].rows(bad_int, AT) is None
    three_part = copy.deepcopy(datum)
    three_part["objectName"] = "db.schema.t"  # decoded by the reference (schema), not by the fast path
    assert DECODERS[born].rows(three_part, AT) is None and reference_rows(three_part, born) is not None


def test_a_datetime_column_typed_by_the_other_image():
    """The column's spec comes from its first typed value, after image first: a NULL ``millis`` there (the
    ``millis_null`` spec) makes a before value with millis 0 differ from what the encoder would rebuild, so that
    value is kept verbatim; the fast path must agree with the reference either way round."""
    update, born = next((d, born) for d, born in seeds() if d["operation"] == "UPDATE"
                        and isinstance(d["beforeImages"], list) and fast_path_agrees(d, born))
    for after_millis, before_millis in ((None, 0), (0, None), (None, None), (7, 0)):
        datum = copy.deepcopy(update)
        datum["afterImages"][0] = _v("DateTime", year=2024, month=1, day=2, hour=3, minute=4, second=5,
                                     millis=after_millis)
        datum["beforeImages"][0] = _v("DateTime", year=2024, month=1, day=2, hour=3, minute=4, second=5,
                                      millis=before_millis)
        assert fast_path_agrees(datum, born), (after_millis, before_millis)
