"""RAW messages -> canonical events and dead letters, in Arrow batches on the executors.

Every archived record produces at least one output row: its events, or one dead-letter row carrying the raw bytes,
position and the codec's error. Exactly one row per record has ``first_of_record`` set, which is what makes
``records read = rows with first_of_record`` hold for the accounting.

The file source decodes where it reads (``cdc_jobs.io.files`` calls ``decode_columns`` in its reader): a message
goes from its bytes to DECODED rows in one Python step, never through the JVM as bytes first. Kafka records are
read by Spark's Kafka source and reach ``decode_batches`` as Arrow batches (``cdc_jobs.io.kafka_source``). ``assemble`` then joins the fragments of multi-message events across partitions.

A codec with a fast path for its plain messages (``Codec.plain_rows``, or ``ContainerDecoder.rows`` for the datums
of an Avro container) hands their rows over as tuples without an ``Event`` per row; any other message (and any it
declines) takes ``decode``, which is the reference.
"""

from __future__ import annotations

import base64
from typing import Iterable, Iterator

import orjson
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_codecs import Codec, DecodeError, Event, Position, get_codec
from cdc_codecs.contract import check_event, check_events
from cdc_codecs.records import events_from_batch
from cdc_codecs.shared.plain_rows import DECODED_ROW, column_dicts
from cdc_codecs.event_schema import DECODED_ARROW, EVENT_FIELDS, FRAGMENT, TOMBSTONE

from cdc_jobs.io import codec_env
from cdc_jobs.schemas import DECODED_SPARK
from cdc_jobs.transforms.decode_guard import guarded_batch
from cdc_jobs.transforms.gc_pause import paused_gc


def _position(cols: dict, i: int) -> Position:
    raw_headers = cols["pos_headers"][i]
    headers = tuple((h["key"], h["value"]) for h in raw_headers) if raw_headers else ()
    return Position(
        source=cols["pos_source"][i],
        partition=cols["pos_partition"][i],
        offset=cols["pos_offset"][i],
        timestamp_ms=cols["pos_timestamp_ms"][i],
        key=cols["pos_key"][i],
        headers=headers,
    )


def dead_letter(fmt: str, pos: Position, raw: bytes | None, field: str, reason: str) -> dict:
    row = dict.fromkeys(EVENT_FIELDS)
    row.update(
        format=fmt, pos_source=pos.source, pos_partition=pos.partition, pos_offset=pos.offset, pos_index=0,
        pos_timestamp_ms=pos.timestamp_ms, pos_key=pos.key, pos_headers=[], fragment_index=0, fragment_total=1,
        dl_reason=reason, dl_field=field, dl_raw=raw, first_of_record=True,
    )
    return row


def tombstone(fmt: str, pos: Position) -> dict:
    row = dead_letter(fmt, pos, None, "value", "")
    row.update(op=TOMBSTONE, dl_reason=None, dl_field=None)
    return row


def decode_rows(fmt: str, cols: dict, n: int) -> list[dict]:
    """RAW columns -> DECODED rows as dicts (the readable reference; ``decode_batches`` builds the same rows
    column-wise)."""
    out = _DecodedColumns()
    _decode_into(out, get_codec(fmt), fmt, cols, n)
    return out.rows()


