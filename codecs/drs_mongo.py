"""Huawei Cloud DRS to Kafka, JSON format for MongoDB / DDS sources: one oplog entry per message.

``value`` and ``where`` are *strings* holding MongoDB shell-mode JSON as the Java driver writes it
(``{"_id": ObjectId("..."), "c1": "baz"}``): constructors such as ``ObjectId(...)``, ``NumberLong(...)``,
``ISODate(...)``, ``new BinData(...)`` and ``/regex/`` literals are not JSON, so a small parser reads them.

Canonical representation (documented for the merge):
- table = collection (``coll``), database = ``db``, ``primary_key = ("_id",)``;
- an image maps each *top-level* field to the compact JSON text of its value, constructors kept verbatim
  (``"c1" -> '"baz"'``, ``"_id" -> 'ObjectId("64650cf67dc36a464e76e583")'``, ``"tags" -> '["a","b"]'``);
  a JSON ``null`` field is None; ``Column.number`` marks bare numbers; there are no declared types;
- insert: after = the document. delete (recordType ``doc``): before = ``value`` (the deleted document's key);
- update (recordType ``update``): before = the ``where`` filter's fields; after = the ``where`` fields (the
  document still has them) plus every ``$set`` field (dotted paths stay one field name, e.g. ``"a.b"``) plus
  every ``$unset`` field as **None**. A removed field is therefore NULL for a relational merge; a document-aware
  merge removes the fields listed in ``vendor["unset"]`` (field -> the ``$unset`` argument text) instead;
- replace (recordType ``replace``): before = the ``where`` fields, after = the whole new document. Fields of the
  old document that the new one lacks are gone; ``vendor["recordType"] == "replace"`` tells a document-aware
  merge to drop them (the event cannot list them: the oplog does not carry the old document);
- ``vendor["recordType"]`` always holds the record type; other update operators ($inc, $push, ...) are not
  documented for DRS and are rejected rather than guessed.

Lossless re-encode: as in ``drs_json``, the message is derived from the event (Java-driver spacing) and header
keys that differ, including ``value``/``where`` text with other spacing or key order, are kept in
``vendor["fix"]``; a fixed text is reused only while it still decodes to the event's images.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional, Sequence

from .base import Capabilities, Codec, EncodedMessage, message_key
from .drs_json import (apply_header_fixes, drs_id, gson_dumps, header_fixes, integer_field, load_object,
                       text_field)
from .event import Column, DecodeError, Event, Image, Op, Position
from .jsontext import JsonNumber
from .types import family

FORMAT = "drs-mongo"
OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "DDL": Op.DDL}
OP_NAMES = {Op.INSERT: "INSERT", Op.SNAPSHOT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.DDL: "DDL"}
RECORD_TYPES = {Op.INSERT: ("insert",), Op.UPDATE: ("update", "replace")}
UPDATE_OPERATORS = ("$set", "$unset")
PRIMARY_KEY = ("_id",)


# --------------------------------------------------------------------------------------------------------------
# MongoDB shell-mode JSON


@dataclass(frozen=True)
class Node:
    """A parsed shell-JSON value. ``atom``: text is the literal (string with its quotes, number, true, /re/i);
    ``call``: text is the constructor (``ObjectId``, ``new BinData``), items the arguments; ``array``: items;
    ``object``: items are (key token, key name, value) triples."""

    kind: str
    text: str = ""
    items: tuple = ()

    def compact(self) -> str:
        if self.kind == "atom":
            return self.text
        if self.kind == "array":
            return "[" + ",".join(n.compact() for n in self.items) + "]"
        if self.kind == "call":
            return self.text + "(" + ",".join(n.compact() for n in self.items) + ")"
        return "{" + ",".join(f"{tok}:{v.compact()}" for tok, _, v in self.items) + "}"

    def shell(self) -> str:
        """The Java driver's shell-mode spacing: ``{"a": 1, "b": [1, 2]}``, ``Timestamp(1, 2)``."""
        if self.kind == "atom":
            return self.text
        if self.kind == "array":
            return "[" + ", ".join(n.shell() for n in self.items) + "]"
        if self.kind == "call":
            return self.text + "(" + ", ".join(n.shell() for n in self.items) + ")"
        return "{" + ", ".join(f"{tok}: {v.shell()}" for tok, _, v in self.items) + "}"

    @property
    def is_number(self) -> bool:
        return self.kind == "atom" and bool(_NUMBER.fullmatch(self.text))


_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_STRING = {'"': re.compile(r'"(?:[^"\\]|\\.)*"', re.S), "'": re.compile(r"'(?:[^'\\]|\\.)*'", re.S)}


