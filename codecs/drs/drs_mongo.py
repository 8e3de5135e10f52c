"""Huawei Cloud DRS to Kafka, JSON format for MongoDB / DDS sources: one oplog entry per message.

``value`` and ``where`` are *strings* holding MongoDB shell-mode JSON as the Java driver writes it
(``{"_id": ObjectId("..."), "c1": "baz"}``): constructors such as ``ObjectId(...)``, ``NumberLong(...)``,
``ISODate(...)``, ``new BinData(...)`` and ``/regex/`` literals are not JSON, so a small parser reads them.

Canonical representation (documented for the merge; tests/fixtures/drs-mongo/NOTES.md has the full table):
- table = collection (``coll``), database = ``db``;
- an image maps each *top-level* field to the canonical text of its value, and ``Column.type_name`` names the
  BSON type the value was written as, so the text means the same as in the relational formats:
  ``string`` -> the text; ``int32``/``int64``/``double`` -> the literal (``NumberLong("9")`` -> ``9``);
  ``decimal128`` -> the digits; ``bool`` -> true/false; ``objectId`` -> the 24 hex digits; ``binData`` (subtype
  0, else ``binData(<subtype>)``) -> base64; BSON date -> ``timestamp(3)``: epoch seconds with 3 fraction digits
  (an instant, the canonical ``timestamp`` family); BSON ``Timestamp(t, i)`` -> ``bsonTimestamp`` "t:i";
  ``object``/``array`` -> compact shell JSON text; ``regex``/``minKey``/``maxKey``/``undefined`` -> the
  literal; any other constructor -> its compact text, typed by the constructor name. ``null`` is None (type
  ``null``). ``Column.number`` marks bare numbers. The type names are chosen so that ``types.family`` reads them
  correctly (with ``jdbc_type`` for the Mongo-only names): ``date``/``timestamp`` would read as SQL DATE / epoch;
- insert: after = the document. delete (recordType ``doc``): before = ``value`` (the deleted document's key);
- update (recordType ``update``): before = the ``where`` filter's fields (the document key, not a before image);
  after = the ``where`` fields (the document still has them) plus every ``$set`` field (dotted paths stay one
  field name, e.g. ``"a.b"``) plus every ``$unset`` field as **None**. A removed field is therefore NULL for a
  relational merge; a document-aware merge removes the fields listed in ``vendor["unset"]`` (field -> the
  ``$unset`` argument text) instead;
- replace (recordType ``replace``): before = the ``where`` fields, after = the whole new document. Fields of the
  old document that the new one lacks are gone; ``vendor["recordType"] == "replace"`` tells a document-aware
  merge to drop them (the event cannot list them: the oplog does not carry the old document);
- ``primary_key`` = ``("_id",)`` when the document (or key) has an ``_id``, as every MongoDB document does;
  otherwise the fields of the key document (``where`` of an update, ``value`` of a delete), which is how a
  relational row written into this format keeps its key; an insert without ``_id`` declares none;
- ``vendor["recordType"]`` always holds the record type; other update operators ($inc, $push, ...) are not
  documented for DRS and are rejected rather than guessed.

Encoding events of other formats: values by type family (integers and floats as bare numbers, decimals as
``NumberDecimal("...")`` so that they do not read back as doubles, binary as ``new BinData(0, "<base64>")``,
true/false booleans bare, everything else as strings); an update is ``$set`` of every after field but the
unchanged key, with ``where`` = the primary-key columns; a delete's ``value`` is the primary-key columns;
full-sync rows are INSERT.

Lossless re-encode: as in ``drs_json``, the message is derived from the event (Java-driver spacing and
spelling) and header keys that differ, including ``value``/``where`` text with other spacing, key order or
constructor spelling, are kept in ``vendor["fix"]``; a fixed text is reused only while it still decodes to the
event's images and column types.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Optional, Sequence

from ..base import Capabilities, Codec, EncodedMessage, flat_database, message_key, untyped
from .drs_wire import apply_header_fixes, drs_id, gson_dumps, header_fixes, integer_field, text_field
from ..event import Column, DecodeError, Event, Image, Op, Position
from ..jsontext import JsonNumber
from ..shared.columns import column, shared_columns
from ..shared.declared_rows import DeclaredRows, ShellDocuments
from ..shared.required import INTEGER as JSON_INTEGER, STRING as JSON_STRING, Required, need, same_needs
from ..shared.bson_values import (
    ARRAY, BASE64 as _BASE64, BIN_DATA, BOOL, BSON_TIMESTAMP, DATE, DECIMAL128, DOUBLE, EPOCH_ORDINAL as _EPOCH_ORDINAL,
    FLOAT_WORDS, HEX24 as _HEX24, INT as _INT, INT32, INT32_RANGE, INT64, MONGO_ONLY, MS_PER_DAY as _MS_PER_DAY,
    NULL, NUMBER as _NUMBER, OBJECT, OBJECT_ID, REGEX, STRING, WORDS, Typed, bin_subtype, bin_type, epoch_to_ms,
    foreign_type, is_bin_type, is_decimal as _is_decimal, iso_to_epoch)

FORMAT = "drs-mongo"
OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "DDL": Op.DDL}
OP_NAMES = {Op.INSERT: "INSERT", Op.SNAPSHOT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.DDL: "DDL"}
RECORD_TYPES = {Op.INSERT: ("insert",), Op.UPDATE: ("update", "replace")}
UPDATE_OPERATORS = ("$set", "$unset")
ID = "_id"

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


_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_REGEX = re.compile(r"/(?:[^/\\\n]|\\.)+/[a-z]*")
_STRING = {'"': re.compile(r'"(?:[^"\\]|\\.)*"', re.S), "'": re.compile(r"'(?:[^'\\]|\\.)*'", re.S)}


class ShellSyntaxError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str):
        self.s, self.i, self.n = text, 0, len(text)

    def parse(self) -> Node:
        node = self.value()
        self.ws()
        if self.i != len(self.s):
            self.fail("unexpected text after the value")
        return node

    def fail(self, what: str) -> None:
        raise ShellSyntaxError(f"{what} at character {self.i}: {self.s[self.i:self.i + 20]!r}")

    def ws(self) -> None:
        self.peek()

    def peek(self) -> str:
        """The next character after any whitespace (skipped), or "" at the end. Called for every token, so it
        works on locals."""
        s, i, n = self.s, self.i, self.n
        while i < n and s[i].isspace():
            i += 1
        self.i = i
        return s[i] if i < n else ""

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
            m = _REGEX.match(self.s, self.i)
            if not m:
                self.fail("bad regular expression")
            self.i = m.end()
            return Node("atom", m.group(0))
        if self.s.startswith("-Infinity", self.i):
            self.i += len("-Infinity")
            return Node("atom", "-Infinity")
        m = _NUMBER.match(self.s, self.i) if c and (c in "-." or c.isdigit()) else None
        if m:
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
    """The text of a quoted token (double quotes as JSON, mongosh-style single quotes too); bare names as is."""
    body = token[1:-1]
    if token[:1] in _STRING and "\\" not in body and body.isprintable():
        return body  # no escape and no control character (which JSON rejects): the text is the body as written
    try:
        if token.startswith('"'):
            return json.loads(token)
        if token.startswith("'"):
            return json.loads('"' + token[1:-1].replace('\\\'', "'").replace('"', '\\"') + '"')
    except json.JSONDecodeError as exc:
        raise ShellSyntaxError(f"bad string {token[:20]!r}: {exc.msg}") from None
    return token


# Field names repeat in every message of a collection.
_key_name = functools.lru_cache(maxsize=4096)(key_name)


def parse_shell(text: str) -> Node:
    """The value ``text`` holds. The one-regex reader takes the common text; whatever it does not fully accept
    (and every error) is read again by ``_Parser``, whose messages are the documented error texts."""
    if text.count("{") + text.count("[") + text.count("(") <= _FAST_MAX_DEPTH:
        try:
            return _fast_parse(text)
        except (_NotFast, StopIteration, ShellSyntaxError):
            pass
    return _Parser(text).parse()


# The fast reader: one regex pass cuts the text into tokens (the Java driver's ASCII whitespace skipped), then a
# recursive reader builds the same Node tree as ``_Parser``. A constructor's name and its "(" are one token, so the
# reader never looks ahead. Anything a token pattern does not take lands in the last alternative (one character)
# and is refused; so are unicode whitespace, bare "new" and keys that are no plain name: ``_Parser`` decides those.
_WS = " \t\n\r"
_TOKEN = re.compile(
    f"[{_WS}]*("
    r"""(?s:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""  # strings: as _STRING
    r"|[{}\[\]:,)]"
    r"|-Infinity|(?=[-.0-9])" + _NUMBER.pattern +  # as _Parser: "-Infinity" first; numbers start with - . or 0-9
    f"|(?:new[{_WS}]+)?{_IDENT.pattern}[{_WS}]*\\("  # a constructor call up to its "("
    f"|new[{_WS}]+{_IDENT.pattern}|{_IDENT.pattern}"
    f"|{_REGEX.pattern}"
    f"|[^{_WS}])")  # anything else: one character, refused (trailing whitespace is no token)
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_QUOTES = frozenset("\"'")
_NUMBER_START = frozenset("-.0123456789")
# Python's recursion limit must not end the fast reader where _Parser (two frames per level) would fail first.
_FAST_MAX_DEPTH = 100
_EMPTY_OBJECT = Node("object")


