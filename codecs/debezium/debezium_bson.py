"""Debezium's MongoDB connector (Kafka Connect JsonConverter): documents as MongoDB Extended JSON strings.

A change payload has ``after`` / ``before`` (the document as an Extended JSON *string*), ``updateDescription``
(``updatedFields``: an Extended JSON string of the set fields, ``removedFields``: a list of field names,
``truncatedArrays``: a list of ``{field, size}``), ``source`` (``rs``, ``db``, ``collection``, ``ord``, ``ts_ms``)
and ``op`` r/c/u/d. The document key is in the Kafka record key, ``{"id": "<_id as Extended JSON>"}``.
Heartbeats and transaction markers are read as in ``debezium_json``.

Documents go into the document model the Mongo formats share (``shared/bson_values``): each top-level field is
canonical text typed by its BSON type. Extended JSON spellings read: ``$oid``, ``$numberInt``, ``$numberLong``,
``$numberDouble``, ``$numberDecimal``, ``$date`` (milliseconds, ISO text or ``{"$numberLong"}``), ``$binary``
(strict ``{"$binary", "$type"}`` and v2 ``{"$binary": {"base64", "subType"}}``), ``$timestamp``,
``$regularExpression``/``$regex``, ``$minKey``/``$maxKey``/``$undefined``; any other ``$`` wrapper is kept as
its compact JSON text typed by its name; nested documents and arrays as compact Extended JSON text.

Events:
* r/c: after = the document. d: before = the ``before`` document (pre-images) or the key from the record key.
* u with ``after`` (``capture.mode=change_streams_update_full``): after = the whole document and
  ``replaces_row`` (fields missing from it are gone); before = the ``before`` document or the key.
* u without ``after``: after = the key + ``updatedFields`` (dotted paths stay one field name) + every
  ``removedFields`` name as None, also listed in ``removed_columns`` (a merge removes them);
  ``truncatedArrays`` stays in the vendor data.
* The primary key is ``_id``. A relational row written in this format carries its key as an ``_id`` document
  in the record key (``{"id": "{\\"order_id\\": 7}"}``), and its key columns are that document's fields.
* sequence: ``source.ts_ms`` (oplog time), ``source.ord`` (increment in that second), then ``ts_ms`` again.

Lossless re-encode: a document string is written back verbatim while it still reads as the event's image
(``vendor["documents"]``); the rest of the payload by the derive/fix scheme, as in ``debezium_json``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any, Optional, Sequence

from .. import jsontext
from ..base import Capabilities, EncodedMessage, flat_database, message_key, untyped
from ..event import Column, EncodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.bson_values import (
    ARRAY, BASE64, BIN_DATA, BOOL, BSON_TIMESTAMP, DATE, DECIMAL128, DOUBLE, FLOAT_WORDS, HEX24, INT, INT32,
    INT32_RANGE, INT64, MONGO_ONLY, NULL, OBJECT, OBJECT_ID, REGEX, STRING, WORDS, Typed, bin_subtype, bin_type,
    epoch_to_ms, foreign_type, is_bin_type, is_decimal, iso_to_epoch, ms_to_epoch)
from ..shared.columns import column, shared_columns
from ..shared.declared_rows import Documents, PositionRule
from ..shared.json_fix import apply_fix, literal, unliteral
from .debezium_json import DebeziumJsonCodec, payload_fix_paths, payload_transaction_id

FORMAT = "debezium-bson"
ID = "_id"
DATA_OPS = {"r": Op.SNAPSHOT, "c": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
OP_CODES = {v: k for k, v in DATA_OPS.items()}
_WORD_KEYS = {"$minKey": "MinKey", "$maxKey": "MaxKey", "$undefined": "undefined"}
_WORD_VALUES = {"MinKey": ("$minKey", JsonNumber("1")), "MaxKey": ("$maxKey", JsonNumber("1")),
                "undefined": ("$undefined", True)}


class ExtendedJsonError(ValueError):
    pass


# ------------------------------------------------------------------------------------ Extended JSON <-> Typed

def ext_typed(value: Any) -> Typed:
    """The canonical text and BSON type of one Extended JSON value (parsed by ``jsontext``)."""
    if value is None:
        return Typed(NULL, None)
    if value is True or value is False:
        return Typed(BOOL, "true" if value else "false")
    if isinstance(value, JsonNumber):
        if INT.fullmatch(value):
            return Typed(INT32 if int(value) in INT32_RANGE else INT64, str(value), True)
        return Typed(DOUBLE, str(value), True)
    if isinstance(value, str):
        return Typed(STRING, value)
    if isinstance(value, list):
        return Typed(ARRAY, jsontext.dumps(value).decode())
    if not isinstance(value, dict):
        raise ExtendedJsonError(f"not a JSON value: {value!r}")
    if len(value) == 1 or (set(value) == {"$binary", "$type"}) or (set(value) == {"$regex", "$options"}):
        typed = _wrapper(value)
        if typed is not None:
            return typed
    if any(k.startswith("$") for k in value):
        name = next(k for k in value if k.startswith("$"))[1:]
        return Typed(name, jsontext.dumps(value).decode())  # $symbol, $code, ...: kept as written
    return Typed(OBJECT, jsontext.dumps(value).decode())


def _wrapper(value: dict) -> Optional[Typed]:
    """A recognised ``{"$type": ...}`` wrapper, or None (then the caller keeps the text)."""
    key, arg = next(iter(value.items()))
    if key == "$oid" and isinstance(arg, str) and HEX24.fullmatch(arg):
        return Typed(OBJECT_ID, arg)
    if key in ("$numberLong", "$numberInt") and isinstance(arg, str) and INT.fullmatch(arg):
        return Typed(INT64 if key == "$numberLong" else INT32, arg)
    if key == "$numberDouble" and isinstance(arg, str) and (re.fullmatch(r"-?[\d.eE+-]+", arg) or arg in FLOAT_WORDS):
        return Typed(DOUBLE, arg)
    if key == "$numberDecimal" and isinstance(arg, str) and is_decimal(arg):
        return Typed(DECIMAL128, arg)
    if key == "$date":
        if isinstance(arg, dict) and set(arg) == {"$numberLong"}:
            arg = arg["$numberLong"]
            arg = JsonNumber(arg) if isinstance(arg, str) and INT.fullmatch(arg) else None
        if isinstance(arg, JsonNumber) and INT.fullmatch(arg):
            return Typed(DATE, ms_to_epoch(int(arg)))
        epoch = iso_to_epoch(arg) if isinstance(arg, str) else None
        return Typed(DATE, epoch) if epoch is not None else None
    if key == "$binary":
        data, subtype = (arg.get("base64"), arg.get("subType")) if isinstance(arg, dict) else (arg, value.get("$type"))
        if isinstance(data, str) and BASE64.fullmatch(data) and isinstance(subtype, str) \
                and re.fullmatch(r"[0-9a-fA-F]{1,2}", subtype):
            return Typed(bin_type(int(subtype, 16)), data)
        return None
    if key == "$timestamp" and isinstance(arg, dict) and set(arg) == {"t", "i"} \
            and all(isinstance(arg[k], JsonNumber) and re.fullmatch(r"\d+", arg[k]) for k in "ti"):
        return Typed(BSON_TIMESTAMP, f"{arg['t']}:{arg['i']}")
    if key == "$regularExpression" and isinstance(arg, dict) and set(arg) == {"pattern", "options"} \
            and all(isinstance(arg[k], str) for k in arg) and re.fullmatch(r"[a-z]*", arg["options"]):
        return Typed(REGEX, f"/{arg['pattern']}/{arg['options']}")
    if key == "$regex" and isinstance(arg, str) and isinstance(value.get("$options"), str) \
            and re.fullmatch(r"[a-z]*", value["$options"]):
        return Typed(REGEX, f"/{arg}/{value['$options']}")
    if key in _WORD_KEYS:
        return Typed(WORDS[_WORD_KEYS[key]], _WORD_KEYS[key])
    return None


def render_typed(text: str, type_name: Optional[str], number: bool) -> Any:
    """Canonical text back to the Extended JSON value of that BSON type (ValueError when it cannot be)."""
    if type_name == STRING:
        return text
    if type_name in (INT32, INT64, DOUBLE) and number and text not in FLOAT_WORDS:
        return JsonNumber(text)
    if type_name == INT32:
        return {"$numberInt": text}
    if type_name == INT64:
        return {"$numberLong": text}
    if type_name == DOUBLE:
        return {"$numberDouble": text}
    if type_name == DECIMAL128:
        return {"$numberDecimal": text}
    if type_name == BOOL:
        return {"true": True, "false": False}[text]
    if type_name == OBJECT_ID:
        return {"$oid": text}
    if is_bin_type(type_name):
        return {"$binary": text, "$type": f"{bin_subtype(type_name or BIN_DATA):02x}"}
    if type_name == DATE:
        return {"$date": JsonNumber(str(epoch_to_ms(text)))}
    if type_name == BSON_TIMESTAMP:
        t, i = text.split(":")
        return {"$timestamp": {"t": JsonNumber(t), "i": JsonNumber(i)}}
    if type_name == REGEX:
        pattern, _, options = text[1:].rpartition("/")
        return {"$regularExpression": {"pattern": pattern, "options": options}}
    if text in _WORD_VALUES and type_name == WORDS.get(text):
        key, arg = _WORD_VALUES[text]
        return {key: arg}
    return unliteral(text)  # object, array, other wrappers: the text is Extended JSON


def render_foreign(text: str, column: Column) -> Any:
    """Another format's value as the BSON type its family maps to (``bson_values.foreign_type``)."""
    kind = foreign_type(text, column)
    if kind == DECIMAL128:
        return {"$numberDecimal": text}
    if kind in (INT64, DOUBLE):
        return JsonNumber(text) if text not in FLOAT_WORDS else {"$numberDouble": text}
    if kind == BOOL:
        return text == "true"
    if kind == BIN_DATA:
        return {"$binary": text, "$type": "00"}
    return text


