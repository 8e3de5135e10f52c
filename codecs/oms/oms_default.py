"""OceanBase OMS "Default" JSON: ``prevStruct`` / ``postStruct`` images, ``allMetaData``, ``recordType``.

One message is one row change (INSERT / UPDATE / DELETE, ``ROW`` for full sync), a ``HEARTBEAT``, or a ``DDL``
whose image holds the single key ``ddl``. The format declares no column types: the only type hint is whether a
value was written as a bare JSON number, kept as ``Column.number``.

Metadata decisions:
- ``db`` is ``{tenant}.{database}`` for OceanBase sources: the tenant is split off (the OMS Canal serialisation of
  the same change carries the database alone, so both agree on ``Event.database``) and kept in ``vendor``.
- ``timestamp`` (epoch seconds, text) -> ``event_time_ms``; ``storeDataSequence`` -> ``sequence``;
  ``uniqueId`` (the transaction sequence from the OMS store) -> ``transaction_id``;
  ``record_primary_key`` (``\\u0001``-separated) -> ``primary_key``.
- Everything else (``checkpoint``, ``source_identity``, ``dbType``, unknown keys, a ``record_primary_value``
  that cannot be derived from the image) is kept as the difference between the message and what the encoder
  derives from the canonical fields (``vendor["fix"]``, see ``shared.json_fix``).

``oms_extend_column_type`` subclasses this codec and overrides the two image hooks.
"""

from __future__ import annotations

import functools
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..base import TYPED_FAMILIES, Capabilities, EncodedMessage, PlainColumns, ddl_op, flat_database, row_key, untyped
from ..shared import arrow_json
from ..shared.declared_rows import DeclaredRows
from ..shared.json_fix import derive_fix, fix_paths
from ..shared.value_text import INT64, int_field, is_json_number, is_text, render, scalar_text
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.columns import column, shared_columns
from .oms_json import SEPARATOR, OmsJsonCodec
from ..shared.required import OBJECT, STRING, Required, need, same_needs
from ..shared.memo import remember

RECORD_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "ROW": Op.SNAPSHOT,
                "HEARTBEAT": Op.HEARTBEAT, "DDL": Op.DDL}
OP_RECORD_TYPE = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.SNAPSHOT: "ROW",
                  Op.HEARTBEAT: "HEARTBEAT", Op.DDL: "DDL", Op.TRUNCATE: "DDL"}
# dbType values whose `db` is "{tenant}.{database}".
OCEANBASE_DB_TYPES = {"OB_MYSQL", "OB_ORACLE", "OCEANBASE", "OB_IN_ORACLE_MODE"}
IMAGES = ("prevStruct", "postStruct")
META = "allMetaData"


class ImageParts:
    """One decoded image: values, which were bare numbers, and declared types (extended formats only)."""

    def __init__(self) -> None:
        self.values: Image = {}
        self.bare: dict[str, bool] = {}
        self.types: dict[str, str] = {}
        self.extra: dict[str, Any] = {}  # non-column keys as received (``__light_type``)


def _record_type(msg: dict) -> Optional[str]:
    kind = msg.get("recordType")
    return kind if kind in RECORD_TYPES and kind != "HEARTBEAT" else None


_META_NEEDS = (need(f"{META}.table_name", STRING, nonempty=True), need(f"{META}.db", STRING, nonempty=True))
# A data record names its table in allMetaData and carries the images its type implies; a DDL its statement.
REQUIRED = Required(_record_type, {
    **same_needs(("INSERT", "ROW"), *_META_NEEDS, need("postStruct", OBJECT)),
    "UPDATE": _META_NEEDS + (need("prevStruct", OBJECT), need("postStruct", OBJECT)),
    "DELETE": _META_NEEDS + (need("prevStruct", OBJECT),),
    "DDL": (need(META, OBJECT),),  # the statement: postStruct.ddl or prevStruct.ddl, named by _ddl_event
}, table=f"{META}.table_name")