class _NotFast(Exception):
    """Text the fast reader leaves to _Parser."""


def _fast_parse(text: str) -> Node:
    tokens = iter(_TOKEN.findall(text))
    node = _fast_value(next(tokens), tokens.__next__)
    if next(tokens, None) is not None:
        raise _NotFast  # text after the value
    return node


def _fast_value(t: str, take) -> Node:
    c = t[0]
    if c == "{":
        return _fast_object(take)
    if c == "[":
        return Node("array", items=_fast_items(take, "]"))
    if c in _QUOTES or c == "/":
        if len(t) < 2:  # an unterminated string or regex: one character
            raise _NotFast
        return Node("atom", t)
    if c in _NUMBER_START:
        if t == "-" or t == ".":
            raise _NotFast
        return Node("atom", t)
    if c not in _IDENT_START:
        raise _NotFast
    if t[-1] == "(":
        return Node("call", _word(t[:-1].rstrip(_WS)), _fast_items(take, ")"))
    return Node("atom", _word(t))


def _word(t: str) -> str:
    """A name as _Parser spells it: ``new`` and the name after it joined by one space."""
    if t[:3] == "new" and (len(t) == 3 or t[3] in _WS):
        if len(t) == 3:
            raise _NotFast  # "new" with no name after it: an error
        return "new " + t[3:].lstrip(_WS)
    return t