def render_value(text: Optional[str], column: Column, own: bool) -> Any:
    """One field value: by its declared BSON type (own events, and Mongo-only types of others) when that reads
    back as the same text and type; otherwise by type family."""
    if text is None:
        return None
    t = column.type_name
    if own or t in MONGO_ONLY or is_bin_type(t):
        try:
            out = render_typed(text, t, column.number)
            back = ext_typed(out)
        except (ValueError, KeyError, ArithmeticError, ExtendedJsonError):
            back = None
        if back is not None and (back.type_name, back.text) == (t, text):
            return out
    return render_foreign(text, column)


def render_document(image: Image, columns: dict[str, Column], own: bool) -> str:
    return jsontext.dumps({k: render_value(v, columns.get(k) or Column(k), own) for k, v in image.items()}).decode()


# Cached for the few documents of the message at hand: decode reads each document string, then its derivation
# asks whether the same string still reads as the image (``_reads_as``); parsing it twice was a quarter of decode.
# Callers must not change the dict.
@functools.lru_cache(maxsize=8)
def _fields_of(text: str) -> dict[str, Typed]:
    obj, _ = jsontext.loads(text)
    if not isinstance(obj, dict):
        raise ExtendedJsonError("expected a document {...}")
    return {name: ext_typed(value) for name, value in obj.items()}