class OmsDefaultCodec(OmsJsonCodec):
    name = "oms-default"
    required = REQUIRED
    description = "OMS Default JSON: prevStruct/postStruct/allMetaData/recordType (ROW = full sync, HEARTBEAT, DDL)"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        losses=untyped(*TYPED_FAMILIES),  # no column types: every value is exact text
        typed_values=False,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL, Op.TRUNCATE, Op.HEARTBEAT}),
        notes="no column types (only bare-number vs string); event time in whole seconds; no transaction "
              "begin/commit markers; TRUNCATE travels as a DDL record.",
    )

    # The JVM's declared decode of the plain row records (shared.declared_rows); what it declines (DDL, heartbeats,
    # an image the record type does not carry, typed or boolean cells...) ``_event`` decodes.
    jvm_declaration = DeclaredRows(
        op=("recordType", {kind: op.value for kind, op in RECORD_TYPES.items() if op.is_data}),
        images=(("after", "postStruct"), ("before", "prevStruct")),
        reads={"database": (f"{META}.db", "text"), "table": (f"{META}.table_name", "text"),
               "tenant": (f"{META}.dbType", "text"), "primary_key": (f"{META}.record_primary_key", "text"),
               "seconds": (f"{META}.timestamp", "scalar"), "sequence": (f"{META}.storeDataSequence", "scalar"),
               "transaction_id": (f"{META}.uniqueId", "scalar")},
        writes={f"{META}.checkpoint": "seconds_text_or_null", f"{META}.record_primary_key": "key_text",
                f"{META}.source_identity": "null", f"{META}.record_primary_value": "key_values",
                f"{META}.dbType": "null", f"{META}.table_name": "table", f"{META}.db": "database",
                f"{META}.timestamp": "seconds_text", f"{META}.storeDataSequence": "sequence_number",
                f"{META}.uniqueId": "transaction_text", "recordType": "op"},
        nested=(META,), key_separator=SEPARATOR, tenant_types=tuple(sorted(OCEANBASE_DB_TYPES)),
        null_cells_declare=True, database_required=True)

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; OMS compares ``META`` key by key and, for a data record, not its images.

    def derive(self, events: list[Event]) -> dict:
        # A data record's images are not compared (they are the event), so they are not rendered: the derived
        # message then has the same keys in the same order, with placeholder images (tests check both agree).
        return self._build_meta(events[0]) if events[0].op.is_data else self._build(events[0])

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        return fix_paths(msg, derived, set(IMAGES) if events[0].op.is_data else set(), nested=(META,))

    def generic_fixes(self, msg: dict, event: Event, images: bool = True) -> list[list[Any]]:
        """The fixes of the recipe; ``images=True`` derives the full message, images rendered, which must give
        the same fixes as the placeholder images the recipe uses (``test_canal_oms_fast_paths`` compares)."""
        if not images:
            return self.fixes(msg, [event])
        derived = self._build(event)
        return derive_fix(msg, derived, self.fix_paths(msg, derived, [event]))

    def _event(self, msg: dict, position: Position) -> Event:
        kind = msg.get("recordType")
        op = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
        if op is None:
            raise self.error("recordType", position, f"expected one of {sorted(RECORD_TYPES)}, got {kind!r}")
        meta = msg.get(META)
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise self.error(META, position, "expected an object")
        fields, vendor = self._meta_fields(meta, position)
        parts = {key: self._image(msg.get(key), key, position) for key in IMAGES}
        if op is Op.DDL:
            return self._ddl_event(parts, position, fields, vendor)
        before, after = (parts[k].values if parts[k] is not None else None for k in IMAGES)
        if op.is_data:
            self._check_images(op, before, after, position)
        columns = _columns([p for p in (parts["postStruct"], parts["prevStruct"]) if p is not None])
        numbers = {c.name for c in columns if c.number}
        deviating = [[k, col] for k in IMAGES if parts[k] is not None for col, bare in parts[k].bare.items()
                     if not bare and col in numbers] if numbers else []
        if deviating:
            vendor["render"] = deviating
        vendor.update(self._image_vendor(parts, columns))
        return Event(op=op, position=position, before=before, after=after, columns=columns, vendor=vendor,
                     **fields)

    def _check_images(self, op: Op, before: Optional[Image], after: Optional[Image], position: Position) -> None:
        if op in (Op.INSERT, Op.SNAPSHOT, Op.UPDATE) and after is None:
            raise self.error("postStruct", position, f"{op.value} needs an after image")
        if op in (Op.DELETE, Op.UPDATE) and before is None:
            raise self.error("prevStruct", position, f"{op.value} needs a before image")

    def _ddl_event(self, parts: dict, position: Position, fields: dict, vendor: dict) -> Event:
        for key in ("postStruct", "prevStruct"):
            part = parts[key]
            if part is not None and "ddl" in part.values:
                ddl = part.values["ddl"]
                if ddl is None:
                    raise self.error(f"{key}.ddl", position, "the DDL statement is null")
                if key == "prevStruct":
                    vendor["ddl_in"] = key
                op = ddl_op(ddl)
                return Event(op=op, position=position, ddl=ddl, vendor=vendor, **fields)
        raise self.error("postStruct.ddl", position, "a DDL record carries its statement under the key \"ddl\"")

    def _meta_fields(self, meta: dict, position: Position) -> tuple[dict[str, Any], dict[str, Any]]:
        def text(key: str) -> Optional[str]:
            value = meta.get(key)
            if value is not None and not is_text(value):
                if isinstance(value, JsonNumber) and key == "uniqueId":
                    return str(value)
                raise self.error(f"{META}.{key}", position, f"expected a string, got {value!r}")
            return value

        vendor: dict[str, Any] = {}
        db, db_type = text("db"), text("dbType")  # a non-string dbType is malformed, not a crash
        database = db
        if db is not None and db_type in OCEANBASE_DB_TYPES and "." in db:
            vendor["tenant"], database = db.split(".", 1)
        pk_text = text("record_primary_key")
        fields: dict[str, Any] = dict(
            format=self.name,
            database=database,
            table=text("table_name"),
            primary_key=tuple(pk_text.split(SEPARATOR)) if pk_text else (),
            transaction_id=text("uniqueId"),
            event_time_ms=self._event_time(meta.get("timestamp"), position),
            sequence=self._sequence(meta.get("storeDataSequence"), position),
        )
        return fields, vendor

    def _event_time(self, value: Any, position: Position) -> Optional[int]:
        if value is None:
            return None
        try:
            seconds = Decimal(str(value))
        except InvalidOperation:
            seconds = None
        if seconds is None or not seconds.is_finite():
            raise self.error(f"{META}.timestamp", position, f"expected epoch seconds, got {value!r}")
        try:
            ms = int(seconds * 1000)
        except ArithmeticError:  # an exponent beyond the decimal context (1E+2147483648): no time at all
            ms = None
        if ms is None or not INT64[0] <= ms <= INT64[1]:
            raise self.error(f"{META}.timestamp", position, f"epoch seconds beyond the 64-bit milliseconds of an "
                                                            f"event time, got {value!r}")
        return ms

    def _sequence(self, value: Any, position: Position) -> tuple[Decimal, ...]:
        if value is None:
            return ()
        number = int_field(value)
        if number is None:
            raise self.error(f"{META}.storeDataSequence", position, f"expected an integer, got {value!r}")
        return (Decimal(number),)

    def _image(self, value: Any, key: str, position: Position) -> Optional[ImageParts]:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, position, "expected an object of column values or null")
        parts = ImageParts()
        extra_keys = self.image_extra_keys
        for col, cell in value.items():
            if col in extra_keys and self._image_extra(parts, col, cell, key, position):
                continue
            try:
                parts.values[col], parts.bare[col] = scalar_text(cell)
            except TypeError as exc:
                raise self.error(f"{key}.{col}", position,
                                 f"a column value must be a string, number or null, got {exc}") from None
            if cell is None:
                del parts.bare[col]  # NULL says nothing about the column's rendering
        return parts

    # Hooks for the extended format ---------------------------------------------------------------------------

    # The image keys that may not be columns: ``_image_extra`` is asked about these only, not about every cell.
    image_extra_keys: frozenset[str] = frozenset()

    def _image_extra(self, parts: ImageParts, col: str, cell: Any, key: str, position: Position) -> bool:
        """Consume a non-column key of an image (DefaultExtendColumnType's ``__light_type``)."""
        return False

    def _image_vendor(self, parts: dict[str, Optional[ImageParts]], columns: tuple[Column, ...]) -> dict:
        return {}

    def _image_out(self, event: Event, key: str, values: dict[str, Any]) -> dict[str, Any]:
        return values

    def _image_members(self, batch: Any, entries: list, names: Any) -> Optional[tuple[Any, Any]]:
        """``_image_out`` of foreign row events, column-wise (``plain_columns``): the JSON members (``"k":v``
        text, no braces) each row's images gain after their columns, or NULL for none; and the rows it cannot
        write so (left to ``encode``). None: not at all."""
        n = batch.num_rows
        return pa.nulls(n, pa.string()), pa.array(np.zeros(n, dtype=bool))

    # ---------------------------------------------------------------------------------------------- encode

    # ``Codec.encode`` runs the recipe, one message per event.

    def check_encodable(self, event: Event) -> None:
        if event.op not in self.capabilities.ops:
            raise EncodeError(self.name, "recordType", f"{self.name} cannot carry a {event.op.value} event")

    def message_op(self, msg: dict, first: Event) -> str:
        return OP_RECORD_TYPE[first.op]

    def plain_messages(self, cols: Mapping[str, list], declared: Sequence[tuple], rows: range
                       ) -> Optional[list[EncodedMessage]]:
        """``encode`` of foreign row events (another format's INSERT/UPDATE/DELETE/ROW: no vendor fixes, tenant or
        renderings of ours to re-apply) from the batch columns (``Codec.plain_messages``): the same message as
        ``_build`` + ``jsontext.dumps``, with bare numbers as ``orjson.Fragment`` (the literal text, as
        ``jsontext`` writes a ``JsonNumber``). Variants that change the images (``_image_out``) take ``encode``."""
        if type(self)._image_out is not OmsDefaultCodec._image_out:
            return None
        fmt, ops, databases, schemas, tables = cols["format"], cols["op"], cols["database"], cols["schema"], \
            cols["table"]
        befores, afters, pks, times, sequences, txns = cols["before"], cols["after"], cols["primary_key"], \
            cols["event_time_ms"], cols["sequence"], cols["transaction_id"]
        out = []
        for i in rows:
            kind = _ROW_RECORD_TYPES.get(ops[i])
            if kind is None or fmt[i] == self.name:
                return None
            database, table = schemas[i] or databases[i], tables[i]  # flat_database
            b, a = befores[i], afters[i]
            if not database or not table or (b if kind in ("UPDATE", "DELETE") else a) is None or \
                    kind == "UPDATE" and a is None:
                return None  # what REQUIRED asks of the message is missing: ``encode`` names it (EncodeError)
            qualified = ".".join([p for p in (databases[i], schemas[i], table) if p])
            before, after = None if b is None else dict(b), None if a is None else dict(a)
            pk = pks[i] or ()
            image = (before if kind == "DELETE" else after) or {}
            meta = meta_fields(database, table, pk, SEPARATOR.join([image.get(k) or "" for k in pk]), times[i],
                               sequences[i] or (), txns[i], orjson.Fragment)
            flags = self._bare_flags(declared[i], False)
            msg = {META: meta, "recordType": kind, "prevStruct": _fragments(before, flags),
                   "postStruct": _fragments(after, flags)}
            key = row_key(qualified, pk, before, after)
            try:
                value = orjson.dumps(msg)
            except orjson.JSONEncodeError:  # e.g. a lone surrogate in a value: encode makes the dead letter
                return None
            out.append(EncodedMessage(value, key, qualified, kind, 1))
        return out

    def plain_columns(self, batch: Any) -> Optional[PlainColumns]:
        """``plain_messages`` of every row of ``batch`` at once, in Arrow kernels (``Codec.plain_columns``): the
        same text, piece by piece, as ``meta_fields``, ``_fragments`` and ``orjson.dumps`` give it. Declines (for
        ``plain_messages`` and ``encode``, row by row) what the row path declines and what it would fail on: our
        own events, ops other than rows, a one-component sequence that is NULL, a NULL name in the key. A variant
        that changes the images (``_image_out``) takes part by saying how column-wise (``_image_members``)."""
        if type(self)._image_out is not OmsDefaultCodec._image_out and \
                type(self)._image_members is OmsDefaultCodec._image_members:
            return None  # a variant that changes the images without saying how column-wise
        col = batch.column
        n = batch.num_rows
        kind = pc.take(_ROW_KINDS.field("kind"), pc.index_in(col("op"), value_set=_ROW_KINDS.field("op")))
        before, after, pk = col("before"), col("after"), col("primary_key")
        if arrow_json.has_null_name(pk):
            return None
        own = pc.fill_null(pc.equal(col("format"), self.name), False)
        taken = pc.and_(kind.is_valid(), pc.invert(own))
        database, schema, table = col("database"), col("schema"), col("table")
        flat = pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(schema), 0), False), schema, database)  # flat_database
        # what REQUIRED asks of a row message (a database, a table, the images of its kind): the row path names a miss
        named = pc.and_(pc.fill_null(pc.greater(pc.utf8_length(flat), 0), False),
                        pc.fill_null(pc.greater(pc.utf8_length(table), 0), False))
        needs_before = pc.fill_null(pc.is_in(kind, value_set=pa.array(["UPDATE", "DELETE"])), False)
        needs_after = pc.fill_null(pc.not_equal(kind, "DELETE"), False)
        imaged = pc.and_(pc.or_(pc.invert(needs_before), before.is_valid()),
                         pc.or_(pc.invert(needs_after), after.is_valid()))
        taken = pc.and_(taken, pc.and_(named, imaged))
        # ".".join(the parts that are neither NULL nor ""): each present part with a leading dot, the first dot cut
        # (binary_join_element_wise's null_handling="skip" returned a shorter array in pyarrow 26).
        dotted = [pc.if_else(pc.fill_null(pc.equal(p, ""), True), "", arrow_json.concat(".", p))
                  for p in (database, schema, table)]
        qualified = pc.utf8_slice_codeunits(arrow_json.concat(*dotted), 1)
        deleting = pc.fill_null(pc.equal(kind, "DELETE"), False)
        keys = arrow_json.BatchKeys(pk, before, after)
        old, new, groups = keys.before, keys.after, keys.groups
        at = arrow_json.rows_of

        def primary_value(k: str, rows: pa.Array | None) -> pa.Array:  # (before if DELETE else after).get(k) or ""
            return pc.fill_null(pc.if_else(at(deleting, rows), old.get(k, rows), new.get(k, rows)), "")

        def key_value(k: str, rows: pa.Array | None) -> pa.Array:
            # row_key: (after if present else before).get(k) or before.get(k) or ""
            first = pc.if_else(at(after, rows).is_null(), old.get(k, rows), new.get(k, rows))
            return pc.fill_null(pc.if_else(pc.fill_null(pc.equal(first, ""), True), old.get(k, rows), first), "")

        has_key = pc.greater(pc.fill_null(pc.list_value_length(pk), 0), 0)
        row_keys = pc.if_else(has_key, arrow_json.concat(qualified, "\x01", groups.join(key_value)),
                              pc.if_else(pc.equal(qualified, ""), pa.scalar(None, pa.string()), qualified))
        bare = functools.partial(_declared_bare, self)
        entries = [arrow_json.as_lists(image) for image in (before, after)]
        names = arrow_json.Names(col("columns").flatten().field("name"),
                                 *[e.flatten().field("key") for e in entries])
        members = self._image_members(batch, entries, names)
        if members is None:
            return None
        extra, declined = members
        taken = pc.and_(taken, pc.invert(declined))
        images = []
        for lists in entries:
            flags = pc.and_(arrow_json.declared_flags(lists, col("columns"), names, bare),
                            arrow_json.is_number(lists.flatten().field("value")))
            images.append(arrow_json.objects(lists, flags, names, extra))
        seconds, times = _seconds(col("event_time_ms"))
        sequence, one_component = _sequence_text(col("sequence"), n)
        taken = pc.and_(taken, pc.invert(one_component))
        value = arrow_json.concat(
            '{"allMetaData":{"checkpoint":', pc.fill_null(arrow_json.concat('"', seconds, '"'), "null"),
            ',"record_primary_key":', arrow_json.strings(pc.fill_null(pc.binary_join(pk, SEPARATOR), "")),
            ',"source_identity":null,"record_primary_value":',
            arrow_json.strings(groups.join(primary_value)),
            ',"dbType":null,"table_name":', arrow_json.strings(table), ',"db":', arrow_json.strings(flat),
            times, sequence,
            pc.if_else(col("transaction_id").is_null(), "",
                       arrow_json.concat(',"uniqueId":', arrow_json.strings(col("transaction_id")))),
            '},"recordType":"', pc.fill_null(kind, ""), '","prevStruct":', images[0], ',"postStruct":', images[1],
            "}")
        return PlainColumns(value=value.cast(pa.binary()), key=row_keys.cast(pa.binary()), table=qualified, op=kind,
                            taken=pc.fill_null(taken, False))

    def _build_meta(self, e: Event) -> dict[str, Any]:
        """``_build`` of a data event without rendering its images (same keys, same order)."""
        return {META: self._meta(e, e.format == self.name), "recordType": OP_RECORD_TYPE[e.op],
                "prevStruct": None, "postStruct": None}

    def _build(self, e: Event) -> dict[str, Any]:
        own = e.format == self.name
        msg: dict[str, Any] = {META: self._meta(e, own), "recordType": OP_RECORD_TYPE[e.op]}
        if e.op in (Op.DDL, Op.TRUNCATE):
            ddl = e.ddl if e.ddl is not None else f"TRUNCATE TABLE {e.qualified_table}"
            where = e.vendor.get("ddl_in", "postStruct") if own else "postStruct"
            msg["prevStruct"], msg["postStruct"] = None, None
            msg[where] = {"ddl": ddl}
            return msg
        render_fix = {tuple(x) for x in e.vendor.get("render", ())} if own else set()
        for key, image in (("prevStruct", e.before), ("postStruct", e.after)):
            msg[key] = None if image is None else self._image_out(e, key, self._values(e, key, image, render_fix))
        return msg

    def _values(self, e: Event, key: str, image: Image, render_fix: set) -> dict[str, Any]:
        flags = self._bare_flags(e.columns, e.format == self.name)
        if render_fix:
            return {col: render(text, flags.get(col, False) != ((key, col) in render_fix))
                    for col, text in image.items()}
        return {col: render(text, flags.get(col, False)) for col, text in image.items()}

    def _bare_flags(self, columns: tuple[Column, ...], own: bool) -> dict[str, bool]:
        """Bare per column (first declaration wins, as ``Event.column``). The events of a table share one columns
        tuple (``records.events_from_columns``, the codecs' caches), so the flags are worked out once per
        tuple, not once per image (it was a quarter of the re-encode's CPU)."""
        cache = self.__dict__.setdefault("_flags_cache", {})
        hit = cache.get((id(columns), own))
        if hit is not None and hit[0] is columns:  # the cached tuple is held, so its id is not reused
            return hit[1]
        flags: dict[str, bool] = {}
        for c in columns:
            flags.setdefault(c.name, self.column_bare(c, own))
        remember(cache, (id(columns), own), (columns, flags))
        return flags

    def _meta(self, e: Event, own: bool) -> dict[str, Any]:
        tenant = e.vendor.get("tenant") if own else None
        database = e.database if own else flat_database(e)
        db = f"{tenant}.{database}" if tenant is not None and database is not None else database
        return meta_fields(db, e.table, e.primary_key if e.op.is_data else None,
                           _primary_value(e) if e.op.is_data else None, e.event_time_ms, e.sequence,
                           e.transaction_id, JsonNumber)


