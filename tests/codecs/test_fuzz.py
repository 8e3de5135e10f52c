"""Every codec against a seeded fuzz corpus (``fuzz.py``): no crash, every bad input a positioned DecodeError, and
nothing wrong accepted silently.

What a user relies on, per input:
* decoding either gives events or raises ``DecodeError`` naming this vendor, a field and the input's position
  (the decode step turns anything else into an anonymous "(message)" dead letter: here it is a codec bug);
* accepted events fit the event record (``cdc_codecs.contract``) and can be stored as Arrow rows;
* an accepted message is a message the codec can stand behind: re-encoding its events gives messages that decode
  to the same events (or the encoder refuses with ``EncodeError``, which the encode step dead-letters), so a
  mutation cannot slip through as a silently different row.
"""

from __future__ import annotations

import collections

import pyarrow as pa
import pytest

from cdc_codecs import DecodeError, EncodeError, Position, available_formats, get_codec
from cdc_codecs.contract import check_events
from cdc_codecs.records import to_records
from fuzz import AVRO_DATUM_FORMATS, SEED, FuzzInput, corpus, seed_messages, structural  # beside this file

FORMATS = available_formats()
PER_FORMAT = 90  # x 14 formats + one 10 MB line per JSON format: > 1,000 inputs per run


def _event_arrow() -> pa.Schema:
    from cdc_jobs.schemas import EVENT_ARROW  # the jobs' record schema (pyarrow only, no Spark session)

    return EVENT_ARROW


def canonical(e) -> tuple:
    return (e.op.value, e.qualified_table, e.before, e.after, e.event_time_ms, e.sequence, e.primary_key, e.ddl,
            e.transaction_id)


def redecode(codec, messages, keyed: bool = False) -> list:
    """``messages`` decoded by ``codec``, fragments assembled; ``keyed``: each with its record key, as a consumer
    reads them (Debezium's MongoDB formats find an UPDATE's document id there)."""
    out, pending = [], {}
    for n, m in enumerate(messages, start=1):
        for d in codec.decode(m.value, Position("roundtrip", -1, n, key=m.key if keyed else None)):
            if d.fragment_key is None:
                out.append(d)
                continue
            pending.setdefault(d.fragment_key, []).append(d)
            if len(pending[d.fragment_key]) == d.fragment_total:
                out.append(codec.assemble(pending.pop(d.fragment_key)))
    assert not pending, "re-encoded fragments do not reassemble"
    return out


def check_input(fmt: str, n: int, inp: FuzzInput, outcomes: collections.Counter) -> str:
    """The outcome of one input (counted in ``outcomes``), or a test failure."""
    codec = get_codec(fmt)
    pos = Position(source=f"fuzz-{fmt}.jsonl", partition=-1, offset=n)
    where = f"seed {SEED}, input {n} ({inp.label})"
    try:
        events = codec.decode(inp.raw, pos)
        if not events and fmt == "debezium-json":
            # {"schema": ..., "payload": null}: JsonConverter's rendering of a tombstone; the decode step makes a
            # message without event a dead letter of its own ("the message holds no event")
            outcomes["no event: a dead letter of the decode step"] += 1
            return "dead letter"
        assert events, f"{where}: decoded to no event and no error"
        check_events(fmt, events)  # what the decode step runs: values that do not fit are dead letters
    except DecodeError as exc:
        assert exc.vendor == fmt and exc.field, f"{where}: DecodeError without vendor/field: {exc}"
        assert exc.position is not None and (exc.position.source, exc.position.offset) == (pos.source, n), \
            f"{where}: DecodeError with the wrong position: {exc}"
        assert pos.describe() in str(exc), f"{where}: message does not say where: {exc}"
        outcomes["dead letter"] += 1
        return "dead letter"
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{where}: codec crashed with {type(exc).__name__}: {exc}")
    pa.RecordBatch.from_pylist(to_records(events), schema=_event_arrow())  # storable as decoded rows
    if any(e.fragment_key for e in events):
        outcomes["fragment"] += 1  # reassembled (and re-checked) with its siblings in the decode step
        return "fragment"
    try:
        messages = codec.encode(events)
    except EncodeError:
        outcomes["decoded, refused by the encoder"] += 1
        return "decoded, refused by the encoder"
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{where}: decoded, but the encoder crashed with {type(exc).__name__}: {exc}")
    try:
        again = redecode(codec, messages)
    except DecodeError as exc:
        pytest.fail(f"{where}: accepted, but its own re-encoding does not decode: {exc}")
    assert [canonical(e) for e in again] == [canonical(e) for e in events], \
        f"{where}: accepted, but re-encoding changes it"
    outcomes["decoded and round-tripped"] += 1
    return "decoded and round-tripped"


