"""No single record can kill a decoded batch.

The decode step turns a RAW Arrow batch into one DECODED Arrow batch. Codecs raise ``DecodeError`` for what
they recognise as malformed and ``cdc_codecs.contract`` rejects values that do not fit the event record, but a
value nobody anticipated (a codec bug: a wrong Python type, a lone UTF-16 surrogate from a ``\\ud800`` escape,
...) would make building the batch raise and fail the Spark task, i.e. the whole replay. ``guarded_batch``
catches that, bisects the RAW batch to find the record(s) whose rows cannot be built, and makes each of them a
dead letter (raw bytes, position, the failing field when it can be named); every other record decodes as usual.
The happy path costs one try block per batch.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import pyarrow as pa

from cdc_codecs import Position, get_codec
from cdc_codecs.records import to_record

from cdc_jobs.schemas import DECODED_ARROW, EVENT_ARROW, EVENT_FIELDS

DecodeBatch = Callable[[dict, int], pa.RecordBatch]


def guarded_batch(fmt: str, cols: dict, n: int, decode_batch: DecodeBatch) -> pa.RecordBatch:
    """``decode_batch(cols, n)``, or, if that raises, the same batch with each record that cannot be built
    replaced by one dead-letter row."""
    try:
        return decode_batch(cols, n)
    except Exception:  # noqa: BLE001 - located and reported per record below
        pass
    parts = _bisect(fmt, cols, 0, n, decode_batch)
    return pa.Table.from_batches(parts, schema=DECODED_ARROW).combine_chunks().to_batches()[0]


def _slice(cols: dict, lo: int, hi: int) -> dict:
    return {k: v[lo:hi] for k, v in cols.items()}


def _bisect(fmt: str, cols: dict, lo: int, hi: int, decode_batch: DecodeBatch) -> list[pa.RecordBatch]:
    """Batches for records [lo, hi): halves that build are kept, a single record that does not is dead-lettered.
    O(k log n) builds for k bad records among n."""
    if hi - lo == 1:
        one = _slice(cols, lo, hi)
        try:
            return [decode_batch(one, 1)]
        except Exception as exc:  # noqa: BLE001 - this record is the culprit
            return [_dead_letter_batch(fmt, one, exc)]
    mid = (lo + hi) // 2
    out = []
    for a, b in ((lo, mid), (mid, hi)):
        part = _slice(cols, a, b)
        try:
            out.append(decode_batch(part, b - a))
        except Exception:  # noqa: BLE001
            out.extend(_bisect(fmt, cols, a, b, decode_batch))
    return out


def _position(one: dict) -> Position:
    return Position(source=one["pos_source"][0], partition=one["pos_partition"][0], offset=one["pos_offset"][0],
                    timestamp_ms=one["pos_timestamp_ms"][0], key=one["pos_key"][0],
                    headers=tuple((h["key"], h["value"]) for h in one["pos_headers"][0] or ()))


def failing_field(fmt: str, raw: bytes, pos: Position) -> tuple[str, str | None]:
    """(field, table): the first event-record column whose value Arrow cannot store, found by decoding the
    record again and converting column by column ("(message)" when it cannot be narrowed down), and the table
    of that event when it is text."""
    try:
        events = get_codec(fmt).decode(raw, pos)
    except Exception:  # noqa: BLE001 - it failed elsewhere than in the codec before; no better name
        return "(message)", None
    for event in events:
        table = event.qualified_table if all(isinstance(p, (str, type(None))) for p in
                                             (event.database, event.schema, event.table)) else None
        try:
            record = to_record(event)
        except Exception:  # noqa: BLE001 - a value of the wrong type: the field whose reset makes it work
            return _culprit(event), table
        for field in EVENT_ARROW:
            try:
                pa.array([record[field.name]], type=field.type)
            except Exception:  # noqa: BLE001
                return field.name, table
    return "(message)", None


def _culprit(event) -> str:
    for f in dataclasses.fields(event):
        if f.name in ("format", "op", "position"):
            continue
        blank = f.default_factory() if f.default_factory is not dataclasses.MISSING else (
            None if f.default is dataclasses.MISSING else f.default)
        try:
            to_record(dataclasses.replace(event, **{f.name: blank}))
            return f.name
        except Exception:  # noqa: BLE001 - not this one
            continue
    return "(message)"


def _dead_letter_batch(fmt: str, one: dict, exc: Exception) -> pa.RecordBatch:
    pos = _position(one)
    raw = one["value"][0]
    field, table = failing_field(fmt, raw, pos) if raw is not None else ("value", None)
    try:
        pa.array([table], pa.string())  # a table name that is not storable text is no help either
    except Exception:  # noqa: BLE001
        table = None
    reason = (f"{fmt}: field '{field}' at {pos.describe()}: the decoded record cannot be stored "
              f"({type(exc).__name__}: {str(exc)[:300]})")
    row = dict.fromkeys(EVENT_FIELDS)
    row.update(format=fmt, pos_source=pos.source, pos_partition=pos.partition, pos_offset=pos.offset, pos_index=0,
               pos_timestamp_ms=pos.timestamp_ms, pos_key=pos.key, pos_headers=[], fragment_index=0,
               fragment_total=1, dl_reason=reason, dl_field=field, dl_raw=raw, first_of_record=True,
               table_name=table or None)
    return pa.RecordBatch.from_pylist([row], schema=DECODED_ARROW)