def _reads_as(text: Optional[str], image: Image, columns: dict[str, Column]) -> bool:
    """Whether a received document string still describes ``image`` with the columns' types."""
    if text is None:
        return False
    try:
        fields = _fields_of(text)
    except (ValueError, ExtendedJsonError):
        return False
    if list(fields) != list(image):
        return False
    for name, t in fields.items():
        c = columns.get(name)
        if t.text != image[name] or (t.text is not None and (c is None or (c.type_name, c.number) !=
                                                            (t.type_name, t.number))):
            return False
    return True


# -------------------------------------------------------------------------------------------------- codec

class DebeziumBsonCodec(DebeziumJsonCodec):
    name = FORMAT
    vendor = "Debezium (Red Hat), MongoDB connector"
    description = "Debezium MongoDB envelope: Extended JSON document strings, updateDescription, _id record key"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        losses=untyped("bit", "date", "datetime", "decimal", "int", "timestamp"),
        typed_values=True,
        before_image="key",
        after_image="changed",
        delete_image="key",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE, Op.HEARTBEAT, Op.BEGIN, Op.COMMIT}),
        transactions=True,
        notes="Documents are top-level fields as canonical text typed by their BSON type (the model drs-mongo "
              "uses): string, int32, int64, double, decimal128, bool, objectId as hex, binData as base64, dates "
              "as epoch seconds 'timestamp(3)', nested documents/arrays as compact Extended JSON. An update "
              "without pre-images has only the key as before image; without capture.mode=*_update_full its "
              "after image is the key plus updatedFields, removedFields as None (removed_columns). A delete "
              "carries the key (record key) unless pre-images are on. Other formats' rows: integers and floats "
              "as numbers, decimals as $numberDecimal, binary as $binary, every other family as a string "
              "(declared untyped); their key travels in the record key as the _id document. No DDL/truncate.",
    )

    # The declared JVM decode takes an insert, a delete and an update (its whole document, or its changes in
    # updateDescription with no field removed and no array truncated) whose documents are written back as they
    # are, in any envelope (its Connect schema checked and kept as debezium-json's is; removed fields are the
    # codec's).
    jvm_declaration = replace(
        DebeziumJsonCodec.jvm_declaration, op=("op", {code: op.value for code, op in DATA_OPS.items()}),
        reads={"database": ("source.db", "text"), "table": ("source.collection", "text"),
               "millis": ("source.ts_ms|ts_ms", "integer"),
               "transaction_id": ("transaction.id|source.gtid|source.txId", "scalar")},
        writes={"before": "before_document", "after": "after_document", "updateDescription": "update_description",
                "source.connector": '="mongodb"', "source.db": "database", "source.collection": "table",
                "source.ts_ms": "millis_number_or_null", "source.ord": "sequence_second_of_three", "op": "op",
                "ts_ms": "millis_number_or_null", "transaction": "transaction_object"},
        schema_level=False, compare_unwritten_images=False, record_key_names=False,
        positions=replace(DebeziumJsonCodec.jvm_declaration.positions, rules=(
            *DebeziumJsonCodec.jvm_declaration.positions.rules[:-1],
            PositionRule("oplog", ("mongodb",), (("ord",),), ("ts_ms", "ord")))),
        documents=Documents("documents", "updateDescription", "updatedFields", "removedFields", "truncatedArrays",
                            ID, "id"))

    # ---------------------------------------------------------------------------------------------- decode

    def _event(self, payload: dict, schema_text: Optional[str], position: Position,
               envelope: dict[str, Any]) -> Event:
        op_code = payload.get("op")
        if not isinstance(op_code, str) or op_code not in DATA_OPS:  # an object or list is not hashable
            if op_code is None:
                return super()._event(payload, schema_text, position, envelope)  # heartbeat, transaction marker
            raise self.error("payload.op", position, f"unknown op {op_code!r} (expected one of "
                                                     f"{sorted(DATA_OPS)})")
        source = payload.get("source")
        if not isinstance(source, dict):
            raise self.error("payload.source", position, "expected the source block (db, collection, ord)")
        collection = source.get("collection")
        if not isinstance(collection, str) or not collection:
            raise self.error("payload.source.collection", position, "expected the collection name")
        op = DATA_OPS[op_code]
        columns: dict[str, Column] = {}
        documents: dict[str, str] = {}
        images: dict[str, Optional[Image]] = {}
        for part in ("before", "after"):
            images[part] = self._document(payload.get(part), f"payload.{part}", columns, documents, part, position)
        key_image, key_columns, primary_key = self._record_key(position)
        for name, c in key_columns.items():
            columns.setdefault(name, c)
        if ID in (images["after"] or images["before"] or {}):
            primary_key = (ID,)
        vendor: dict[str, Any] = {}
        removed: tuple[str, ...] = ()
        before, after = images["before"], images["after"]
        if op in (Op.SNAPSHOT, Op.INSERT):
            before = None
            if after is None:
                raise self.error("payload.after", position, f"op {op_code} needs the document in 'after'")
        elif op is Op.DELETE:
            after = None
            if before is None:
                if not key_image:
                    raise self.error("payload.before", position, "DELETE without a before document or record key "
                                                                 "{\"id\": ...}: the deleted document is unknown")
                before, vendor["before_from_key"] = dict(key_image), True
        else:
            key = {k: v for k, v in (before or key_image or {}).items() if k in primary_key} or key_image
            if before is None:
                if not key:
                    raise self.error("payload.before", position, "UPDATE without a before document or record key "
                                                                 "{\"id\": ...}: the updated document is unknown")
                before, vendor["before_from_key"] = dict(key), True
            if after is None:
                after, removed = self._changes(payload.get("updateDescription"), dict(key or {}), columns,
                                               documents, vendor, position)
        vendor["documents"] = documents
        return Event(
            format=self.name, op=op, position=position,
            database=_text(source.get("db")), table=collection,
            event_time_ms=self._time(payload, source, position), sequence=self._sequence(source, position),
            transaction_id=payload_transaction_id(payload, source),
            before=before, after=after, primary_key=primary_key,
            columns=_event_columns(columns, before, after),
            removed_columns=removed, replaces_row=op is Op.UPDATE and images["after"] is not None,
            vendor={**vendor, **envelope})

    def _document(self, raw: Any, field: str, columns: dict[str, Column], documents: dict[str, str], part: str,
                  position: Position) -> Optional[Image]:
        if raw is None:
            return None
        if not isinstance(raw, str):
            raise self.error(field, position, "expected the document as an Extended JSON string")
        try:
            fields = _fields_of(raw)
        except (ValueError, ExtendedJsonError) as exc:
            raise self.error(field, position, f"not a MongoDB Extended JSON document: {exc}") from None
        documents[part] = raw
        for name, t in fields.items():
            if t.text is not None:
                columns[name] = t.column(name)
        return {name: t.text for name, t in fields.items()}

    def _changes(self, description: Any, key: Image, columns: dict[str, Column], documents: dict[str, str],
                 vendor: dict, position: Position) -> tuple[Image, tuple[str, ...]]:
        """An update's after image from ``updateDescription``: the key, the updated fields, removed fields as
        None (also returned, for ``removed_columns``)."""
        where = "payload.updateDescription"
        if not isinstance(description, dict):
            raise self.error(where, position, "an update without 'after' needs updateDescription (or set "
                                              "capture.mode=change_streams_update_full at the connector)")
        after = dict(key)
        updated = self._document(description.get("updatedFields"), f"{where}.updatedFields", columns, documents,
                                 "updatedFields", position)
        after.update(updated or {})
        removed = description.get("removedFields")
        if removed is not None and not (isinstance(removed, list) and all(isinstance(f, str) for f in removed)):
            raise self.error(f"{where}.removedFields", position, "expected a list of field names")
        for name in removed or ():
            after[name] = None
            columns.pop(name, None)
        truncated = description.get("truncatedArrays")
        if truncated is not None:
            if not (isinstance(truncated, list) and all(isinstance(t, dict) for t in truncated)):
                raise self.error(f"{where}.truncatedArrays", position, "expected a list of {field, size}")
            vendor["truncatedArrays"] = literal(truncated)
        return after, tuple(removed or ())

    def _record_key(self, position: Position) -> tuple[Image, dict[str, Column], tuple[str, ...]]:
        """The document key from the Kafka record key ``{"id": "<_id as Extended JSON>"}``: as an image, its
        columns and the primary key (``_id``; a relational row's key document gives its fields)."""
        if not position.key:
            return {}, {}, ()
        try:
            obj, _ = jsontext.loads(position.key)
        except (ValueError, UnicodeDecodeError):
            return {}, {}, ()
        if isinstance(obj, dict) and "payload" in obj and set(obj) <= {"schema", "payload"}:
            obj = obj["payload"]
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            return {}, {}, ()
        try:
            value, _ = jsontext.loads(obj["id"])
        except (ValueError, UnicodeDecodeError):
            value = obj["id"]  # a string _id written without quotes
        try:
            typed = ext_typed(value)
            if typed.type_name == OBJECT and isinstance(value, dict) and value:  # a relational row's key
                fields = {k: ext_typed(v) for k, v in value.items()}
                return ({k: t.text for k, t in fields.items()}, {k: t.column(k) for k, t in fields.items()},
                        tuple(fields))
        except ExtendedJsonError:
            return {}, {}, ()
        return {ID: typed.text}, {ID: typed.column(ID)}, (ID,)

    # ---------------------------------------------------------------------------------------------- encode

    def derive(self, events: list[Event]) -> dict:
        return self._bson_payload(events[0])

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        paths = payload_fix_paths(msg, {**derived, "before": None, "after": None})  # documents: compared below
        return paths + [(p,) for p in ("before", "after") if (p,) not in paths]

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for e in events:
            if not self.capabilities.carries(e.op):
                continue
            own = e.format == self.name
            if not own and e.op in (Op.UPDATE, Op.DELETE) and e.before is None and \
                    self._key_bytes(e, own) == message_key(e):
                # the decoder finds an updated or deleted document by its before image or a record key {"id": ...}
                raise EncodeError(self.name, "payload.before", f"an {e.op.value} without before image or key "
                                                               "columns in its after image names no document")
            payload = self._bson_payload(e)
            if own and e.vendor.get("fix"):
                apply_fix(payload, e.vendor["fix"])
            msg = self.written(self.enveloped(e, payload), e)
            op = payload.get("op") if isinstance(payload.get("op"), str) else e.op.value
            out.append(EncodedMessage(jsontext.dumps(msg), self._key_bytes(e, own), e.qualified_table, op))
        return out

    def _key_bytes(self, e: Event, own: bool) -> Optional[bytes]:
        if own and e.position.key is not None:
            return e.position.key
        image = e.after if e.after is not None else e.before
        if not e.primary_key or image is None or not all(k in image for k in e.primary_key):
            return message_key(e)
        by_name = {c.name: c for c in e.columns}
        if e.primary_key == (ID,):
            value = render_value(image[ID], by_name.get(ID) or Column(ID), own)
        else:
            value = {k: render_value(image[k], by_name.get(k) or Column(k), own) for k in e.primary_key}
        return jsontext.dumps({"id": jsontext.dumps(value).decode()})

    def _bson_payload(self, e: Event) -> dict[str, Any]:
        if not e.op.is_data:
            return self._payload(e)
        if e.op not in OP_CODES:
            raise EncodeError(self.name, "op", f"{e.op.value} is not a MongoDB change")
        own = e.format == self.name
        cols = {c.name: c for c in e.columns}
        docs = e.vendor.get("documents", {}) if own else {}

        def document(part: str, image: Optional[Image]) -> Optional[str]:
            if image is None:
                return None
            if _reads_as(docs.get(part), image, cols):
                return docs[part]
            try:
                return render_document(image, cols, own)
            except (ValueError, ArithmeticError) as exc:
                raise EncodeError(self.name, f"payload.{part}", str(exc)) from None

        before = None if e.op in (Op.SNAPSHOT, Op.INSERT) or e.vendor.get("before_from_key") and own \
            else document("before", e.before)
        after, description = None, None
        if e.op in (Op.SNAPSHOT, Op.INSERT) or (e.op is Op.UPDATE and own and e.replaces_row):
            after = document("after", e.after)
        elif e.op is Op.UPDATE:
            description = self._description(e, own, cols, document)
        ts = JsonNumber(str(e.event_time_ms)) if e.event_time_ms is not None else None
        source: dict[str, Any] = {"connector": "mongodb", "db": flat_database(e), "collection": e.table, "ts_ms": ts}
        if not own and len(e.sequence) == 1:
            source["ord"] = JsonNumber(str(e.sequence[0]))  # a one-number position orders as the oplog's ord
        elif own and len(e.sequence) == 3:
            # Decode read the oplog position as (ts_ms, ord, ts_ms): the ord every change carries is derived, not
            # kept as a fix of every message. (Another connector's position of three parts is corrected by the
            # fixes like any other deviation.)
            source["ord"] = JsonNumber(str(e.sequence[1]))
        payload = {"before": before, "after": after, "updateDescription": description, "source": source,
                   "op": OP_CODES[e.op], "ts_ms": ts}
        if e.transaction_id is not None:
            payload["transaction"] = {"id": e.transaction_id}
        return payload

    def _description(self, e: Event, own: bool, cols: dict[str, Column], document) -> dict[str, Any]:
        removed = [c for c in e.removed_columns if (e.after or {}).get(c, "") is None]
        before = e.before or {}
        # The document key is not an updated field (it comes with the record key), but another format's row keeps
        # its key columns there too: its key must survive an archive that drops the record key (JSON lines).
        key = set(e.primary_key) if own else set()
        updated = {k: v for k, v in (e.after or {}).items()
                   if k not in removed and not (k in key and k in before and before[k] == v)}
        truncated = e.vendor.get("truncatedArrays") if own else None
        return {"removedFields": removed or None, "updatedFields": document("updatedFields", updated),
                "truncatedArrays": unliteral(truncated) if truncated else None}


def _event_columns(columns: dict[str, Column], before: Optional[Image], after: Optional[Image]
                   ) -> tuple[Column, ...]:
    """The images' columns, the typed ones first, as the shared tuple of that list (``shared.columns``): a
    collection's documents repeat a few lists, and the decode step converts and checks each tuple once."""
    names = dict.fromkeys([*(before or {}), *(after or {})])
    return shared_columns([*(columns[n] for n in names if n in columns),
                           *(column(n) for n in names if n not in columns)])


def _text(value: Any) -> Optional[str]:
    return None if value is None or value == "" else str(value)


CODEC = DebeziumBsonCodec()
