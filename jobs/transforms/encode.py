"""Canonical events -> messages of a target format, in Arrow batches on the executors.

Partitioning follows what the target must keep in order (``Capabilities.order_scope``):
- "key": only the changes of one row must stay in order, so events are hash-partitioned by table *and* key
  (the primary-key values of the after image, else the before image) and a large table is encoded by many tasks;
- "table": the target groups rows of one source message or transaction (Canal ``data[]``, Debezium/DTS
  transactions), so each table goes to one task.
Either way each task sorts its events by the canonical order (Spark's external sort spills to disk) and the
encoder streams over Arrow batches, holding at most one source message back: memory is bounded by the batch size,
not by the table. Output is the same on every run for the same input and ``partitions``.

A "key" target writes each event's messages on their own (no message packs events), so its messages do not depend
on their neighbours, and where the source already gives each key's events in order (a Kafka partition, an archive
file read in offset order) they are encoded where they were decoded (``in_source_order``: ``encode_each`` over the
same partitions, no shuffle and no sort). Every key's messages then come in the order its events were read.

An event the target cannot encode (a value out of its range, an op it has no way to express, a codec bug) becomes
an encode dead letter row (``el_*`` columns set) instead of aborting the job; the rest of its source message is
still encoded.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any, Iterable, Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_codecs import Codec, EncodeError, EncodedMessage, Event, get_codec
from cdc_codecs.base import PlainColumns, group_by_message
from cdc_codecs.event_schema import ENCODED_ARROW, ENCODED_HEADLESS_ARROW, EVENT_FIELDS, ORDER_COLUMNS
from cdc_codecs.records import declared_columns, events_from_batch, events_from_columns, to_record

from cdc_jobs.io import codec_env
from cdc_jobs.schemas import ENCODED_HEADLESS_SPARK, ENCODED_SPARK
from cdc_jobs.transforms.gc_pause import paused_gc

__all__ = ["ENCODED_ARROW", "ENCODED_SPARK", "encode", "encode_batches", "encode_each", "encode_events",
           "in_source_order", "source_headers", "task_count"]


def _source_headers(source: str, partition: int, offset: int) -> list[dict]:
    """Where the event was read from, so a consumer of the re-encoded topic can trace every message back."""
    return [{"key": "cdc-source", "value": source.encode()},
            {"key": "cdc-partition", "value": str(partition).encode()},
            {"key": "cdc-offset", "value": str(offset).encode()}]


def _dump_line(key: bytes | None, value: bytes, headers: list[dict]) -> str:
    """The file line of a binary message: the Kafka dump format ``replay`` reads back."""
    return orjson.dumps({
        "key": base64.b64encode(key).decode() if key is not None else None,
        "value": base64.b64encode(value).decode(),
        "headers": [{"key": h["key"], "value": base64.b64encode(h["value"]).decode()} for h in headers],
    }).decode()


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def _dead_letter(fmt: str, e: Event, exc: Exception) -> dict:
    """An event the target format cannot carry: the event itself (as its EVENT record, JSON), field, reason."""
    p = e.position
    if isinstance(exc, EncodeError):
        field, why = exc.field, str(exc)
    else:  # a codec bug must not lose the event either; it is reported with its type
        field, why = "(event)", f"{fmt}: cannot encode: {type(exc).__name__}: {exc}"
    record = to_record(e)
    return {"table_name": e.qualified_table, "op": e.op.value, "events": 0, "key": None, "value": None,
            "headers": None, "line": None, "el_field": field, "el_reason": f"{why} (event from {p.describe()}, "
            f"row {p.index})", "el_event": orjson.dumps(record, default=_json_default).decode(),
            "pos_source": p.source, "pos_partition": p.partition, "pos_offset": p.offset, "pos_index": p.index}


def _messages(codec, binary: bool, group: list[Event]) -> list[dict]:
    p = group[0].position
    headers = _source_headers(p.source, p.partition, p.offset)
    return [{"table_name": m.table, "op": m.op, "events": m.events, "key": m.key, "value": m.value,
             "headers": headers, "line": _dump_line(m.key, m.value, headers) if binary else None,
             "el_field": None, "el_reason": None, "el_event": None,
             "pos_source": p.source, "pos_partition": p.partition, "pos_offset": p.offset, "pos_index": p.index}
            for m in codec.encode(group)]


def encode_events(fmt: str, events: list[Event]) -> list[dict]:
    """Events in canonical order -> ENCODED rows. A source message whose events cannot all be encoded together
    is retried event by event, so only the events that fail become dead letters (the others are written, each
    in a message of its own)."""
    codec = get_codec(fmt)
    binary = codec.capabilities.binary
    rows: list[dict] = []
    for group in group_by_message(events):
        try:
            rows.extend(_messages(codec, binary, group))
            continue
        except Exception:  # noqa: BLE001  (isolated below, event by event)
            pass
        for e in group:
            try:
                rows.extend(_messages(codec, binary, [e]))
            except Exception as exc:  # noqa: BLE001  (EncodeError, or a codec bug: both are dead letters)
                rows.append(_dead_letter(fmt, e, exc))
    return rows


def encode_batches(fmt: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows of one source message may straddle two Arrow batches; the trailing message is held back until the
    next batch so that multi-row messages (Canal) are packed back whole."""
    codec = get_codec(fmt)
    if type(codec).plain_messages is not Codec.plain_messages:
        yield from _plain_batches(codec, batches)
        return
    pending: list[Event] = []
    for batch in batches:
        with paused_gc():
            pending.extend(events_from_batch(batch))
            if not pending:
                continue
            groups = group_by_message(pending)
            ready = [e for g in groups[:-1] for e in g]
            pending = groups[-1]
            encoded = pa.RecordBatch.from_pylist(encode_events(fmt, ready), schema=ENCODED_ARROW) if ready else None
        if encoded is not None:
            yield encoded
    if pending:
        with paused_gc():
            encoded = pa.RecordBatch.from_pylist(encode_events(fmt, pending), schema=ENCODED_ARROW)
        yield encoded