def _fast_items(take, close: str) -> tuple[Node, ...]:
    t = take()
    if t == close:
        return ()
    items = []
    while True:
        items.append(_fast_value(t, take))
        t = take()
        if t == close:
            return tuple(items)
        if t != ",":
            raise _NotFast
        t = take()


def _fast_object(take) -> Node:
    t = take()
    if t == "}":
        return _EMPTY_OBJECT
    items = []
    while True:
        if t[0] in _QUOTES and len(t) > 1:
            name = _key_name(t)
        elif _IDENT.fullmatch(t):
            name = t
        else:
            raise _NotFast
        if take() != ":":
            raise _NotFast
        items.append((t, name, _fast_value(take(), take)))
        t = take()
        if t == "}":
            return Node("object", items=tuple(items))
        if t != ",":
            raise _NotFast
        t = take()


def fields(node: Node) -> list[tuple[str, Node]]:
    if node.kind != "object":
        raise ShellSyntaxError("expected a document {...}")
    return [(name, value) for _, name, value in node.items]




# --------------------------------------------------------------------------------------------------------------
# BSON values <-> canonical text


def typed(node: Node) -> Typed:
    """The canonical text and BSON type of a parsed value. Raises ShellSyntaxError for a bare word that is no
    shell-JSON value (``{"a": foo}``)."""
    if node.kind in (OBJECT, ARRAY):
        return Typed(node.kind, node.compact())
    if node.kind == "call":
        return _typed_call(node)
    return _typed_atom(node.text)