_ROW_RECORD_TYPES = {op.value: OP_RECORD_TYPE[op] for op in (Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE)}
_ROW_KINDS = pa.StructArray.from_arrays(  # op value -> record type, for ``plain_columns``
    [pa.array(list(_ROW_RECORD_TYPES)), pa.array(list(_ROW_RECORD_TYPES.values()))], names=["op", "kind"])


def _declared_bare(codec: "OmsDefaultCodec", type_name: Optional[str], jdbc_type: Optional[int], number: bool
                   ) -> bool:
    """``_bare_flags`` of one declaration of a foreign event."""
    return codec.column_bare(Column("", type_name, jdbc_type, number), False)


def _seconds(event_time_ms: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``str(event_time_ms // 1000)`` (floor, as Python divides) and the ``,"timestamp":"..."`` piece of
    ``meta_fields`` ("" without a time)."""
    ms = event_time_ms.cast(pa.int64())
    truncated = pc.divide(ms, 1000)  # Arrow's integer division truncates towards zero
    behind = pc.and_(pc.less(ms, 0), pc.not_equal(pc.multiply(truncated, 1000), ms))
    seconds = pc.cast(pc.if_else(behind, pc.subtract(truncated, 1), truncated), pa.string())
    return seconds, pc.fill_null(arrow_json.concat(',"timestamp":"', seconds, '"'), "")


def _sequence_text(sequence: pa.Array, n: int) -> tuple[pa.Array, pa.Array]:
    """The ``,"storeDataSequence":N`` piece of ``meta_fields`` (a one-component sequence; "" otherwise), and
    where the one component is NULL (the row path cannot take it)."""
    one = pc.fill_null(pc.equal(pc.list_value_length(sequence), 1), False)
    if not pc.any(one).as_py():
        return pa.array([""] * n, pa.string()), pa.array([False] * n, pa.bool_())
    component = pc.filter(sequence, one).flatten()  # decimal128(38, 0): integral, its text is str(int(d))
    texts = arrow_json.concat(',"storeDataSequence":', pc.cast(component, pa.string()))
    missing = pc.replace_with_mask(pa.array([False] * n, pa.bool_()), one, component.is_null())
    return pc.replace_with_mask(pa.array([""] * n, pa.string()), one, pc.fill_null(texts, "")), missing


def meta_fields(db: Optional[str], table: Optional[str], primary_key: Optional[Sequence[str]],
                primary_value: Optional[str], event_time_ms: Optional[int], sequence: Sequence[Any],
                transaction_id: Optional[str], number: Callable[[str], Any]) -> dict[str, Any]:
    """The ``allMetaData`` object the encoder derives (``primary_key`` None for a non-row record); ``number``
    makes the bare-number literal (``JsonNumber``, or ``orjson.Fragment`` on the fast path)."""
    meta: dict[str, Any] = {
        "checkpoint": None,
        "record_primary_key": None if primary_key is None else SEPARATOR.join(primary_key),
        "source_identity": None,
        "record_primary_value": primary_value,
        "dbType": None,
        "table_name": table,
        "db": db,
    }
    if event_time_ms is not None:
        # incremental records: checkpoint is the same second-resolution time position
        meta["timestamp"] = meta["checkpoint"] = str(event_time_ms // 1000)
    if len(sequence) == 1:
        component = sequence[0] if type(sequence[0]) is Decimal else Decimal(sequence[0])
        if component == component.to_integral_value():
            meta["storeDataSequence"] = number(str(int(component)))
    if transaction_id is not None:
        meta["uniqueId"] = transaction_id
    return meta


def _fragments(image: Optional[Image], flags: Mapping[str, bool]) -> Optional[dict[str, Any]]:
    """``render`` of an image for ``orjson.dumps``: a bare number as the ``orjson.Fragment`` of its text."""
    if image is None:
        return None
    return {col: orjson.Fragment(text) if text is not None and flags.get(col, False) and is_json_number(text)
            else text for col, text in image.items()}


def _columns(parts: list[ImageParts]) -> tuple[Column, ...]:
    """Columns in first-seen order; bare when any image wrote the value as a number, typed by the first image
    that declares a type."""
    bare = {col for q in parts for col, flag in q.bare.items() if flag}
    types: dict[str, str] = {}
    for q in parts:
        for col, type_name in q.types.items():
            types.setdefault(col, type_name)
    names: dict[str, Column] = {}
    for p in parts:
        for col in [*p.values, *p.types]:
            if col not in names:
                names[col] = column(col, types.get(col), None, col in bare)
    return shared_columns(names.values())


def _primary_value(e: Event) -> str:
    image = (e.before if e.op is Op.DELETE else e.after) or {}
    return SEPARATOR.join(image.get(k) or "" for k in e.primary_key)


CODEC = OmsDefaultCodec()