@pytest.fixture(scope="module")
def tally():
    totals: dict[str, collections.Counter] = {}
    yield totals
    n = sum(sum(c.values()) for c in totals.values())
    print(f"\nfuzz seed {SEED}: {n} inputs, 0 crashes; " + "; ".join(
        f"{fmt}: {dict(c)}" for fmt, c in sorted(totals.items())))


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzzed_messages_are_decoded_or_dead_lettered(fmt, tally):
    inputs = corpus(fmt, PER_FORMAT)
    outcomes = collections.Counter()
    for n, inp in enumerate(inputs, start=1):
        check_input(fmt, n, inp, outcomes)
    tally[fmt] = outcomes
    assert sum(outcomes.values()) == len(inputs) >= PER_FORMAT
    assert outcomes["dead letter"] > len(inputs) // 4, f"{fmt}: the mutations are not reaching the decoder"


def test_corpus_is_large_and_covers_every_kind():
    inputs = [i for fmt in FORMATS for i in corpus(fmt, PER_FORMAT)]
    assert len(inputs) >= 1000
    kinds = collections.Counter(i.label.split(" of ")[0] for i in inputs)
    for kind in ("truncation", "bit flips", "invalid UTF-8", "NUL bytes", "wrong type", "missing field",
                 "huge number", "huge string", "deep nesting", "lone surrogate", "10 MB line", "huge varint"):
        assert kinds[kind] > 0, f"no '{kind}' input in the corpus: {kinds}"
    assert max(len(i.raw) for i in inputs) >= 10 * 1024 * 1024


def test_same_seed_same_corpus():
    assert corpus("canal-json", 20, seed=5, ten_mb_line=False) == corpus("canal-json", 20, seed=5, ten_mb_line=False)
    assert corpus("canal-json", 20, seed=5, ten_mb_line=False) != corpus("canal-json", 20, seed=6, ten_mb_line=False)


# ------------------------------------------------------------------------------- structure-aware mutations

STRUCT_PER_FORMAT = 250  # x 14 formats: > 3,000 inputs per run, a few seconds


@pytest.fixture(scope="module")
def struct_tally():
    totals: dict[str, dict] = {}
    yield totals
    n = sum(sum(t["outcomes"].values()) for t in totals.values())
    print(f"\nstructural fuzz seed {SEED}: {n} mutations, 0 crashes")
    for fmt, t in sorted(totals.items()):
        legit = ", ".join(f"{k} x{c}" for k, c in t["legitimate"].most_common(6))
        print(f"  {fmt}: {sum(t['outcomes'].values())} mutations {dict(t['outcomes'])}; legitimate e.g. {legit}")


# Structure-aware mutation needs a message's structure: JSON documents, or Avro datums (*.datum.json fixtures).
# A binary format without either (debezium-avro-confluent: Confluent-framed Avro) has only the byte-level corpus.
STRUCT_FORMATS = [f for f in FORMATS if not get_codec(f).capabilities.binary or f in AVRO_DATUM_FORMATS]


