"""The golden test of every format: each fixture folder ``tests/fixtures/<format>/`` holds messages (named with
their source in its NOTES.md); every well-formed JSON message decodes, re-encodes to equal JSON (number literals
exact, key order ignored; a ``<name>.key`` file beside it is its Kafka record key), and survives the flat-record trip through the archive unchanged; every ``malformed-*``
message is refused with a ``DecodeError`` naming its format. Vendor-specific assertions stay in
``test_<format>.py``; Avro fixtures (``*.datum.json``, written as Avro JSON) are golden-tested there."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from cdc_codecs import DecodeError, Position, get_codec, records
from cdc_codecs.event_schema import EVENT_ARROW
from cdc_codecs.registry import FORMATS
from golden import FIXTURES_ROOT, as_json  # beside this file

MESSAGES = sorted(p for p in FIXTURES_ROOT.glob("*/*.json") if not p.name.endswith(".datum.json"))
WELL_FORMED = [p for p in MESSAGES if not p.name.startswith("malformed-")]
MALFORMED = [p for p in MESSAGES if p.name.startswith("malformed-")]


def record_key(path):
    """A Kafka record key the message needs (Debezium keys live there), from ``<name>.key`` beside it."""
    key = path.with_suffix(".key")
    return key.read_bytes() if key.exists() else None


def _id(p) -> str:
    return f"{p.parent.name}/{p.name}"


def test_every_fixture_folder_is_a_registered_format_with_notes():
    folders = {p.name for p in FIXTURES_ROOT.iterdir() if p.is_dir()}
    assert folders == set(FORMATS)
    assert all((FIXTURES_ROOT / f / "NOTES.md").is_file() for f in folders)


@pytest.mark.parametrize("path", WELL_FORMED, ids=_id)
def test_golden_reencode_gives_equal_json(path):
    codec = get_codec(path.parent.name)
    raw = path.read_bytes()
    events = codec.decode(raw, Position(source=path.name, partition=0, offset=3, key=record_key(path)))
    assert events, "a fixture message must decode to at least one event"
    assert [as_json(m.value) for m in codec.encode(events)] == [as_json(raw)]
    # the vendor data (fixes, renders) survives the JSON trip through the archive's flat records
    again = [records.from_record(json.loads(json.dumps(records.to_record(e), default=str))) for e in events]
    assert [as_json(m.value) for m in codec.encode(again)] == [as_json(raw)]
    # ... and the Arrow batch the re-encode reads, converted column-wise, gives back the very same events
    batch = pa.RecordBatch.from_pylist(records.to_records(events), schema=EVENT_ARROW)
    assert records.events_from_columns(batch.to_pydict(), batch.num_rows) == events
    assert records.events_from_batch(batch) == events  # the re-encode's path: declarations from the flat arrays


@pytest.mark.parametrize("path", MALFORMED, ids=_id)
def test_malformed_fixture_is_refused_naming_format_and_position(path):
    with pytest.raises(DecodeError) as info:
        get_codec(path.parent.name).decode(path.read_bytes(), Position(source=path.name, offset=11))
    assert info.value.vendor == path.parent.name and f"{path.name} line 11" in str(info.value)