def _decode_into(out: "_DecodedColumns", codec, fmt: str, cols: dict, n: int) -> None:
    values = cols["value"]
    # Avro container records the reader already read: (decoder, datum) per row (``Codec.container_decoder``);
    # their ``value`` is still the record's archived bytes, which a dead letter keeps (``cdc_jobs.io.files``).
    datums = cols.get("datum") or (None,) * n
    # The codec's fast path for its plain messages (``Codec.plain_rows``), when it has one.
    plain = getattr(codec, "plain_rows", None)
    if getattr(type(codec), "plain_rows", None) is Codec.plain_rows:
        plain = None  # the default declines every message: skip the call
    table_field = codec.required.table
    sources, partitions, offsets = cols["pos_source"], cols["pos_partition"], cols["pos_offset"]
    stamps, keys, headers = cols["pos_timestamp_ms"], cols["pos_key"], cols["pos_headers"]
    for i in range(n):
        datum = datums[i]
        raw = values[i] if datum is None else None
        if plain is not None and raw is not None:
            rows = plain(raw, (sources[i], partitions[i], offsets[i], stamps[i], keys[i], headers[i]))
            if rows is not None and named(rows):
                out.add_rows(rows)
                continue
        elif datum is not None and datum[0].rows is not None:  # the container decoder's fast path
            rows = datum[0].rows(datum[1], (sources[i], partitions[i], offsets[i], stamps[i], keys[i], headers[i]))
            if rows is not None and named(rows):
                out.add_rows(rows)
                continue
        pos = _position(cols, i)
        if datum is None and raw is None:
            # A Kafka tombstone (null value) deletes a key for compaction; it is not a CDC message. It is
            # counted as such, so the accounting still closes, and never becomes an event.
            out.add_dead(tombstone(fmt, pos))
            continue
        try:
            events = codec.decode(raw, pos) if datum is None else datum[0].decode(datum[1], pos, values[i])
            if not events:
                raise DecodeError(fmt, "(message)", pos, "the message holds no event")
            check_events(fmt, events, table_field)  # values that do not fit the event record: a dead letter
        except DecodeError as exc:
            out.add_dead(dead_letter(fmt, pos, values[i], exc.field, str(exc)))
            continue
        except Exception as exc:  # a codec bug must not lose the record either; it is reported with its type
            out.add_dead(dead_letter(fmt, pos, values[i], "(message)",
                                     f"{fmt}: field '(message)' at {pos.describe()}: {type(exc).__name__}: {exc}"))
            continue
        first = True
        for event in events:
            out.add_event(event, first)
            first = False


_DATABASE, _TABLE = DECODED_ROW.index("database"), DECODED_ROW.index("table")


def named(rows: list[tuple]) -> bool:
    """Whether every row a fast path built names its database and table. A message without them is not the
    plain shape: ``decode`` (the reference) takes it and names what is missing, so no fast path can put a data
    event without table into events/ (``contract.check_event``)."""
    for r in rows:
        if not r[_TABLE] or not r[_DATABASE]:
            return False
    return True


_NAMES = DECODED_ROW  # the field order of the row tuples (``cdc_codecs.records``); add_event builds the same


class _DecodedColumns:
    """DECODED rows: the same values as ``to_record(event)`` with empty dead-letter fields (see
    ``cdc_codecs.records``), without building one dict per row. Each row is one tuple in ``DECODED_ARROW`` order
    (one tuple build per event is much cheaper than an append per column); the tuples are turned into columns once
    per batch and handed to Arrow in one call per column."""

    def __init__(self) -> None:
        self._rows: list[tuple] = []
        # Codecs share one columns tuple between the rows of a table; convert each distinct tuple once.
        self._columns_seen: dict[int, tuple[tuple, list[dict]]] = {}

    def _column_dicts(self, columns: tuple) -> list[dict]:
        hit = self._columns_seen.get(id(columns))
        if hit is not None and hit[0] is columns:
            return hit[1]
        converted = column_dicts(columns)
        self._columns_seen[id(columns)] = (columns, converted)  # holds the tuple, so its id stays unique
        return converted

    def add_event(self, e, first: bool) -> None:
        p = e.position
        # In DECODED_ROW order.
        self._rows.append((
            e.format, e.op.value, e.database, e.schema, e.table, e.qualified_table,
            e.before, e.after,  # Arrow builds a map from the dict (items in order, NULL values kept)
            self._column_dicts(e.columns), e.primary_key, e.event_time_ms, e.sequence,
            p.source, p.partition, p.offset, p.index, p.timestamp_ms, p.key,
            [{"key": k, "value": v} for k, v in p.headers] if p.headers else [],
            e.transaction_id, e.ddl,
            orjson.dumps(dict(e.vendor), default=str).decode() if e.vendor else None,
            e.fragment_key, e.fragment_index, e.fragment_total, e.removed_columns, e.replaces_row,
            e.row_id_column,
            None, None, None, first,  # dl_reason, dl_field, dl_raw, first_of_record
        ))

    def add_rows(self, rows: list[tuple]) -> None:
        """Rows a codec's fast path built (``Codec.plain_rows``), already in DECODED_ROW order."""
        self._rows.extend(rows)

    def add_dead(self, row: dict) -> None:
        self._rows.append(tuple(row[name] for name in _NAMES))

    def __len__(self) -> int:
        return len(self._rows)

    def batch(self) -> pa.RecordBatch:
        if not self._rows:
            return pa.RecordBatch.from_pydict({name: [] for name in _NAMES}, schema=DECODED_ARROW)
        return pa.RecordBatch.from_arrays([_shared_array(col, f.type) if f.name == "columns" else
                                           pa.array(list(col), type=f.type)
                                           for col, f in zip(zip(*self._rows), DECODED_ARROW)],
                                          schema=DECODED_ARROW)

    def rows(self) -> list[dict]:
        return self.batch().to_pylist()


