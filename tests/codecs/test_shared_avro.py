"""``shared.avro.avro_dumps`` names a record's union branches itself where the value's Python type allows one
branch only, so fastavro skips validating the value against each branch. It must write exactly the bytes
fastavro writes for the untagged datum: on every Avro fixture and scenario message of both Avro formats, the
datums their encoders build, and unions where a str or a list could be more than one branch."""

from __future__ import annotations

import io

import fastavro
import pytest

from cdc_codecs import get_codec
from cdc_codecs.dts.dts_avro import RECORD14, RECORD15, writable
from cdc_codecs.oms.oms_avro import SCHEMA as OMS_SCHEMA
from cdc_codecs.scenario import scenario_events
from cdc_codecs.shared.avro import NAMED_TYPES, _branch_tags, avro_dumps
from fuzz import seed_messages  # beside this file

SCHEMAS = {"dts-avro": (RECORD15, RECORD14), "oms-avro": (OMS_SCHEMA,)}


def _untagged(schema, datum) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


def _datums(fmt: str) -> list[tuple[str, object, dict]]:
    """(label, schema, datum) of every seed message of ``fmt`` that one of its schemas reads whole."""
    out = []
    for label, raw in seed_messages(fmt):
        for schema in SCHEMAS[fmt]:
            buf = io.BytesIO(raw)
            try:
                datum = fastavro.schemaless_reader(buf, schema, None, **NAMED_TYPES)
            except Exception:  # noqa: BLE001 - a seed written with the other schema
                continue
            if buf.tell() == len(raw):
                if fmt == "dts-avro":  # as the encoder writes an image (``writable``; fuzz.py does the same)
                    for side in ("beforeImages", "afterImages"):
                        if isinstance(datum[side], list):
                            datum[side] = [writable(v) for v in datum[side]]
                out.append((label, schema, datum))
                break
    return out


@pytest.mark.parametrize("fmt", sorted(SCHEMAS))
def test_the_same_bytes_as_fastavro_untagged(fmt):
    datums = _datums(fmt)
    assert len(datums) >= 10, f"{fmt}: too few seed messages read back ({len(datums)})"
    for label, schema, datum in datums:
        assert avro_dumps(schema, datum) == _untagged(schema, datum), f"{fmt}: {label}"


def test_encoder_datums_the_same_bytes_as_fastavro_untagged():
    codec = get_codec("dts-avro")
    events = [e for e in scenario_events() if codec.capabilities.carries(e.op)]
    assert events
    for e in events:
        datum, born = codec.datum(e)
        schema = RECORD15 if born else RECORD14
        assert avro_dumps(schema, datum) == _untagged(schema, datum), repr(e)


def test_a_branch_is_named_only_where_the_type_allows_one():
    schema = fastavro.parse_schema({"type": "record", "name": "R", "fields": [
        {"name": "text", "type": ["null", "string"]},
        {"name": "text_or_enum", "type": ["null", {"type": "enum", "name": "E", "symbols": ["A"]}, "string"]},
        {"name": "two_arrays", "type": ["null", {"type": "array", "items": "int"},
                                        {"type": "array", "items": "string"}]},
        {"name": "one_array", "type": ["null", "string", {"type": "array", "items": "long"}]},
        {"name": "plain", "type": "string"},
    ]})
    assert dict(_branch_tags(schema)) == {"text": {str: "string"}, "one_array": {str: "string", list: "array"}}
    for datum in ({"text": "x", "text_or_enum": "A", "two_arrays": ["a"], "one_array": [1, 2], "plain": ""},
                  {"text": None, "text_or_enum": "x", "two_arrays": [1], "one_array": "s", "plain": "p"}):
        assert avro_dumps(schema, datum) == _untagged(schema, datum)
    # the caller's datum is not changed
    datum = {"text": "x", "text_or_enum": None, "two_arrays": None, "one_array": [], "plain": ""}
    avro_dumps(schema, datum)
    assert datum["text"] == "x" and datum["one_array"] == []


def test_a_declared_precision_beyond_an_avro_int_is_written_as_text():
    """fastavro's union check used to catch it; with the branch named, the encoder checks it itself."""
    from cdc_codecs import Column, Event, Op, Position

    codec = get_codec("dts-avro")
    e = Event(format="canal-json", op=Op.INSERT, database="d", table="t", after={"x": "1.5"},
              columns=(Column("x", "decimal(99999999999,1)"),), position=Position("p"))
    datum, born = codec.datum(e)
    assert datum["afterImages"] == [("com.alibaba.dts.formats.avro.Character",
                                     {"charset": "utf8mb4", "value": b"1.5"})]
    [message] = codec.encode([e])
    assert codec.decode(message.value, Position("p"))[0].after == {"x": "1.5"}


