"""Issue 14's crash: one record whose decoded values cannot be stored killed the whole replay. Now such a record is
one dead letter naming vendor, field and position, and the rest of its batch decodes. No Spark needed: this is
the mapInArrow body the executors run."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from cdc_codecs import Position, get_codec, jsontext
from cdc_jobs.schemas import RAW_ARROW
from cdc_jobs.transforms import decode as decode_mod
from cdc_jobs.transforms import decode_guard
from cdc_jobs.transforms.decode import decode_batches

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codecs"))
from fuzz import seed_messages  # noqa: E402

JSON_FORMATS = ["canal-json", "cloudcanal-json", "dataworks-json", "debezium-json", "drs-json", "maxwell-json",
                "oms-default"]
HUGE = jsontext.JsonNumber(str(2**70))


def raw_batch(values: list[bytes]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "pos_source": ["archive.jsonl"] * n, "pos_partition": [-1] * n, "pos_offset": list(range(1, n + 1)),
        "pos_timestamp_ms": [None] * n, "pos_key": [None] * n, "pos_headers": [[]] * n, "value": values},
        schema=RAW_ARROW)


def with_each_number_huge(raw: bytes) -> list[bytes]:
    """The message once per numeric field (JSON number or digits in a string), that field set to 2**70 (parses,
    fits no integer column)."""
    try:
        doc, _ = jsontext.loads(raw)
    except ValueError:  # a malformed fixture
        return []
    out = []

    def walk(node):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            if isinstance(v, jsontext.JsonNumber) or (isinstance(v, str) and v.isdigit()):
                node[k] = HUGE if isinstance(v, jsontext.JsonNumber) else str(HUGE)
                out.append(jsontext.dumps(doc))
                node[k] = v
            else:
                walk(v)
    walk(doc)
    return out


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_a_number_too_big_for_the_event_record_is_a_dead_letter_not_a_crash(fmt):
    values = [m for _, raw in seed_messages(fmt) for m in with_each_number_huge(raw)]
    assert values, fmt
    batches = list(decode_batches(fmt, [raw_batch(values)]))  # raised OverflowError before the fix
    rows = [r for b in batches for r in b.to_pylist()]
    firsts = [r for r in rows if r["first_of_record"]]
    assert sorted(r["pos_offset"] for r in firsts) == list(range(1, len(values) + 1)), "one first row per record"
    dead = [r for r in rows if r["dl_reason"]]
    assert dead, f"{fmt}: no huge number was refused"
    for d in dead:
        assert d["dl_reason"].startswith(f"{fmt}: field '{d['dl_field']}' at archive.jsonl line {d['pos_offset']}")
        assert d["dl_raw"] == values[d["pos_offset"] - 1]
    # the ones that overflowed the record before are named by their event-record field now, or by the vendor's
    # field where the codec checks the range itself (OMS Default's epoch seconds)
    named = {"event_time_ms", "sequence[0]", *VENDOR_TIME_FIELDS.get(fmt, ())}
    assert named & {d["dl_field"] for d in dead}, {d["dl_field"] for d in dead}


VENDOR_TIME_FIELDS = {"oms-default": ("allMetaData.timestamp",)}


class _BrokenCodec:
    """A codec bug the contract does not anticipate: a DDL text that is not text, for one message."""

    def __init__(self, real):
        self.real = real

    def decode(self, raw, position):
        events = self.real.decode(raw, position)
        if position.offset == 3:
            events = [e.with_(ddl=12345) for e in events]
        return events

    def plain_rows(self, raw, at):
        return None  # every message takes decode, where the bug is

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_no_single_record_can_kill_a_batch(monkeypatch):
    fmt = "canal-json"
    real = get_codec(fmt)
    broken = _BrokenCodec(real)
    monkeypatch.setattr(decode_mod, "get_codec", lambda name: broken)
    monkeypatch.setattr(decode_guard, "get_codec", lambda name: broken)
    good = []
    for _, raw in seed_messages(fmt):
        try:
            real.decode(raw, Position("x"))
            good.append(raw)
        except ValueError:  # the malformed fixtures
            continue
    values = (good * 3)[:7]
    [batch] = list(decode_batches(fmt, [raw_batch(values)]))
    rows = batch.to_pylist()
    dead = [r for r in rows if r["dl_reason"]]
    assert [(d["pos_offset"], d["dl_field"]) for d in dead] == [(3, "ddl")]
    assert dead[0]["table_name"] == real.decode(values[2], Position("x"))[0].qualified_table
    assert dead[0]["dl_raw"] == values[2] and "archive.jsonl line 3" in dead[0]["dl_reason"]
    assert "cannot be stored" in dead[0]["dl_reason"]
    assert sorted(r["pos_offset"] for r in rows if r["first_of_record"]) == list(range(1, 8))
    expected_events = sum(len(real.decode(v, Position("x"))) for i, v in enumerate(values) if i != 2)
    assert len([r for r in rows if not r["dl_reason"]]) == expected_events


def test_a_dump_line_with_an_out_of_range_position_is_a_broken_line_not_a_failed_read(tmp_path):
    from cdc_jobs.io.files import read_dump

    dump = tmp_path / "t.dump.jsonl"
    dump.write_text('{"topic":"t","partition":1,"offset":5,"value":"eyJ4IjoxfQ=="}\n'
                    '{"topic":"t","partition":1099511627776,"offset":6,"value":"eyJ4IjoxfQ=="}\n'
                    '{"topic":"t","partition":1,"offset":7,"timestamp":"soon","value":"eyJ4IjoxfQ=="}\n')
    rows = [r for cols in read_dump(str(dump)) for r in _rows(cols)]
    assert [(r["pos_source"], r["pos_partition"], r["pos_offset"]) for r in rows] == [
        ("t", 1, 5), (str(dump), -1, 2), (str(dump), -1, 3)]
    assert [h["key"] for h in rows[1]["pos_headers"]] == ["cdc-dump-error"]


def test_a_corrupt_avro_container_keeps_what_was_readable_and_dead_letters_the_rest(tmp_path):
    import fastavro

    from cdc_jobs.io.files import read_avro

    schema = fastavro.parse_schema({"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]})
    path = tmp_path / "a.avro"
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, ({"s": "x" * 50} for _ in range(400)), sync_interval=2000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])  # cut in the middle of a block
    rows = [r for cols in read_avro(str(path)) for r in _rows(cols)]
    assert 0 < len(rows) - 1 < 400
    assert [r["pos_offset"] for r in rows] == list(range(1, len(rows) + 1))
    last = rows[-1]
    assert [h["key"] for h in last["pos_headers"]] == ["cdc-avro-error"]
    decoded = [r for b in decode_batches("dts-avro", [pa.RecordBatch.from_pylist([last], schema=RAW_ARROW)])
               for r in b.to_pylist()]
    assert decoded[0]["dl_reason"] and decoded[0]["pos_offset"] == len(rows)


def test_a_block_claiming_more_records_than_it_holds_gets_the_same_error_text_every_read(tmp_path):
    """fastavro's EOFError named the block's BytesIO with its memory address, so the same damaged container gave
    its dead letter another reason on every replay."""
    import io

    import fastavro

    from cdc_jobs.io.files import read_avro

    schema = fastavro.parse_schema({"type": "record", "name": "R", "fields": [{"name": "d", "type": "double"}]})
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"d": 1.5}] * 10)
    data = bytearray(buf.getvalue())
    count_at = data.index(bytes(data[-16:])) + 16  # the first block's record count, after the header's sync marker
    assert data[count_at] == 20  # 10, zigzag-encoded
    data[count_at] = 22  # says 11
    path = tmp_path / "a.avro"
    path.write_bytes(bytes(data))

    def error_text() -> str:
        [text] = [h["value"].decode() for cols in read_avro(str(path)) for r in _rows(cols)
                  for h in r["pos_headers"] if h["key"] == "cdc-avro-error"]
        return text

    first = error_text()
    assert first.startswith("EOFError: cannot read double") and " at 0x" not in first, first
    assert error_text() == first


def _rows(cols: dict) -> list[dict]:
    """The RAW rows of an archive reader's columns."""
    return pa.RecordBatch.from_pydict(cols, schema=RAW_ARROW).to_pylist()
