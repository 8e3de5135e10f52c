"""OceanBase OMS "SharePlex" JSON: ``data`` / ``meta`` / ``key``, ``meta.op`` in ins / upd / del.

INSERT and DELETE carry the whole row in ``data``. An UPDATE carries only the changed columns (new values) in
``data`` and the values before the change in ``key``; the after image is therefore partial and columns missing
from it stay absent (not NULL). There are no column types: ``Column.number`` keeps the bare-number rendering.

Metadata: ``meta.table`` is ``{database}.{table}`` (split at the first dot); ``meta.trans`` ->
``transaction_id``; ``sequence = (scn, seq)`` (``scn`` is OMS's time + counter sequence, ``seq`` the order
inside it; either may be missing); ``meta.time`` (``YYYY-MM-DDTHH:mm:ss``, no zone: read as UTC) ->
``event_time_ms``. ``rowid`` holds the key *values* but not the key names, so ``primary_key`` stays empty;
``rowid``, ``posttime``, ``idx``, ``size`` and unknown keys are kept via ``vendor["fix"]``.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Optional

from ..base import TYPED_FAMILIES, Capabilities, flat_database, untyped
from ..shared.declared_rows import DeclaredRows
from ..shared.json_fix import fix_paths
from ..shared.value_text import int_field, is_text, render
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.columns import column, shared_columns
from .oms_json import SEPARATOR, OmsJsonCodec
from ..shared.required import OBJECT, STRING, Required, need, same_needs

OPS = {"ins": Op.INSERT, "upd": Op.UPDATE, "del": Op.DELETE}
OP_CODES = {Op.INSERT: "ins", Op.SNAPSHOT: "ins", Op.UPDATE: "upd", Op.DELETE: "del"}
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# TIME_FORMAT as OMS writes it (two-digit fields): read without strptime, which was ~7% of a decode. strptime
# still reads (or rejects) every other spelling it accepts, so what is accepted does not change.
_PLAIN_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})")


def _meta_op(msg: dict) -> Optional[str]:
    meta = msg.get("meta")
    code = meta.get("op") if isinstance(meta, dict) else None
    return code if code in OPS else None


# No meta.time: a full-sync row of a source without a time is written without it.
_META_NEEDS = (need("meta.table", STRING, nonempty=True), need("data", OBJECT))
# A record names its table as owner.table in meta.table; an upd carries the values before the change in key.
REQUIRED = Required(_meta_op, {**same_needs(("ins", "del"), *_META_NEEDS),
                               "upd": _META_NEEDS + (need("key", OBJECT),)}, table="meta.table")


class OmsSharePlexCodec(OmsJsonCodec):
    name = "oms-shareplex"
    required = REQUIRED
    description = "OMS SharePlex JSON: data/meta/key, ops ins/upd/del, UPDATE carries changed columns only"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        losses=untyped(*TYPED_FAMILIES),  # no column types: every value is exact text
        primary_key=False,
        typed_values=False,
        before_image="full",
        after_image="changed",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE}),
        notes="UPDATE after image holds only the changed columns (the rest are absent); no column types; no "
              "primary-key names (rowid has values only); event time in whole seconds, no zone; no DDL, "
              "heartbeat, snapshot or transaction markers (snapshot rows are written as ins).",
    )

    # The JVM's declared decode of the plain records (shared.declared_rows); what it declines (cells written as
    # booleans or JSON, an update whose data names columns its key lacks...) ``_event`` decodes.
    jvm_declaration = DeclaredRows(
        op=("meta.op", {code: op.value for code, op in OPS.items()}),
        images=(("row", "data"), ("update_before", "key")),
        reads={"table": ("meta.table", "text"), "stamp_seconds": ("meta.time", "text"),
               "sequence": ("meta.scn", "scalar"), "sequence_next": ("meta.seq", "scalar"),
               "transaction_id": ("meta.trans", "text")},
        writes={"meta.op": "op", "meta.table": "qualified_table", "meta.rowid": "row_id",
                "meta.time": "stamp_seconds", "meta.posttime": "stamp_seconds", "meta.trans": "transaction_text",
                "meta.scn": "sequence_first_text", "meta.seq": "sequence_second_number"},
        nested=("meta",), qualified_table="first_dot", null_cells_declare=True)

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; SharePlex compares ``meta`` key by key and never its row images.

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        return fix_paths(msg, derived, {"data", "key"}, nested=("meta",))

    def derive(self, events: list[Event]) -> dict:
        # Only meta is compared (``fix_paths`` skips data and key): rendering the images would be wasted work.
        e = events[0]
        return {"meta": self._meta(e, e.format == self.name)}

    def _event(self, msg: dict, position: Position) -> Event:
        meta = msg.get("meta")
        if not isinstance(meta, dict):
            raise self.error("meta", position, "expected an object")
        code = meta.get("op")
        op = OPS.get(code) if isinstance(code, str) else None
        if op is None:
            raise self.error("meta.op", position, f"expected ins, upd or del, got {code!r}")
        data, data_bare = self._image(msg.get("data"), "data", position)
        key, key_bare = (self._image(msg.get("key"), "key", position) if op is Op.UPDATE else (None, {}))
        if op is Op.UPDATE and key is None:
            raise self.error("key", position, "an upd record carries the values before the change in key")
        database, table = self._table(meta.get("table"), position)
        before, after = {Op.INSERT: (None, data), Op.DELETE: (data, None), Op.UPDATE: (key, data)}[op]
        columns = _columns([(data, data_bare), (key or {}, key_bare)])
        vendor: dict[str, Any] = {}
        flags = {c.name: c.number for c in columns}
        deviating = [[part, col] for part, bare in (("data", data_bare), ("key", key_bare))
                     for col, b in bare.items() if flags[col] and not b]
        if deviating:
            vendor["render"] = deviating
        if key is not None:
            stray = [c for c in data if c not in key]
            if stray:
                vendor["warnings"] = [f"data has columns that key does not: {stray}"]
        return Event(
            format=self.name, op=op, database=database, table=table, position=position,
            before=before, after=after, columns=columns,
            event_time_ms=self._time(meta.get("time"), position),
            sequence=self._sequence(meta, position),
            transaction_id=self._text(meta, "trans", position),
            vendor=vendor,
        )

    def _image(self, value: Any, field: str, position: Position) -> tuple[Image, dict[str, bool]]:
        if not isinstance(value, dict):
            raise self.error(field, position, "expected an object of column values")
        return self.cells(value, field, position)

    def _table(self, value: Any, position: Position) -> tuple[Optional[str], str]:
        if not is_text(value) or not value:
            raise self.error("meta.table", position, f"expected \"database.table\", got {value!r}")
        database, dot, table = value.partition(".")
        return (database, table) if dot else (None, value)

    def _text(self, meta: dict, key: str, position: Position) -> Optional[str]:
        value = meta.get(key)
        if value is not None and not is_text(value):
            raise self.error(f"meta.{key}", position, f"expected a string, got {value!r}")
        return value

    def _time(self, value: Any, position: Position) -> Optional[int]:
        if value is None:
            return None
        try:
            moment = _read_time(value) if is_text(value) else None
        except ValueError:
            moment = None
        if moment is None:
            raise self.error("meta.time", position, f"expected YYYY-MM-DDTHH:mm:ss, got {value!r}")
        return int(moment.replace(tzinfo=timezone.utc).timestamp()) * 1000

    def _sequence(self, meta: dict, position: Position) -> tuple[Decimal, ...]:
        parts = []
        for key in ("scn", "seq"):
            value = meta.get(key)
            if value is None:
                continue
            number = int_field(value)
            if number is None:
                raise self.error(f"meta.{key}", position, f"expected an integer, got {value!r}")
            parts.append(Decimal(number))
        return tuple(parts)

    # ---------------------------------------------------------------------------------------------- encode

    # ``Codec.encode`` runs the recipe, one message per event.

    def check_encodable(self, event: Event) -> None:
        if event.op not in OP_CODES:
            raise EncodeError(self.name, "meta.op", f"SharePlex JSON cannot carry a {event.op.value} event")

    def message_op(self, msg: dict, first: Event) -> str:
        return OP_CODES[first.op]

    def _build(self, e: Event) -> dict[str, Any]:
        own = e.format == self.name
        render_fix = {tuple(x) for x in e.vendor.get("render", ())} if own else set()

        def out(image: Image, part: str) -> dict[str, Any]:
            return {c: render(v, self.bare(e, c, own) != ((part, c) in render_fix)) for c, v in image.items()}

        msg: dict[str, Any] = {"meta": self._meta(e, own)}
        if e.op is Op.UPDATE:
            before, after = e.before or {}, e.after or {}
            # own events already hold just the changed columns; foreign full images are reduced to them
            changed = after if own else {c: v for c, v in after.items() if c not in before or before[c] != v}
            msg["data"], msg["key"] = out(changed, "data"), out(before, "key")
        else:
            msg["data"] = out((e.before if e.op is Op.DELETE else e.after) or {}, "data")
        return msg

    def _meta(self, e: Event, own: bool) -> dict[str, Any]:
        database = flat_database(e)
        qualified = f"{database}.{e.table}" if database else (e.table or "")
        image = (e.before if e.op in (Op.DELETE, Op.UPDATE) else e.after) or {}
        meta: dict[str, Any] = {
            "op": OP_CODES[e.op],
            "table": qualified,
            "rowid": f"{qualified}-" + SEPARATOR.join(image.get(k) or "" for k in e.primary_key),
        }
        if e.event_time_ms is not None:
            try:
                meta["time"] = meta["posttime"] = _time_text(e.event_time_ms // 1000)
            except (ValueError, OverflowError):  # beyond the years a datetime has (meta.time is wall-clock text)
                raise EncodeError(self.name, "meta.time", f"event time {e.event_time_ms} ms is beyond year 9999 "
                                                          "or before year 1") from None
        if e.transaction_id is not None:
            meta["trans"] = e.transaction_id
        seq = e.sequence
        if seq and all(s == s.to_integral_value() for s in seq) and (len(seq) == 1 or (own and len(seq) == 2)):
            meta["scn"] = str(int(seq[0]))
            if len(seq) == 2:
                meta["seq"] = JsonNumber(str(int(seq[1])))
        return meta


def _read_time(text: str) -> datetime:
    """``datetime.strptime(text, TIME_FORMAT)``; ValueError as strptime raises it for a day or hour out of range."""
    plain = _PLAIN_TIME.fullmatch(text)
    if plain is None:
        return datetime.strptime(text, TIME_FORMAT)
    return datetime(*map(int, plain.groups()))


@functools.lru_cache(maxsize=1024)
def _time_text(seconds: int) -> str:
    """Epoch seconds as meta.time. Cached: a replay's records come in runs of the same second, and every decode
    derives this text to compare with the record's own."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime(TIME_FORMAT)


def _columns(images: list[tuple[Image, dict[str, bool]]]) -> tuple[Column, ...]:
    names = dict.fromkeys(c for image, _ in images for c in image)
    numbers = {n for _, bare in images for n, is_number in bare.items() if is_number}
    return shared_columns(column(n, None, None, n in numbers) for n in names)


CODEC = OmsSharePlexCodec()