def test_the_int_check_does_not_walk_a_string_as_an_array():
    """DTS keeps a DDL statement as text in afterImages (a union of null, string and an array of values): the
    32-bit check used to walk such a string character by character as if it were the array, 1 s per 100 KB
    (a 10 MB statement: minutes). Found by the structural fuzzer."""
    import time

    from cdc_codecs.shared.avro import check_ints

    datum = {"version": 1, "id": 1, "sourceTimestamp": 1, "sourcePosition": "p", "safeSourcePosition": "p",
             "sourceTxid": "t", "source": {"sourceType": "MySQL", "version": "8"}, "operation": "DDL",
             "objectName": "d.t", "processTimestamps": None, "tags": {}, "fields": None,
             "beforeImages": None, "afterImages": "x" * 10_000_000}
    started = time.perf_counter()
    assert check_ints(RECORD14, datum) is datum
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("fmt", sorted(SCHEMAS))
def test_a_truncated_record_gets_the_same_dead_letter_text_every_run(fmt):
    """fastavro's EOFError named its BytesIO with a memory address ("cannot read double from <_io.BytesIO object
    at 0x7f...>"), so a re-run of the same replay wrote the same truncated record's dead letter with another
    text (found comparing two decodes of the fuzzed corpus). Every cut of every seed message, decoded twice."""
    from cdc_codecs.event import DecodeError, Position

    codec = get_codec(fmt)

    def reasons() -> list[str]:
        out = []
        for _, raw in seed_messages(fmt):
            for cut in range(1, len(raw)):
                try:
                    codec.decode(raw[:cut], Position(source="topic", partition=0, offset=cut))
                except DecodeError as exc:
                    out.append(str(exc))
        return out

    first = reasons()
    assert any("cannot read" in text for text in first)  # the cuts do reach fastavro's EOFError
    assert [text for text in first if " at 0x" in text] == []
    assert reasons() == first


def _read(reader, raw: bytes):
    buf = io.BytesIO(raw)
    try:
        return reader(buf), buf.tell()
    except Exception as exc:  # noqa: BLE001 - the same failure either way
        from cdc_codecs.shared.avro import without_addresses

        return type(exc).__name__, without_addresses(str(exc), "the bytes")  # a BytesIO's address differs


@pytest.mark.parametrize("fmt", sorted(SCHEMAS))
def test_read_named_reads_what_fastavros_override_reads(fmt):
    """``read_named`` names union values itself where fastavro's override would count named types for every
    value: the same datums (a union's only named type unnamed, tuples where a union has several), the same
    failures, on every seed message and 1,500 fuzzed ones of the format, with each of its schemas."""
    from fuzz import corpus

    from cdc_codecs.oms.oms_avro import IMAGE_SCHEMA
    from cdc_codecs.shared.avro import read_named

    schemas = SCHEMAS[fmt] + ((IMAGE_SCHEMA,) if fmt == "oms-avro" else ())
    messages = [raw for _, raw in seed_messages(fmt)] + [f.raw for f in corpus(fmt, 1500)]
    read_whole = 0
    for raw in messages:
        for schema in schemas:
            want = _read(lambda fh: fastavro.schemaless_reader(fh, schema, None, **NAMED_TYPES), raw)
            got = _read(lambda fh: read_named(schema, fh), raw)
            assert repr(got) == repr(want), raw[:80]  # repr: a tuple is not a list, 1 is not True
            read_whole += isinstance(want[1], int) and want[1] == len(raw)
    assert read_whole >= 50


def test_read_named_unnames_only_the_top_records_unions():
    """A union with one named type deeper than the top record's fields (an array's items) keeps its value
    unnamed, as fastavro's override gives it; one among the top record's fields does too, beside a union of two
    named types whose value stays named."""
    from cdc_codecs.shared.avro import read_named

    inner = {"type": "record", "name": "In", "fields": [{"name": "v", "type": "long"}]}
    top = fastavro.parse_schema({"type": "record", "name": "Top", "fields": [
        {"name": "a", "type": ["null", inner]},
        {"name": "b", "type": ["null", "In", {"type": "record", "name": "Other", "fields": [{"name": "w", "type": "string"}]}]},
        {"name": "c", "type": {"type": "array", "items": ["null", "In"]}}]})
    datum = {"a": {"v": 1}, "b": ("Other", {"w": "x"}), "c": [None, {"v": 2}]}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, top, datum)
    raw = buf.getvalue()
    want = fastavro.schemaless_reader(io.BytesIO(raw), top, None, **NAMED_TYPES)
    assert want == {"a": {"v": 1}, "b": ("Other", {"w": "x"}), "c": [None, {"v": 2}]}
    assert repr(read_named(top, io.BytesIO(raw))) == repr(want)  # "c"'s items: fastavro's way
    flat = fastavro.parse_schema({"type": "record", "name": "Flat", "fields": top["fields"][:2]})
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, flat, {"a": {"v": 1}, "b": ("Other", {"w": "x"})})
    assert repr(read_named(flat, io.BytesIO(buf.getvalue()))) == repr({"a": {"v": 1}, "b": ("Other", {"w": "x"})})