def _plain_batches(codec: Codec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``encode_batches`` for a target with a fast path (``Codec.plain_messages``): each source message's events
    are offered to it as batch rows, and only a message it declines is encoded from Events (``encode_events``,
    with the same dead-letter isolation). The same rows as the Event path, in the same order: every message
    carries the position and source headers of its source message's first event."""
    held: pa.RecordBatch | None = None  # the trailing source message of the last batch (it may continue)
    for batch in batches:
        with paused_gc():
            if held is not None and held.num_rows:
                batch = pa.concat_batches([held, batch])
            if not batch.num_rows:
                continue
            encoded, held = _plain_batch(codec, batch, last=False)
        if encoded is not None:
            yield encoded
    if held is not None and held.num_rows:
        with paused_gc():
            encoded, _ = _plain_batch(codec, held, last=True)
        if encoded is not None:
            yield encoded


_ENCODED_NAMES = tuple(ENCODED_ARROW.names)


def _plain_batch(codec: Codec, batch: pa.RecordBatch, last: bool
                 ) -> tuple[pa.RecordBatch | None, pa.RecordBatch | None]:
    """ENCODED rows of the complete source messages of ``batch`` (all of them when ``last``), and the rest. The
    target's column-wise path (``Codec.plain_columns``) is offered the complete messages first; a source message
    it does not take whole goes to ``plain_messages``, then to ``encode_events``."""
    cols = _Columns(batch)
    n = batch.num_rows
    fmt, sources, partitions, offsets, indexes = cols["format"], cols["pos_source"], cols["pos_partition"], \
        cols["pos_offset"], cols["pos_index"]
    # Runs of rows from one source message (``group_by_message``): same format, source, partition and offset.
    starts = [0] + [i for i in range(1, n) if (fmt[i], sources[i], partitions[i], offsets[i])
                    != (fmt[i - 1], sources[i - 1], partitions[i - 1], offsets[i - 1])]
    end = n if last else starts[-1]
    bounds = list(zip(starts, starts[1:] + [n]))
    if not last:
        bounds = bounds[:-1]
    if not bounds:
        return None, batch
    plain = codec.plain_columns(batch.slice(0, end))
    if plain is not None:
        taken, taken_messages = _taken_messages(plain)
    declared: list[tuple] | None = None
    binary = codec.capabilities.binary
    rows: list[tuple] = []
    for a, b in bounds:
        if plain is not None and all(taken[a:b]):
            messages = taken_messages[a:b]
        else:
            if declared is None:
                declared = declared_columns(batch.column("columns").slice(0, end))
            messages = codec.plain_messages(cols, declared, range(a, b))
        if messages is None:
            part = {name: cols[name][a:b] for name in batch.schema.names if name != "columns"}
            for r in encode_events(codec.name, events_from_columns(part, b - a, declared[a:b])):
                rows.append(tuple(r[name] for name in _ENCODED_NAMES))
            continue
        source, partition, offset, index = sources[a], partitions[a], offsets[a], indexes[a]
        partition = -1 if partition is None else partition
        offset, index = offset or 0, index or 0
        headers = _source_headers(source, partition, offset)
        for m in messages:
            rows.append((m.table, m.op, m.events, m.key, m.value, headers,
                         _dump_line(m.key, m.value, headers) if binary else None, None, None, None,
                         source, partition, offset, index))
    encoded = pa.RecordBatch.from_arrays([pa.array(list(col), type=f.type) for col, f in
                                          zip(zip(*rows), ENCODED_ARROW)], schema=ENCODED_ARROW) if rows else None
    return encoded, None if last else batch.slice(end)


class _Columns(dict):
    """EVENT columns of a batch as Python lists, each converted when first read: the fast path reads about half
    of them, and converting every column was a third of its cost."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        super().__init__()
        self.batch = batch

    def __missing__(self, name: str) -> list:
        column = self[name] = self.batch.column(name).to_pylist()
        return column

    def get(self, name: str, default=None):
        return self[name] if name in self.batch.schema.names else default

    def rows(self, i: int) -> dict[str, list]:
        """Every column (but ``columns``) of row ``i``, as ``events_from_columns`` takes it."""
        return {name: self[name][i:i + 1] for name in self.batch.schema.names if name != "columns"}


def encode_each(fmt: str, events: pa.RecordBatch) -> pa.RecordBatch | None:
    """EVENT rows (in archive order) -> ENCODED_HEADLESS rows, for a target whose order scope is "key": each event
    encoded on its own, as ``encode_events`` encodes a source message event by event when it must. The target's
    column-wise path (``Codec.plain_columns``) takes the whole batch where it can; otherwise its row path
    (``Codec.plain_messages``) is tried on the whole batch and then event by event, and ``encode_events`` takes
    the rest. Every message carries its event's position; what the event already holds as Arrow columns is taken
    from the batch, not rebuilt from Python values."""
    n = events.num_rows
    if not n:
        return None
    codec = get_codec(fmt)
    binary = codec.capabilities.binary
    with paused_gc():
        plain = codec.plain_columns(events)
        if plain is not None and pc.all(plain.taken).as_py():  # the common case: no Python object per row
            of: pa.Array | None = None
            none = pa.nulls(n, pa.string())
            arrays = {"table_name": plain.table, "op": plain.op, "events": pa.nulls(n, pa.int32()).fill_null(1),
                      "key": plain.key, "value": plain.value, "el_field": none, "el_reason": none, "el_event": none}
        else:
            of, arrays = _encode_rows(codec, events, plain)
        source, partition, offset, index = (
            events.column(name) if of is None else events.column(name).take(of)
            for name in ("pos_source", "pos_partition", "pos_offset", "pos_index"))
        # A message's position is its event's (``Position``: no partition is -1, no offset or index 0).
        partition, offset, index = pc.fill_null(partition, -1), pc.fill_null(offset, 0), pc.fill_null(index, 0)
        line = None
        if binary:  # the dump line carries the source headers (``_dump_line``)
            line = pa.array([None if reason is not None else _dump_line(k, v, _source_headers(src, part, off))
                             for k, v, reason, src, part, off in zip(
                                 arrays["key"].to_pylist(), arrays["value"].to_pylist(),
                                 arrays["el_reason"].to_pylist(), source.to_pylist(), partition.to_pylist(),
                                 offset.to_pylist())], pa.string())
        arrays.update({
            "line": line if line is not None else pa.nulls(len(arrays["value"]), pa.string()),
            "pos_source": source, "pos_partition": partition, "pos_offset": offset, "pos_index": index,
        })
        return pa.RecordBatch.from_arrays([arrays[f.name].cast(f.type) for f in ENCODED_HEADLESS_ARROW],
                                          schema=ENCODED_HEADLESS_ARROW)


def _encode_rows(codec: Codec, events: pa.RecordBatch, plain: PlainColumns | None
                 ) -> tuple[pa.Array, dict[str, pa.Array]]:
    """``encode_each``'s messages where the column-wise path did not take every row: (the event of each message,
    the message columns)."""
    n = events.num_rows
    cols = _Columns(events)
    declared = declared_columns(events.column("columns"))
    fast = type(codec).plain_messages is not Codec.plain_messages
    messages: list[tuple] = []
    if plain is not None:
        taken, taken_messages = _taken_messages(plain)
        whole = None
    else:
        taken = [False] * n
        whole = codec.plain_messages(cols, declared, range(n)) if fast else None
    if whole is not None and len(whole) == n:  # one message per event, in order
        return (pa.array(range(n), pa.int64()),
                _message_arrays([(m.table, m.op, m.events, m.key, m.value, None, None, None) for m in whole]))
    of_event = []
    for i in range(n):
        if taken[i]:
            one: list[EncodedMessage] | None = [taken_messages[i]]
        else:
            one = codec.plain_messages(cols, declared, range(i, i + 1)) if fast else None
        if one is not None and len(one) == 1:
            m = one[0]
            of_event.append(i)
            messages.append((m.table, m.op, m.events, m.key, m.value, None, None, None))
            continue
        for r in encode_events(codec.name, events_from_columns(cols.rows(i), 1, declared[i:i + 1])):
            of_event.append(i)
            messages.append((r["table_name"], r["op"], r["events"], r["key"], r["value"], r["el_field"],
                             r["el_reason"], r["el_event"]))
    return pa.array(of_event, pa.int64()), _message_arrays(messages)


def _taken_messages(plain: PlainColumns) -> tuple[list[bool], list[EncodedMessage]]:
    """The column-wise path's result row by row, where a row path mixes it with ``plain_messages`` and ``encode``:
    which rows it took, and each row's message (meaningless where not taken)."""
    columns = (a.to_pylist() for a in (plain.table, plain.op, plain.key, plain.value))
    return plain.taken.to_pylist(), [EncodedMessage(value, key, table, op, 1)
                                     for table, op, key, value in zip(*columns)]


