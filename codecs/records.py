"""Event <-> flat record (plain Python values), the shape stored in Parquet and passed through Arrow batches.

The field list and types are defined once in ``event_schema.EVENT_ARROW``; ``to_record`` fills exactly those
fields (a test checks it). Images are lists of (column, text) pairs so an Arrow map keeps NULL values, and a
missing image (None) stays distinguishable from an empty one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .event import Column, Event, Image, Op, Position
from .event_schema import EVENT_FIELDS  # noqa: F401  (the record's fields, in order)


def _image_out(image: Optional[Image]) -> Optional[list[tuple[str, Optional[str]]]]:
    return None if image is None else list(image.items())


def _image_in(value: Any) -> Optional[Image]:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    return {k: v for k, v in value}


def to_record(e: Event) -> dict[str, Any]:
    p = e.position
    return {
        "format": e.format,
        "op": e.op.value,
        "database": e.database,
        "schema": e.schema,
        "table": e.table,
        "table_name": e.qualified_table,
        "before": _image_out(e.before),
        "after": _image_out(e.after),
        "columns": [
            {"name": c.name, "type_name": c.type_name, "jdbc_type": c.jdbc_type, "number": c.number}
            for c in e.columns
        ],
        "primary_key": list(e.primary_key),
        "event_time_ms": e.event_time_ms,
        "sequence": list(e.sequence),
        "pos_source": p.source,
        "pos_partition": p.partition,
        "pos_offset": p.offset,
        "pos_index": p.index,
        "pos_timestamp_ms": p.timestamp_ms,
        "pos_key": p.key,
        "pos_headers": [{"key": k, "value": v} for k, v in p.headers],
        "transaction_id": e.transaction_id,
        "ddl": e.ddl,
        "vendor": orjson.dumps(dict(e.vendor), default=str).decode() if e.vendor else None,
        "fragment_key": e.fragment_key,
        "fragment_index": e.fragment_index,
        "fragment_total": e.fragment_total,
        "removed_columns": list(e.removed_columns),
        "replaces_row": e.replaces_row,
        "row_id_column": e.row_id_column,
    }


def from_record(r: Mapping[str, Any]) -> Event:
    headers = tuple((h["key"], h["value"]) for h in (r.get("pos_headers") or ()))
    return Event(
        format=r["format"],
        op=Op(r["op"]),
        database=r.get("database"),
        schema=r.get("schema"),
        table=r.get("table"),
        before=_image_in(r.get("before")),
        after=_image_in(r.get("after")),
        columns=tuple(
            Column(c["name"], c.get("type_name"), c.get("jdbc_type"), bool(c.get("number")))
            for c in (r.get("columns") or ())
        ),
        primary_key=tuple(r.get("primary_key") or ()),
        event_time_ms=r.get("event_time_ms"),
        sequence=tuple(Decimal(s) for s in (r.get("sequence") or ())),
        position=Position(
            source=r["pos_source"],
            partition=r.get("pos_partition", -1),
            offset=r.get("pos_offset", 0),
            index=r.get("pos_index", 0),
            timestamp_ms=r.get("pos_timestamp_ms"),
            key=r.get("pos_key"),
            headers=headers,
        ),
        transaction_id=r.get("transaction_id"),
        ddl=r.get("ddl"),
        vendor=orjson.loads(r["vendor"]) if r.get("vendor") else {},
        fragment_key=r.get("fragment_key"),
        fragment_index=r.get("fragment_index") or 0,
        fragment_total=r.get("fragment_total") or 1,
        removed_columns=tuple(r.get("removed_columns") or ()),
        replaces_row=bool(r.get("replaces_row")),
        row_id_column=r.get("row_id_column"),
    )


def to_records(events: Iterable[Event]) -> list[dict[str, Any]]:
    return [to_record(e) for e in events]


_OPS = {o.value: o for o in Op}


def declared_columns(array: pa.ListArray) -> list[tuple[Column, ...]]:
    """The ``columns`` column of EVENT rows -> each row's declared columns, one shared tuple per distinct
    declaration (the rows of a table repeat theirs). Read from the flat child arrays: no dict per entry."""
    flat = array.flatten()  # the entries of the non-null rows, in row order
    entries = list(zip(*(flat.field(f).to_pylist() for f in ("name", "type_name", "jdbc_type", "number"))))
    declared: dict[tuple, tuple[Column, ...]] = {}
    out: list[tuple[Column, ...]] = []
    at = 0
    for length in pc.list_value_length(array).to_pylist():
        if not length:  # NULL or empty
            out.append(())
            continue
        ident = tuple(entries[at:at + length])
        at += length
        decl = declared.get(ident)
        if decl is None:
            decl = declared[ident] = tuple(Column(name, t, j, bool(number)) for name, t, j, number in ident)
        out.append(decl)
    return out


def events_from_batch(batch: pa.RecordBatch) -> list[Event]:
    """An Arrow batch of EVENT rows -> Events (``events_from_columns``, declarations via ``declared_columns``)."""
    cols = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names) if name != "columns"}
    columns = batch.column("columns") if "columns" in batch.schema.names else None
    return events_from_columns(cols, batch.num_rows, None if columns is None else declared_columns(columns))


def events_from_columns(cols: Mapping[str, list], n: int,
                        declarations: Optional[list[tuple[Column, ...]]] = None) -> list[Event]:
    """EVENT columns (``RecordBatch.to_pydict()``: one Python list per field) -> Events, the same values as
    ``from_record`` row by row. Converting column-wise is several times cheaper than ``to_pylist`` (one dict per
    row), and the rows of a table share one declared-columns tuple, built once per distinct declaration
    (``declarations``: already built per row, e.g. by ``declared_columns``)."""
    get = cols.get
    none = [None] * n
    fmt, op, database, schema, table = cols["format"], cols["op"], get("database", none), get("schema", none), \
        get("table", none)
    before, after, columns, pk = get("before", none), get("after", none), get("columns", none), \
        get("primary_key", none)
    event_ms, seq = get("event_time_ms", none), get("sequence", none)
    src, part, off, idx = cols["pos_source"], get("pos_partition", none), get("pos_offset", none), \
        get("pos_index", none)
    ts, key, headers = get("pos_timestamp_ms", none), get("pos_key", none), get("pos_headers", none)
    txn, ddl, vendor = get("transaction_id", none), get("ddl", none), get("vendor", none)
    frag_key, frag_index, frag_total = get("fragment_key", none), get("fragment_index", none), \
        get("fragment_total", none)
    removed, replaces, row_id = get("removed_columns", none), get("replaces_row", none), get("row_id_column", none)
    declared: dict[tuple, tuple[Column, ...]] = {}
    out = []
    for i in range(n):
        if declarations is not None:
            decl = declarations[i]
        elif cs := columns[i]:
            ident = tuple((c["name"], c.get("type_name"), c.get("jdbc_type"), bool(c.get("number"))) for c in cs)
            decl = declared.get(ident)
            if decl is None:
                decl = declared[ident] = tuple(Column(*c) for c in ident)
        else:
            decl = ()
        b, a, h, v, s = before[i], after[i], headers[i], vendor[i], seq[i]
        out.append(Event(
            format=fmt[i], op=_OPS[op[i]], database=database[i], schema=schema[i], table=table[i],
            before=None if b is None else dict(b), after=None if a is None else dict(a), columns=decl,
            primary_key=tuple(pk[i] or ()), event_time_ms=event_ms[i],
            sequence=tuple(x if type(x) is Decimal else Decimal(x) for x in s) if s else (),
            position=Position(
                source=src[i], partition=-1 if part[i] is None else part[i], offset=off[i] or 0,
                index=idx[i] or 0, timestamp_ms=ts[i], key=key[i],
                headers=tuple((x["key"], x["value"]) for x in h) if h else ()),
            transaction_id=txn[i], ddl=ddl[i], vendor=orjson.loads(v) if v else {},
            fragment_key=frag_key[i], fragment_index=frag_index[i] or 0, fragment_total=frag_total[i] or 1,
            removed_columns=tuple(removed[i] or ()), replaces_row=bool(replaces[i]), row_id_column=row_id[i],
        ))
    return out