def _shared_array(values: tuple, type_: pa.DataType) -> pa.Array:
    """A column whose rows share a few value objects (the declared columns of a table: ``_column_dicts``):
    each distinct object is converted once and the rows are taken from those, instead of converting the same
    list of structs once per row."""
    index: dict[int, int] = {}
    distinct: list = []
    take: list[int] = []
    for v in values:
        i = index.get(id(v))  # the objects are alive in ``values`` for the whole loop, so ids are unique
        if i is None:
            i = index[id(v)] = len(distinct)
            distinct.append(v)
        take.append(i)
    return pa.array(distinct, type=type_).take(pa.array(take, pa.int32()))


def decode_columns(fmt: str, chunks: Iterable[dict]) -> Iterator[pa.RecordBatch]:
    """RAW columns (one Python list per field, as ``RecordBatch.to_pydict`` or an archive reader gives them)
    -> DECODED Arrow batches, one per chunk."""
    codec = get_codec(fmt)

    def build(cols: dict, n: int) -> pa.RecordBatch:
        out = _DecodedColumns()
        _decode_into(out, codec, fmt, cols, n)
        return out.batch()

    chunks = iter(chunks)
    while True:
        with paused_gc():  # reading the chunk (a source's reader) and decoding it
            cols = next(chunks, None)
            if cols is None:
                return
            # guarded: a record whose rows cannot be built is dead-lettered, not the batch
            batch = guarded_batch(fmt, cols, len(cols["value"]), build)
        yield batch