class ShellSyntaxError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str):
        self.s, self.i = text, 0

    def parse(self) -> Node:
        node = self.value()
        self.ws()
        if self.i != len(self.s):
            self.fail("unexpected text after the value")
        return node

    def fail(self, what: str) -> None:
        raise ShellSyntaxError(f"{what} at character {self.i}: {self.s[self.i:self.i + 20]!r}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            self.fail(f"expected {ch!r}")
        self.i += 1

    def value(self) -> Node:
        c = self.peek()
        if c == "{":
            return self.obj()
        if c == "[":
            return Node("array", items=self.sequence("[", "]"))
        if c in _STRING:
            return Node("atom", self.string())
        if c == "/":
            m = re.compile(r"/(?:[^/\\\n]|\\.)+/[a-z]*").match(self.s, self.i)
            if not m:
                self.fail("bad regular expression")
            self.i = m.end()
            return Node("atom", m.group(0))
        m = _NUMBER.match(self.s, self.i)
        if c and (c in "-." or c.isdigit()) and m:
            self.i = m.end()
            return Node("atom", m.group(0))
        name = self.ident()
        if name == "new":
            name = "new " + self.ident()
        if self.peek() == "(":
            return Node("call", name, self.sequence("(", ")"))
        return Node("atom", name)  # true, false, null, undefined, MinKey, MaxKey, NaN, Infinity

    def ident(self) -> str:
        self.ws()
        m = _IDENT.match(self.s, self.i)
        if not m:
            self.fail("expected a value")
        self.i = m.end()
        return m.group(0)

    def string(self) -> str:
        m = _STRING[self.s[self.i]].match(self.s, self.i)
        if not m:
            self.fail("unterminated string")
        self.i = m.end()
        return m.group(0)

    def sequence(self, open_: str, close: str) -> tuple[Node, ...]:
        self.expect(open_)
        items: list[Node] = []
        if self.peek() == close:
            self.i += 1
            return ()
        while True:
            items.append(self.value())
            c = self.peek()
            self.i += 1
            if c == close:
                return tuple(items)
            if c != ",":
                self.i -= 1
                self.fail(f"expected ',' or {close!r}")

    def obj(self) -> Node:
        self.expect("{")
        items = []
        if self.peek() == "}":
            self.i += 1
            return Node("object")
        while True:
            c = self.peek()
            token = self.string() if c in _STRING else self.ident()
            items.append((token, key_name(token)))
            self.expect(":")
            items[-1] = (*items[-1], self.value())
            c = self.peek()
            self.i += 1
            if c == "}":
                return Node("object", items=tuple(items))
            if c != ",":
                self.i -= 1
                self.fail("expected ',' or '}'")


def key_name(token: str) -> str:
    if token.startswith('"'):
        return json.loads(token)
    if token.startswith("'"):
        return json.loads('"' + token[1:-1].replace('\\\'', "'").replace('"', '\\"') + '"')
    return token


def parse_shell(text: str) -> Node:
    return _Parser(text).parse()


def fields(node: Node) -> list[tuple[str, Node]]:
    if node.kind != "object":
        raise ShellSyntaxError("expected a document {...}")
    return [(name, value) for _, name, value in node.items]


def canonical(node: Node) -> Optional[str]:
    return None if node.kind == "atom" and node.text == "null" else node.compact()


def render_document(image: Image, foreign_columns: Optional[dict[str, Column]] = None) -> str:
    """An image back to shell-mode document text. Own events hold compact shell JSON per field; events of other
    formats hold canonical text, written as a bare number / boolean where the type says so, binary as BinData, else
    a string."""
    parts = []
    for name, text in image.items():
        parts.append(f"{json.dumps(name, ensure_ascii=False)}: {_value_text(name, text, foreign_columns)}")
    return "{" + ", ".join(parts) + "}"


def _value_text(name: str, text: Optional[str], foreign_columns: Optional[dict[str, Column]]) -> str:
    if text is None:
        return "null"
    if foreign_columns is None:
        return parse_shell(text).shell()
    column = foreign_columns.get(name) or Column(name)
    fam = family(column.type_name, column.jdbc_type)
    if (fam in ("int", "decimal", "float") or column.number) and _NUMBER.fullmatch(text):
        return text
    if fam == "bool" and text in ("true", "false"):
        return text
    if fam == "binary":
        return f"new BinData(0, {json.dumps(text)})"  # canonical binary is base64 already, as BinData wants
    return json.dumps(text, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------------


class DrsMongoCodec(Codec):
    name = FORMAT
    vendor = "Huawei Cloud DRS"
    description = "Huawei DRS JSON for MongoDB/DDS: oplog entries with shell-JSON value/where, $set/$unset updates"
    capabilities = Capabilities(
        typed_values=False,
        before_image="none",
        delete_image="key",
        ops=frozenset({Op.SNAPSHOT, Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL}),
        notes="Images are top-level document fields as compact shell JSON, no declared types; update/replace "
              "before image is the where filter (the key), update after image only the $set fields plus the "
              "key, $unset fields as None (listed in vendor.unset); delete carries only the key; a replace "
              "after image is the whole document (vendor.recordType=replace); full-sync rows are written as "
              "INSERT; no heartbeat, transaction or truncate records.",
    )

    # ---------------------------------------------------------------------------------------------- decode

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        msg = load_object(self, raw, position)
        event = self._event(msg, position)
        fixes = header_fixes(msg, self._build(event), ())
        if fixes:
            event = event.with_(vendor={**event.vendor, "fix": fixes})
        return [event]

    def _event(self, msg: dict, position: Position) -> Event:
        kind = text_field(self, msg, "op", position)
        if kind not in OPS:
            raise self.error("op", position, f"unknown operation {kind!r}; expected one of {', '.join(OPS)}")
        op = OPS[kind]
        record_type = text_field(self, msg, "recordType", position)
        allowed = RECORD_TYPES.get(op)
        if allowed and record_type not in allowed:
            raise self.error("recordType", position, f"{kind} needs recordType {' or '.join(allowed)}, "
                                                     f"got {record_type!r}")
        if op is Op.DELETE and record_type is None:
            raise self.error("recordType", position, "DELETE needs a recordType (doc)")
        common = dict(
            format=FORMAT, op=op, position=position,
            database=text_field(self, msg, "db", position), table=text_field(self, msg, "coll", position),
            event_time_ms=integer_field(self, msg, "es", position, required=False),
            sequence=(Decimal(integer_field(self, msg, "id", position, required=True)),),
        )
        vendor: dict[str, Any] = {"recordType": record_type}
        value_text = text_field(self, msg, "value", position)
        where_text = text_field(self, msg, "where", position)
        if op is Op.DDL:
            return Event(ddl=value_text, vendor=vendor, **common)
        value = self._document(value_text, "value", position)
        where = self._document(where_text, "where", position) if where_text is not None else None
        before, after = self._images(op, record_type, value, where, vendor, position)
        columns = _columns(value, before, after)
        return Event(before=before, after=after, columns=columns, primary_key=PRIMARY_KEY, vendor=vendor,
                     **common)

    def _document(self, text: Optional[str], field: str, position: Position) -> Node:
        if text is None:
            raise self.error(field, position, "missing; expected a document")
        try:
            node = parse_shell(text)
            fields(node)
        except ShellSyntaxError as exc:
            raise self.error(field, position, f"not a MongoDB shell-JSON document: {exc}") from None
        return node

    def _images(self, op: Op, record_type: str, value: Node, where: Optional[Node], vendor: dict,
                position: Position) -> tuple[Optional[Image], Optional[Image]]:
        doc = {name: canonical(v) for name, v in fields(value)}
        if op is Op.INSERT:
            return None, doc
        if op is Op.DELETE:
            return doc, None
        if where is None:
            raise self.error("where", position, f"{record_type} needs the where filter (the document key)")
        key = {name: canonical(v) for name, v in fields(where)}
        if record_type == "replace":
            return key, doc
        return key, {**key, **self._update(value, vendor, position)}

    def _update(self, value: Node, vendor: dict, position: Position) -> Image:
        after: Image = {}
        operators = []
        for name, node in fields(value):
            operators.append(name)
            if name == "$v":  # oplog format version marker
                vendor["v"] = node.compact()
                continue
            if name not in UPDATE_OPERATORS:
                raise self.error(f"value.{name}", position, "update operator not supported by DRS JSON "
                                                            f"(documented: {', '.join(UPDATE_OPERATORS)})")
            if node.kind != "object":
                raise self.error(f"value.{name}", position, "expected a document of fields")
            for field_name, arg in fields(node):
                if name == "$set":
                    after[field_name] = canonical(arg)
                else:
                    after[field_name] = None
                    vendor.setdefault("unset", {})[field_name] = arg.compact()
        if not operators:
            raise self.error("value", position, "update without $set/$unset")
        if operators != ["$set"]:
            vendor["operators"] = operators
        return after

    # ---------------------------------------------------------------------------------------------- encode

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        out = []
        for e in events:
            if e.op not in OP_NAMES:
                continue  # heartbeat, transaction markers, truncate: not carried (capabilities.ops)
            msg = self._build(e)
            if e.format == FORMAT and e.vendor.get("fix"):
                msg = self._fixed(e, msg)
            out.append(EncodedMessage(gson_dumps(msg), message_key(e), e.qualified_table, OP_NAMES[e.op]))
        return out

    def _fixed(self, e: Event, derived: dict) -> dict:
        fixed = apply_header_fixes(dict(derived), e.vendor["fix"])
        if fixed.get("value") == derived.get("value") and fixed.get("where") == derived.get("where"):
            return fixed
        try:
            again = self._event(fixed, e.position)
        except DecodeError:
            again = None
        if again is not None and (again.before, again.after) == (e.before, e.after):
            return fixed
        # the recorded value/where text no longer describes this event: keep the derived ones
        fixed["value"], fixed["where"] = derived.get("value"), derived.get("where")
        return fixed

    def _build(self, e: Event) -> dict[str, Any]:
        own = e.format == FORMAT
        record_type = e.vendor.get("recordType") if own else None
        value, where, record_type = self._texts(e, own, record_type)
        ms = e.event_time_ms
        ts = e.position.timestamp_ms if e.position.timestamp_ms is not None else ms
        return {
            "id": JsonNumber(str(drs_id(e))), "op": OP_NAMES[e.op], "dbType": "MongoDB",
            "db": e.database or "", "coll": e.table or "", "value": value, "where": where,
            "recordType": record_type, "extra": record_type,
            "es": JsonNumber(str(ms)) if ms is not None else None,
            "ts": JsonNumber(str(ts)) if ts is not None else None,
            "clusterTime": None,
        }

    def _texts(self, e: Event, own: bool, record_type: Optional[str]
               ) -> tuple[Optional[str], Optional[str], Optional[str]]:
        cols = None if own else {c.name: c for c in e.columns}
        if e.op is Op.DDL:
            return e.ddl, None, record_type
        if e.op in (Op.INSERT, Op.SNAPSHOT):
            return render_document(e.after or {}, cols), None, "insert"
        if e.op is Op.DELETE:
            return render_document(e.before or {}, cols), None, record_type or "doc"
        key = self._key(e, own)
        where = render_document(key, cols)
        if record_type == "replace":
            return render_document(e.after or {}, cols), where, record_type
        return self._update_text(e, key, cols), where, "update"

    @staticmethod
    def _key(e: Event, own: bool) -> Image:
        if own and e.before is not None:
            return e.before
        image = e.before or e.after or {}
        pk = e.primary_key or tuple(k for k in PRIMARY_KEY if k in image)
        return {k: image.get(k) for k in pk} if pk else dict(image)

    @staticmethod
    def _update_text(e: Event, key: Image, cols: Optional[dict[str, Column]]) -> str:
        unset = e.vendor.get("unset", {}) if cols is None else {}
        after = e.after or {}
        set_fields = {k: v for k, v in after.items()
                      if not (k in unset and v is None) and not (k in key and key[k] == v)}
        unset_fields = {k: v for k, v in unset.items() if k in after and after[k] is None}
        operators = e.vendor.get("operators") if cols is None else None
        operators = operators or (["$set"] + (["$unset"] if unset_fields else []))
        parts = []
        for name in operators:
            if name == "$set":
                parts.append(f'"$set": {render_document(set_fields, cols)}')
            elif name == "$unset":
                parts.append('"$unset": {' + ", ".join(
                    f"{json.dumps(k, ensure_ascii=False)}: {parse_shell(v).shell()}" for k, v in unset_fields.items())
                    + "}")
            elif name == "$v":
                parts.append(f'"$v": {parse_shell(e.vendor.get("v", "1")).shell()}')
        return "{" + ", ".join(parts) + "}"


def _columns(value: Node, before: Optional[Image], after: Optional[Image]) -> tuple[Column, ...]:
    """One undeclared Column per field; ``number`` when the document wrote a bare number."""
    numbers = {name for name, v in fields(value) if v.is_number}
    for name, v in fields(value):
        if name in UPDATE_OPERATORS and v.kind == "object":
            numbers |= {n for n, arg in fields(v) if arg.is_number and name == "$set"}
    names = dict.fromkeys([*(before or {}), *(after or {})])
    return tuple(Column(n, number=n in numbers) for n in names)


CODEC = DrsMongoCodec()