def _message_arrays(messages: list[tuple]) -> dict[str, pa.Array]:
    names = ("table_name", "op", "events", "key", "value", "el_field", "el_reason", "el_event")
    types = (pa.string(), pa.string(), pa.int32(), pa.binary(), pa.binary(), pa.string(), pa.string(), pa.string())
    columns = list(zip(*messages)) if messages else [()] * len(names)
    return {name: pa.array(list(col), t) for name, col, t in zip(names, columns, types)}


def source_headers() -> SparkColumn:
    """``_source_headers`` of a message row as a Spark expression (NULL on an encode dead letter's row), so
    that messages encoded where they were decoded need not carry them through the shuffle."""
    def header(name: str, value: SparkColumn) -> SparkColumn:
        return F.struct(F.lit(name).alias("key"), F.encode(value, "UTF-8").alias("value"))

    return F.when(F.col("el_reason").isNull(), F.array(
        header("cdc-source", F.col("pos_source")), header("cdc-partition", F.col("pos_partition").cast("string")),
        header("cdc-offset", F.col("pos_offset").cast("string"))))


# About how many events one encode task takes. A task's sort spills to disk, but what it hands to Python, gets
# back and caches is per task: with a fixed 8 tasks, 4M events (500k a task) ran the default 1 GiB heap out of
# memory, while 100k a task re-encoded the same 4M in bounded memory (bench/RESULTS.md).
EVENTS_PER_TASK = 100_000


