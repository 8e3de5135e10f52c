"""Event <-> flat record (plain Python values), the shape stored in Parquet and passed through Arrow batches.

The field list and types are defined once in ``event_schema.EVENT_ARROW``; ``to_record`` fills exactly those
fields (a test checks it). Images are lists of (column, text) pairs so an Arrow map keeps NULL values, and a
missing image (None) stays distinguishable from an empty one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional

import orjson

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
