"""Canonical events -> messages of a target format, in Arrow batches on the executors.

Events are hash-partitioned by table and sorted by the canonical order inside each partition, so each table's
messages come out in sequence order (what a consumer of the re-encoded topic relies on) and the output files are
the same on every run.
"""

from __future__ import annotations

import base64
from typing import Iterable, Iterator

import orjson
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from cdc_codecs import Event, get_codec
from cdc_codecs.base import group_by_message
from cdc_codecs.records import from_record

from .schemas import EVENT_FIELDS, HEADER, ORDER_COLUMNS

ENCODED_ARROW = pa.schema([
    ("table_name", pa.string()),
    ("op", pa.string()),
    ("events", pa.int32()),
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("headers", pa.list_(HEADER)),
    ("line", pa.string()),  # what the file sink writes: the JSON text, or a dump line for binary formats
])
ENCODED_SPARK = from_arrow_schema(ENCODED_ARROW)


def _source_headers(e: Event) -> list[dict]:
    """Where the event was read from, so a consumer of the re-encoded topic can trace every message back."""
    p = e.position
    return [{"key": "cdc-source", "value": p.source.encode()},
            {"key": "cdc-partition", "value": str(p.partition).encode()},
            {"key": "cdc-offset", "value": str(p.offset).encode()}]


def _line(binary: bool, key: bytes | None, value: bytes, headers: list[dict]) -> str:
    if not binary:
        return value.decode("utf-8")
    return orjson.dumps({
        "key": base64.b64encode(key).decode() if key is not None else None,
        "value": base64.b64encode(value).decode(),
        "headers": [{"key": h["key"], "value": base64.b64encode(h["value"]).decode()} for h in headers],
    }).decode()


def encode_events(fmt: str, events: list[Event]) -> list[dict]:
    codec = get_codec(fmt)
    binary = codec.capabilities.binary
    rows = []
    for group in group_by_message(events):
        headers = _source_headers(group[0])
        for m in codec.encode(group):
            rows.append({"table_name": m.table, "op": m.op, "events": m.events, "key": m.key, "value": m.value,
                         "headers": headers, "line": _line(binary, m.key, m.value, headers)})
    return rows


def encode_batches(fmt: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows of one source message may straddle two Arrow batches; the trailing message is held back until the
    next batch so that multi-row messages (Canal) are packed back whole."""
    pending: list[Event] = []
    for batch in batches:
        pending.extend(from_record(r) for r in batch.to_pylist())
        if not pending:
            continue
        groups = group_by_message(pending)
        ready = [e for g in groups[:-1] for e in g]
        pending = groups[-1]
        if ready:
            yield pa.RecordBatch.from_pylist(encode_events(fmt, ready), schema=ENCODED_ARROW)
    if pending:
        yield pa.RecordBatch.from_pylist(encode_events(fmt, pending), schema=ENCODED_ARROW)


def encode(events: DataFrame, fmt: str, partitions: int) -> DataFrame:
    get_codec(fmt)
    ordered = events.select(*EVENT_FIELDS).repartition(partitions, "table_name").sortWithinPartitions(*ORDER_COLUMNS)
    return ordered.mapInArrow(lambda it: encode_batches(fmt, it), ENCODED_SPARK)