@functools.lru_cache(maxsize=4096)  # numbers, null, booleans and short strings repeat across documents
def _typed_atom(t: str) -> Typed:
    if t == "null":
        return Typed(NULL, None)
    if t in ("true", "false"):
        return Typed(BOOL, t)
    if t[0] in _STRING:
        return Typed(STRING, key_name(t))
    if t[0] == "/":
        return Typed(REGEX, t)
    if _INT.fullmatch(t):  # a bare integer is an int32 when it fits, as the Java driver reads it
        return Typed(INT32 if int(t) in INT32_RANGE else INT64, t, True)
    if _NUMBER.fullmatch(t) or t in FLOAT_WORDS:
        return Typed(DOUBLE, t, True)
    if t in WORDS:
        return Typed(WORDS[t], t)
    raise ShellSyntaxError(f"{t!r} is not a value")


def _typed_call(node: Node) -> Typed:
    name = node.text.removeprefix("new ")
    args = node.items
    strings = [key_name(a.text) for a in args if a.kind == "atom" and a.text[:1] in _STRING]
    ints = [a.text for a in args if a.kind == "atom" and _INT.fullmatch(a.text)]
    one_string = len(args) == 1 and len(strings) == 1
    if name == "ObjectId" and one_string and _HEX24.fullmatch(strings[0]):
        return Typed(OBJECT_ID, strings[0])
    if name in ("NumberLong", "NumberInt") and len(args) == 1:
        digits = strings[0] if one_string else (ints[0] if ints else "")
        if _INT.fullmatch(digits):
            return Typed(INT64 if name == "NumberLong" else INT32, digits)
    if name == "NumberDecimal" and one_string and _is_decimal(strings[0]):
        return Typed(DECIMAL128, strings[0])
    if name == "BinData" and len(args) == 2 and len(ints) == 1 and len(strings) == 1 and args[0].text == ints[0] \
            and 0 <= int(ints[0]) <= 255 and _BASE64.fullmatch(strings[0]):
        return Typed(bin_type(int(ints[0])), strings[0])
    if name in ("ISODate", "Date") and len(args) == 1:
        epoch = iso_to_epoch(strings[0]) if one_string else None
        if epoch is not None:
            return Typed(DATE, epoch)
        if ints:
            return Typed(DATE, format(Decimal(int(ints[0])).scaleb(-3), "f"))
    if name == "Timestamp" and len(args) == 2 and len(ints) == 2 and int(ints[0]) >= 0 and int(ints[1]) >= 0:
        return Typed(BSON_TIMESTAMP, f"{ints[0]}:{ints[1]}")
    return Typed(name, node.compact())  # UUID(...), DBRef(...), a malformed ObjectId(...): kept as written


# json.dumps(text, ensure_ascii=False) builds a new JSONEncoder on every call (non-default arguments); one kept
# encoder writes the same text.
shell_string = json.JSONEncoder(ensure_ascii=False).encode


def render_date(text: str) -> str:
    """Epoch seconds -> the Java driver's shell form: ``ISODate("...Z")`` with milliseconds inside years
    1..9999, ``new Date(<ms>)`` outside. Raises ValueError for text that is no whole number of milliseconds."""
    ms = epoch_to_ms(text)
    days, rem = divmod(ms, _MS_PER_DAY)
    try:
        day = date.fromordinal(_EPOCH_ORDINAL + days)
    except (ValueError, OverflowError):
        return f"new Date({ms})"
    h, rem = divmod(rem, 3_600_000)
    mi, rem = divmod(rem, 60_000)
    s, milli = divmod(rem, 1000)
    return f'ISODate("{day.isoformat()}T{h:02d}:{mi:02d}:{s:02d}.{milli:03d}Z")'