@pytest.mark.parametrize("fmt", STRUCT_FORMATS)
def test_structural_mutations_decode_to_legitimate_events_or_dead_letters(fmt, struct_tally):
    """Every field of every seed message dropped, nulled, retyped, nested, duplicated, given numbers beyond every
    range and huge strings (Avro: a field the writer lacks, a union value of another branch, extreme longs):
    each one is a dead letter naming vendor, field and position, or decodes to events that fit the record and
    survive their own re-encoding (``check_input``). A required field (``Codec.required``) left missing or of a
    type its declaration does not accept is always a dead letter; what decodes is legitimate (an optional field
    dropped, an unknown one added, a value of a type the field may have), tallied by mutation and field."""
    inputs = structural(fmt, STRUCT_PER_FORMAT)
    outcomes: collections.Counter = collections.Counter()
    legitimate: collections.Counter = collections.Counter()
    for n, inp in enumerate(inputs, start=1):
        outcome = check_input(fmt, n, inp, outcomes)
        if inp.violates:
            assert outcome == "dead letter", f"{fmt} {inp.label}: a required field violated, decoded as {outcome}"
        elif outcome != "dead letter":
            legitimate[f"{inp.kind} of {'.'.join(map(str, inp.path[-2:]))}"] += 1
    struct_tally[fmt] = {"outcomes": outcomes, "legitimate": legitimate}
    assert len(inputs) >= 200 and sum(outcomes.values()) == len(inputs)
    assert outcomes["dead letter"] > 0 and any(i.violates for i in inputs)


def test_kafka_record_variants_are_events_tombstones_or_dead_letters():
    """Kafka records of every format with a null value (a compaction tombstone), a null key (Debezium MongoDB
    keys deletes by it) and no headers: each is a tombstone, events or a dead letter of the decode step, one
    first-of-record row each, never an exception."""
    from cdc_jobs.transforms.decode import decode_rows

    checked = 0
    for fmt in FORMATS:
        raws = [raw for _, raw in seed_messages(fmt)][:6]
        for key, headers in ((None, None), (None, []), (b"\x00not-a-key", [{"key": "h", "value": None}])):
            values = [*raws, None]
            cols = {"pos_source": ["topic"] * len(values), "pos_partition": [0] * len(values),
                    "pos_offset": list(range(len(values))), "pos_timestamp_ms": [None] * len(values),
                    "pos_key": [key] * len(values), "pos_headers": [headers] * len(values), "value": values}
            rows = decode_rows(fmt, cols, len(values))
            firsts = [r for r in rows if r["first_of_record"]]
            assert len(firsts) == len(values), f"{fmt}: a record vanished or doubled"
            assert firsts[-1]["op"] == "TOMBSTONE", f"{fmt}: a null value is a tombstone"
            for r in rows:
                assert r["dl_reason"] is None or r["dl_reason"].startswith(f"{fmt}: field "), r["dl_reason"]
                assert r["dl_field"] != "(message)", f"{fmt}: a codec crash on {key!r}/{headers!r}: {r['dl_reason']}"
                assert r["op"] not in ("SNAPSHOT", "INSERT", "UPDATE", "DELETE") or r["table"], f"{fmt}: no table"
            checked += len(values)
    assert checked >= 14 * 3 * 2


# Seeds of the structural fuzzer that once found a defect (tests/README.md: the seed sweeps), kept as fixed cases.
FIXED_STRUCT_SEEDS = [
    ("debezium-json", 2),  # a declared column type nested in an array could not be stored
    ("debezium-json", 8),  # a Connect schema field's name nested in an object: unhashable
    ("debezium-json", 4),  # "schema": null in the envelope: the encoder crashed
    ("debezium-json", 50),  # a base64 decimal of more than 4,300 digits: the quick conversion crashed
    ("canal-json", 8),  # 2^64 as a geometry value: read as base64 WKB when re-encoded
    ("canal-json", 47),  # -0 as a TIMESTAMP: read as epoch seconds when re-encoded
    ("cloudcanal-json", 10),  # a null row in data: an INSERT without image
]


@pytest.mark.parametrize("fmt,seed", FIXED_STRUCT_SEEDS)
def test_structural_fixed_seeds(fmt, seed):
    outcomes: collections.Counter = collections.Counter()
    for n, inp in enumerate(structural(fmt, STRUCT_PER_FORMAT, seed=seed), start=1):
        outcome = check_input(fmt, n, inp, outcomes)
        assert not inp.violates or outcome == "dead letter", inp.label
    assert sum(outcomes.values()) >= 200