def decode_batches(fmt: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """RAW Arrow batches -> DECODED Arrow batches."""
    return decode_columns(fmt, (batch.to_pydict() for batch in batches))


def assembled_rows(fmt: str, rows: list[dict]) -> list[dict]:
    """The DECODED rows of one multi-message event's fragments -> the event's row, or a dead letter per fragment."""
    from cdc_codecs.records import from_record

    out = _DecodedColumns()
    assemble_fragments(out, fmt, [from_record(r) for r in rows])
    return out.rows()


def assemble_fragments(out: "_DecodedColumns", fmt: str, fragments: list[Event]) -> None:
    """``assembled_rows`` of the fragments as Events, added to ``out``."""
    codec = get_codec(fmt)
    try:
        event = codec.assemble(_distinct_fragments(fragments))
        check_event(fmt, event, codec.required.table)
        # first_of_record is NULL on rows made by assembly: their records are counted by the fragment markers,
        # and the accounting tells assembled rows apart by it.
        out.add_event(event, None)
    except Exception as exc:  # DecodeError, or a codec bug: neither may lose the fragments
        if not isinstance(exc, DecodeError):
            exc = DecodeError(fmt, "fragment_key", fragments[0].position, f"{type(exc).__name__}: {exc}")
        # Every fragment is a record of its own: each one becomes a dead letter (keeping its bytes if the codec
        # stashed them), so the accounting still closes.
        for f in fragments:
            raw = (f.vendor or {}).get("raw_b64")
            row = dead_letter(fmt, f.position, base64.b64decode(raw) if raw else None, exc.field, str(exc))
            out.add_dead(row | {"first_of_record": None})


# Assembled rows handed to Spark per Arrow batch.
ASSEMBLED_BATCH_ROWS = 4096


def assemble_sorted(fmt: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Fragment rows of a task, sorted by ``fragment_key`` (each key's fragments all in this task) -> the events
    they assemble into (or their dead letters), many keys per batch. A group per key
    (``groupBy().applyInArrow``) cost a Python call and two Arrow conversions per event: most of a DataWorks
    replay, whose every UPDATE is two messages."""
    key, group, out = None, [], _DecodedColumns()
    for batch in batches:
        ready = None
        with paused_gc():  # the batch's fragment events and rows (see gc_pause)
            # column-wise (events_from_batch), several times cheaper than a dict per row and from_record
            for fragment in events_from_batch(batch):
                if group and fragment.fragment_key != key:
                    assemble_fragments(out, fmt, group)
                    group = []
                key = fragment.fragment_key
                group.append(fragment)
            if len(out) >= ASSEMBLED_BATCH_ROWS:
                ready, out = out.batch(), _DecodedColumns()
        if ready is not None:
            yield ready
    with paused_gc():
        if group:
            assemble_fragments(out, fmt, group)
        last = out.batch() if len(out) else None
    if last is not None:
        yield last


def _distinct_fragments(fragments: list) -> list:
    """At-least-once delivery re-sends messages: an identical copy of a fragment (same index and content, any
    position) is the same fragment. Different fragments under one index stay, and the codec rejects them."""
    ordered = sorted(fragments, key=lambda f: f.order_key())
    if len({f.fragment_index for f in fragments}) == len(fragments):
        return ordered  # no two share an index, so none is a copy: the usual case, without a repr per fragment
    seen: dict = {}
    for f in ordered:
        ident = (f.fragment_index, f.fragment_total, repr(f.with_(position=f.position.__class__(""))))
        seen.setdefault(ident, f)
    return list(seen.values())


def assemble(decoded: DataFrame, fmt: str) -> DataFrame:
    """DECODED rows as the codec made them, message by message -> the same with the fragments of each
    multi-message event (grouped by key across all partitions and files) assembled into the event."""
    if not may_fragment(fmt):
        return decoded
    # Read three times below (whole events, fragments, their markers): stored once, or each read decodes the
    # archive again (a DataWorks replay decoded every message three times).
    decoded = decoded.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    whole = decoded.where(F.col("fragment_key").isNull())
    # Each fragment's own record is already counted by a first_of_record marker row; keep those markers as
    # zero-event accounting rows so the assembled event does not count twice.
    markers = decoded.where(F.col("fragment_key").isNotNull() & F.col("first_of_record")).select(
        *[F.lit(None).cast(f.dataType).alias(f.name) if f.name not in _MARKER_KEEP else F.col(f.name)
          for f in DECODED_SPARK.fields]
    ).withColumn("op", F.lit(FRAGMENT))
    assembled = decoded.where(F.col("fragment_key").isNotNull()).repartition("fragment_key") \
        .sortWithinPartitions("fragment_key") \
        .mapInArrow(codec_env.carried(lambda b: assemble_sorted(fmt, b)), DECODED_SPARK)
    return whole.unionByName(assembled).unionByName(markers)


_MARKER_KEEP = {"format", "pos_source", "pos_partition", "pos_offset", "pos_index", "pos_timestamp_ms",
                "first_of_record", "table_name", "fragment_key"}


def may_fragment(fmt: str) -> bool:
    from cdc_codecs.base import Codec

    return type(get_codec(fmt)).assemble is not Codec.assemble