def render_typed(text: str, type_name: Optional[str], number: bool) -> str:
    """Canonical text back to shell JSON as the Java driver writes a value of that BSON type."""
    if type_name == STRING:
        return shell_string(text)
    if type_name in (INT32, INT64) and not number:
        if type_name == INT32:
            return f"NumberInt({text})"
        return f"NumberLong({text})" if int(text) in INT32_RANGE else f'NumberLong("{text}")'
    if type_name in (INT32, INT64, DOUBLE, BOOL):
        return text
    if type_name == DECIMAL128:
        return f"NumberDecimal({json.dumps(text)})"
    if type_name == OBJECT_ID:
        return f'ObjectId("{text}")'
    if is_bin_type(type_name):
        return f"new BinData({bin_subtype(type_name)}, {json.dumps(text)})"
    if type_name == DATE:
        return render_date(text)
    if type_name == BSON_TIMESTAMP:
        t, i = text.split(":")
        return f"Timestamp({t}, {i})"
    return parse_shell(text).shell()  # object, array, regex, MinKey, other constructors: the text is shell JSON


def render_foreign(text: str, column: Column) -> str:
    """Canonical text of another format as the BSON type its family maps to (``bson_values.foreign_type``)."""
    kind = foreign_type(text, column)
    if kind == DECIMAL128:
        return f"NumberDecimal({json.dumps(text)})"
    if kind in (INT64, DOUBLE, BOOL):
        return text
    if kind == BIN_DATA:
        return f"new BinData(0, {json.dumps(text)})"
    return shell_string(text)


def render_value(text: Optional[str], column: Column, own: bool) -> str:
    """One field value. Own events (and Mongo-only types of foreign ones) by the declared BSON type, as long as
    that reads back to the same text and type; otherwise, and for other formats' events, by type family."""
    if text is None:
        return "null"
    t = column.type_name
    if own and t == STRING:
        # A JSON string literal reads back as its text (``key_name`` is json's inverse): no read-back check,
        # which for texts that do not repeat (names, addresses) was most of a decode's derivation.
        return shell_string(text)
    if own or t in MONGO_ONLY or is_bin_type(t):
        reader = _typed_rendering if len(text) > _CACHED_TEXT else _cached_typed_rendering
        out = reader(text, t, column.number)
        if out is not None:
            return out
    return render_foreign(text, column)


def _typed_rendering(text: str, type_name: Optional[str], number: bool) -> Optional[str]:
    """``render_typed``'s text when it reads back to the same text and type, else None."""
    try:
        out = render_typed(text, type_name, number)
        back = typed(parse_shell(out))
    except (ShellSyntaxError, ValueError):
        return None
    return out if (back.type_name, back.text) == (type_name, text) else None


# The rendering and its read-back check (a parse) are a pure function of the value, and decode derives every
# field it reads; keys, small numbers and repeated texts recur across messages. Long texts (whole nested
# documents) are not kept.
_CACHED_TEXT = 256
_cached_typed_rendering = functools.lru_cache(maxsize=4096)(_typed_rendering)


def render_document(image: Image, columns: dict[str, Column], own: bool) -> str:
    parts = [f"{shell_string(name)}: {render_value(text, columns.get(name) or Column(name), own)}"
             for name, text in image.items()]
    return "{" + ", ".join(parts) + "}"


# --------------------------------------------------------------------------------------------------------------


def _mongo_op(msg: dict) -> Optional[str]:
    kind = msg.get("op")
    return kind if kind in OPS else None


# An oplog entry names its collection and carries its DRS id and its document (a DDL: its command) in value.
REQUIRED = Required(_mongo_op, {
    **same_needs(("INSERT", "UPDATE", "DELETE"), need("coll", JSON_STRING, nonempty=True),
                 need("db", JSON_STRING, nonempty=True), need("id", JSON_INTEGER), need("value", JSON_STRING)),
    "DDL": (need("id", JSON_INTEGER), need("value", JSON_STRING)),
}, table="coll")


class DrsMongoCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Huawei Cloud DRS"
    description = "Huawei DRS JSON for MongoDB/DDS: oplog entries with shell-JSON value/where, $set/$unset updates"
    capabilities = Capabilities(
        schema_level=False,  # a schema is written as the database (flat_database)
        losses=untyped("bit", "date", "datetime", "decimal", "int", "timestamp"),
        primary_key=False,
        typed_values=True,
        before_image="key",
        after_image="changed",
        delete_image="key",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL}),  # full-sync rows are written as INSERT
        notes="Images are top-level document fields as canonical text typed by their BSON type (string, int32, "
              "int64, double, decimal128, bool, objectId as hex, binData as base64, dates as epoch seconds "
              "'timestamp(3)', nested object/array as compact shell JSON). An update carries no before image: "
              "its before is the where filter (the document key); its after is the key plus the $set fields "
              "(a converted relational update sets every column), $unset fields as None (listed in "
              "vendor.unset); a replace after image is the whole document (vendor.recordType=replace); a "
              "delete carries only the key; full-sync rows are written as INSERT; no heartbeat, transaction or "
              "truncate records.",
    )

    # The JVM's declared decode (shared.declared_rows): the documents written as the encoder writes them back (the
    # Java driver's spelling, each value in its type's one form; updates by $set and $unset); the rest (DDL, $v,
    # regular expressions, other spellings, which the codec keeps as fixes) ``decode`` decodes.
    jvm_declaration = DeclaredRows(
        op=("op", {kind: op.value for kind, op in OPS.items() if op.is_data}), images=(),
        reads={"database": ("db", "text"), "table": ("coll", "text"), "millis": ("es", "scalar"),
               "sequence": ("id", "integer")},
        writes={"id": "sequence_number", "op": "op", "dbType": '="MongoDB"', "db": "database_or_empty",
                "coll": "table", "value": "shell_value", "where": "shell_where", "recordType": "record_type",
                "extra": "record_type", "es": "millis_number_or_null", "ts": "record_millis", "clusterTime": "null"},
        fix_keys=True, shell_documents=ShellDocuments("value", "where", "recordType", ID))

    # ---------------------------------------------------------------------------------------------- decode

    # ``Codec.decode`` runs the recipe; DRS differences: fixes are whole top-level keys (``header_fixes``).

    def events(self, msg: dict, position: Position) -> list[Event]:
        return [self._event(msg, position)]

    def derive(self, events: list[Event]) -> dict:
        return self._build(events[0])

    def fixes(self, msg: dict, events: list[Event]) -> list[list]:
        return header_fixes(msg, self.derive(events), ())

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
        columns: dict[str, Column] = {}
        before, after = self._images(op, record_type, value, where, vendor, columns, position)
        key = before if op is not Op.INSERT else after
        primary_key = (ID,) if ID in (key or {}) else (() if op is Op.INSERT else tuple(key or {}))
        names = dict.fromkeys([*(before or {}), *(after or {})])
        return Event(before=before, after=after, columns=shared_columns(columns.get(n) or column(n) for n in names),
                     primary_key=primary_key, vendor=vendor,
                     # For a merge: $unset fields are removed from the document (not set NULL), and a replace
                     # record's after image is the whole new document.
                     removed_columns=tuple(vendor.get("unset", ())), replaces_row=record_type == "replace",
                     **common)

    def _document(self, text: Optional[str], field: str, position: Position) -> Node:
        if text is None:
            raise self.error(field, position, "missing; expected a document")
        try:
            node = parse_shell(text)
            if node.kind != "object":
                fields(node)  # raises: the error text for a value that is no document
        except ShellSyntaxError as exc:
            raise self.error(field, position, f"not a MongoDB shell-JSON document: {exc}") from None
        return node

    def _fields(self, node: Node, path: str, columns: dict[str, Column], position: Position) -> Image:
        """A document's fields as an image; their types go to ``columns`` (a later image's type wins)."""
        image: Image = {}
        for _, name, value in node.items:  # node is a document: _document and _update checked its kind
            try:
                t = typed(value)
            except ShellSyntaxError as exc:
                raise self.error(f"{path}.{name}", position, str(exc)) from None
            image[name] = t.text
            columns[name] = t.column(name)
        return image

    def _images(self, op: Op, record_type: str, value: Node, where: Optional[Node], vendor: dict,
                columns: dict[str, Column], position: Position) -> tuple[Optional[Image], Optional[Image]]:
        if op is Op.INSERT:
            return None, self._fields(value, "value", columns, position)
        if op is Op.DELETE:
            return self._fields(value, "value", columns, position), None
        if where is None:
            raise self.error("where", position, f"{record_type} needs the where filter (the document key)")
        key = self._fields(where, "where", columns, position)
        if record_type == "replace":
            return key, self._fields(value, "value", columns, position)
        return key, {**key, **self._update(value, vendor, columns, position)}

    def _update(self, value: Node, vendor: dict, columns: dict[str, Column], position: Position) -> Image:
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
            if name == "$set":
                after.update(self._fields(node, f"value.{name}", columns, position))
                continue
            for field_name, arg in fields(node):  # $unset: the field is removed; its argument is no value
                after[field_name] = None
                columns.pop(field_name, None)
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
            out.append(EncodedMessage(gson_dumps(self.written(msg, e)), message_key(e), e.qualified_table,
                                      OP_NAMES[e.op]))
        return out

    def _fixed(self, e: Event, derived: dict) -> dict:
        fixed = apply_header_fixes(dict(derived), e.vendor["fix"])
        if fixed.get("value") == derived.get("value") and fixed.get("where") == derived.get("where"):
            return fixed
        try:
            again = self._event(fixed, e.position)
        except DecodeError:
            again = None
        if again is not None and _meaning(again) == _meaning(e):
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
            "db": flat_database(e) or "", "coll": e.table or "", "value": value, "where": where,
            "recordType": record_type, "extra": record_type,
            "es": JsonNumber(str(ms)) if ms is not None else None,
            "ts": JsonNumber(str(ts)) if ts is not None else None,
            "clusterTime": None,
        }

    def _texts(self, e: Event, own: bool, record_type: Optional[str]
               ) -> tuple[Optional[str], Optional[str], Optional[str]]:
        cols = {c.name: c for c in e.columns}
        if e.op is Op.DDL:
            return e.ddl, None, record_type
        if e.op in (Op.INSERT, Op.SNAPSHOT):
            return render_document(e.after or {}, cols, own), None, "insert"
        if e.op is Op.DELETE:  # a DRS delete names the removed document by its key
            image = e.before or {}
            return render_document(image if own else _key_of(e, image), cols, own), None, record_type or "doc"
        key = e.before if own and e.before is not None else _key_of(e, e.before or e.after or {})
        where = render_document(key, cols, own)
        if record_type == "replace":
            return render_document(e.after or {}, cols, own), where, record_type
        return self._update_text(e, key, cols, own), where, "update"

    @staticmethod
    def _update_text(e: Event, key: Image, cols: dict[str, Column], own: bool) -> str:
        unset = e.vendor.get("unset", {}) if own else {}
        after = e.after or {}
        set_fields = {k: v for k, v in after.items()
                      if not (k in unset and v is None) and not (k in key and key[k] == v)}
        unset_fields = {k: v for k, v in unset.items() if k in after and after[k] is None}
        operators = e.vendor.get("operators") if own else None
        operators = operators or (["$set"] + (["$unset"] if unset_fields else []))
        parts = []
        for name in operators:
            if name == "$set":
                parts.append(f'"$set": {render_document(set_fields, cols, own)}')
            elif name == "$unset":
                parts.append('"$unset": {' + ", ".join(
                    f"{shell_string(k)}: {parse_shell(v).shell()}" for k, v in unset_fields.items())
                    + "}")
            elif name == "$v":
                parts.append(f'"$v": {parse_shell(e.vendor.get("v", "1")).shell()}')
        return "{" + ", ".join(parts) + "}"


def _key_of(e: Event, image: Image) -> Image:
    """The document key of another format's row: its primary-key columns (the whole image without a key)."""
    pk = e.primary_key or tuple(k for k in (ID,) if k in image)
    if not pk:
        return dict(image)
    other = e.after if image is e.before else e.before
    return {k: image[k] if k in image else (other or {}).get(k) for k in pk}


def _meaning(e: Event) -> tuple:
    """What a value/where text has to reproduce: the images and each field's type and bare-number flag."""
    return e.before, e.after, {c.name: (c.type_name, c.number) for c in e.columns}


CODEC = DrsMongoCodec()