# Minimal messages of the defects the seed sweep found (``fuzz_sweep.py``: at seeds 6-53 a codec crashed or accepted
# a message its own re-encoding changed; the JVM equivalence sweep, seed 7): (format, message, the field its dead
# letter names).
_CANAL = ('{"id":42,"database":"shop","table":"t","type":"INSERT","isDdl":false,"es":1709210096000,"ts":1,'
          '"pkNames":["id"],"mysqlType":{"id":"int(11)","bt":"bit(12)","g":"geometry","ts":"timestamp(6)"},'
          '"sqlType":{"id":4,"bt":-7,"g":-2,"ts":93},"data":[{"id":"7",%s}],"old":null,"sql":""}')
_CLOUDCANAL = ('{"action":"%s","bid":3,"db":"postgres","schema":"public","table":"users","isDdl":false,'
               '"entryType":"ROWDATA","execTs":1669789300000,"dbValType":{"id":"int4"},"jdbcType":{"id":4},'
               '"pks":["id"],"sql":"","data":%s,"before":%s}')
_DEBEZIUM = ('{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after","fields":'
             '[{"type":"int32","optional":false,"field":"id"},%s]}]},'
             '"payload":{"op":"c","ts_ms":1,"source":{"db":"shop","table":"t"},"before":null,'
             '"after":{"id":1,"price":"AA=="}}}')
_OMS_HEARTBEAT = ('{"allMetaData":{"checkpoint":"1609344680","source_identity":"subtopic-1","dbType":"OB_MYSQL",'
                  '"table_name":null,"db":null,"timestamp":%s},"prevStruct":null,"recordType":"HEARTBEAT",'
                  '"postStruct":null}')
_DECIMAL = '"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","field":"price"'
FOUND_BY_SWEEP = [
    # MySQL's BIT holds 64 bits: 5,000 bytes made an int of more digits than Python prints (the 4,300 limit)
    ("canal-json", _CANAL % ('"bt":"%s"' % ("\\u0001" * 5000)), "data[0].bt"),
    # geometry text that is not SRID + WKB but reads as base64 WKB: its re-encoding wrote other bytes
    ("canal-json", _CANAL % '"g":"xxxxxxxxxxxx"', "data[0].g"),
    ("canal-json", _CANAL % '"g":18446744073709551616', "data[0].g"),
    ("canal-json", _CANAL % '"g":""', "data[0].g"),
    # a TIMESTAMP that is not wall-clock text but reads as epoch seconds: re-encoded as another instant
    ("canal-json", _CANAL % '"ts":-0', "data[0].ts"),
    # a null in the row lists is no row: it decoded as an INSERT without image, a DELETE without before image
    ("cloudcanal-json", _CLOUDCANAL % ("INSERT", '[{"id":1},null]', "[]"), "data[1]"),
    ("cloudcanal-json", _CLOUDCANAL % ("DELETE", "[]", '[null,{"id":1}]'), "before[0]"),
    ("cloudcanal-json", _CLOUDCANAL % ("UPDATE", '[{"id":1}]', "[null]"), "before[0]"),
    # a number where a name belongs: read as exact text it is a str, and other formats wrote it as a number
    ("cloudcanal-json", (_CLOUDCANAL % ("INSERT", '[{"id":1}]', "[]")).replace('"schema":"public"', '"schema":1e400'),
     "schema"),
    ("cloudcanal-json", (_CLOUDCANAL % ("INSERT", '[{"id":1}]', "[]")).replace('"pks":["id"]', '"pks":[1e400]'),
     "primary_key"),
    # Connect schemas of another shape: unhashable names and types, parameters that are no object, fields no list
    ("debezium-json", _DEBEZIUM % '{"type":"bytes","name":{"value":"x"},"field":"price"}',
     "schema.fields[0].fields[1].name"),
    ("debezium-json", _DEBEZIUM % '{"type":["bytes"],"field":"price"}', "schema.fields[0].fields[1].type"),
    ("debezium-json", _DEBEZIUM % ('{%s,"parameters":[{"scale":"2"}]}' % _DECIMAL),
     "schema.fields[0].fields[1].parameters"),
    ("debezium-json", _DEBEZIUM % ('{%s,"parameters":"x"}' % _DECIMAL), "schema.fields[0].fields[1].parameters"),
    ("debezium-json", _DEBEZIUM % ('{%s,"parameters":{"scale":-0}}' % _DECIMAL),
     "schema.fields[0].fields[1].parameters.scale"),
    ("debezium-json", _DEBEZIUM.replace('"field":"after","fields":', '"field":"after","fields":true,"x":', 1)
     % '{"type":"int32","field":"price"}', "schema.fields[0].fields"),
    # epoch seconds whose milliseconds overflow the decimal context (a crash) or do not fit 64 bits
    ("oms-default", _OMS_HEARTBEAT % "1E+2147483648", "allMetaData.timestamp"),
    ("oms-default", _OMS_HEARTBEAT % "9223372036854775.808", "allMetaData.timestamp"),
    # schema.column true (no list of columns): iterated as one
    ("oms-dataworks", '{"version":"2.0","schema":{"source":{"dbName":"demo","table":"t"},"column":true,"pk":["id"]},'
                      '"payload":{"op":"INSERT","timestamp":{"eventTime":1700000003000},"before":null,'
                      '"after":{"data":{"id":2}},"ddl":null,"scn":"4"}}', "schema.column"),
]