def task_count(events: int, minimum: int) -> int:
    """Encode tasks for ``events`` events: ``minimum`` (the configured shuffle partitions) or more, so that no
    task gets much more than ``EVENTS_PER_TASK``. A "table" order scope still gives each table one task."""
    return max(minimum, -(-events // EVENTS_PER_TASK))


def routing_key() -> SparkColumn:
    """The row a change belongs to, as Spark computes ``cdc_codecs.base.message_key``: the primary-key values
    of the after image (else the before image). Events without a key (DDL, control) route by table alone."""
    image = F.coalesce(F.col("after"), F.col("before"))
    values = F.transform(F.col("primary_key"), lambda k: F.coalesce(image[k], F.col("before")[k], F.lit("")))
    return F.when(F.size(F.col("primary_key")) > 0, F.array_join(values, "\u0001"))


def encode(events: DataFrame, fmt: str, partitions: int) -> DataFrame:
    """EVENT rows (any partitioning) -> ENCODED rows, partitioned as the target's order scope allows."""
    target = get_codec(fmt)
    frame = events.select(*EVENT_FIELDS)
    if target.capabilities.order_scope == "key":
        frame = frame.repartition(partitions, F.col("table_name"), routing_key())
    else:
        frame = frame.repartition(partitions, F.col("table_name"))
    ordered = frame.sortWithinPartitions(*ORDER_COLUMNS)
    return ordered.mapInArrow(codec_env.carried(lambda it: encode_batches(fmt, it)), ENCODED_SPARK)


def in_source_order(events: DataFrame, fmt: str) -> DataFrame:
    """EVENT rows in source order -> ENCODED rows in the same partitions and order, for a "key" target: each
    task encodes its own events (``encode_each``), so a key read in order by one task keeps that order."""
    def encoded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keyed = encode_each(fmt, batch)
            if keyed is not None:
                yield keyed

    keyed = events.select(*EVENT_FIELDS).mapInArrow(codec_env.carried(encoded), ENCODED_HEADLESS_SPARK)
    return keyed.select(*[source_headers().alias(n) if n == "headers" else F.col(n) for n in ENCODED_ARROW.names])


def messages(encoded: DataFrame) -> DataFrame:
    return encoded.where(F.col("el_reason").isNull())


def dead_letters(encoded: DataFrame) -> DataFrame:
    return encoded.where(F.col("el_reason").isNotNull())


def file_lines(encoded: DataFrame) -> DataFrame:
    """The text the file sink writes, one message a line: the JSON itself for text formats (``value``, so it
    is not carried twice through the job), the dump line for binary formats."""
    return messages(encoded).select(F.coalesce(F.col("line"), F.col("value").cast("string")).alias("value"))