@pytest.mark.parametrize("fmt,message,field", FOUND_BY_SWEEP, ids=[f"{f}:{d}" for f, _, d in FOUND_BY_SWEEP])
def test_sweep_found_messages_are_dead_letters_naming_the_field(fmt, message, field):
    with pytest.raises(DecodeError) as err:
        events = get_codec(fmt).decode(message.encode(), Position("found.jsonl", -1, 3))
        check_events(fmt, events)
    assert (err.value.vendor, err.value.field) == (fmt, field), err.value
    assert "found.jsonl" in str(err.value) and "line 3" in str(err.value)


def test_dataworks_date_beyond_every_decimal_context_is_kept_as_written():
    """A DATE of 1E+2147483648 ms overflowed the decimal context converting it to epoch seconds (a crash): like
    every DATE number that does not convert exactly, it is kept as written and written back the same."""
    msg = ('{"schema":{"dataColumn":[{"name":"id","type":"LONG"},{"name":"ts","type":"DATE"}],"primaryKey":["id"],'
           '"source":{"dbType":"mysql","dbName":"d","tableName":"t"}},"payload":{"before":null,"after":{"dataColumn":'
           '{"id":1,"ts":1E+2147483648}},"sequenceId":"1","op":"INSERT","timestamp":{"eventTime":1},"ddl":null},'
           '"version":"1.0.0"}')
    found = FuzzInput("dataworks-json", "found", msg.encode())
    outcome = check_input("dataworks-json", 1, found, collections.Counter())
    assert outcome == "decoded and round-tripped"
    assert get_codec("dataworks-json").decode(msg.encode(), Position("f", -1, 1))[0].after["ts"] == "1E+2147483648"


def test_oms_avro_float_column_beyond_32_bits_is_kept_as_written():
    """Overwritten bytes made a float column's value a double of -7.3e+110 (sweep seed 34): comparing it with what a
    float branch would write back crashed (struct cannot pack it); it is kept as written and re-encoded the same."""
    found = corpus("oms-avro", 1500, seed=34, ten_mb_line=False)[269]
    assert check_input("oms-avro", 270, found, collections.Counter()) == "decoded and round-tripped"
    assert get_codec("oms-avro").decode(found.raw, Position("f", -1, 1))[0].after["c_float"] == "-7.348195186345418e+110"


@pytest.mark.parametrize("index,type_info", [(1, "FLOAT"), (1, "DOUBLE"), (12, "BOOLEAN")])
def test_oms_avro_value_of_another_branch_than_its_type_info_survives_re_encoding(index, type_info):
    """A bit flip turned a column's type_info INTEGER into FLOAT (sweep seeds 76, 128): its int value -128 compared
    equal to the float the encoder derives (-128 == -128.0), was not kept verbatim and came back as "-128.0"."""
    from fuzz import FIXTURES_ROOT, avro_datum

    from cdc_codecs.shared.avro import avro_dumps

    schema, datum = avro_datum("oms-avro", FIXTURES_ROOT / "oms-avro" / "insert_mysql_all_types.datum.json")
    datum["afterImages"][index]["type_info"] = type_info
    raw = avro_dumps(schema, datum)
    outcome = check_input("oms-avro", 1, FuzzInput("oms-avro", "found", raw), collections.Counter())
    assert outcome == "decoded and round-tripped"
