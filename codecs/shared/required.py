"""The fields a message must carry, declared once per codec (``Codec.required``) and checked by shared machinery.

A vendor message that parses can still lack what its kind of message always has: a row message without its
table, a DDL without its statement, an UPDATE without the image its operation implies. Decoded as it is, such a
message becomes an event with NULL names that lands in ``events/table_name=__HIVE_DEFAULT_PARTITION__`` and
stops the merge later. So each codec declares, per message kind, the fields and the JSON types the format always
gives them (``Required``); ``check`` runs on the parsed message before the vendor reads it and makes a missing
field, or one of the wrong type, a ``DecodeError`` naming vendor, field and position (a dead letter).
``cdc-replay formats`` shows the declarations. The event record's own rule (a data event names its table) is
``contract.check_event``'s, which names the field with ``Required.table``.

Paths are dotted keys into nested objects (``payload.source.table``). Types are JSON's, as any of the three
readers give them (``jsontext``: exact number literals; orjson; an Avro datum): ``string``, ``integer``,
``number`` (integer included), ``boolean``, ``array``, ``object``, ``bytes`` (Avro), ``null``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from ..event import DecodeError, Position
from ..jsontext import JsonNumber

STRING, INTEGER, NUMBER, BOOLEAN, ARRAY, OBJECT, BYTES, NULL = (
    "string", "integer", "number", "boolean", "array", "object", "bytes", "null")
# Any value the format writes there, as long as the key is present (a NULL cell is a value).
ANY = (STRING, NUMBER, BOOLEAN, ARRAY, OBJECT, BYTES, NULL)


def json_type(value: Any) -> str:
    """The JSON type of a parsed value (``integer`` for an integral number, ``number`` for any other)."""
    if value is None:
        return NULL
    t = type(value)
    if t is bool:
        return BOOLEAN
    if t is int:
        return INTEGER
    if t is JsonNumber:
        return INTEGER if value.lstrip("-").isdigit() else NUMBER
    if t is float:
        return NUMBER
    if t is str:
        return STRING
    if isinstance(value, (list, tuple)):
        return ARRAY
    if isinstance(value, dict):
        return OBJECT
    if isinstance(value, (bytes, bytearray)):
        return BYTES
    return t.__name__


def _accepts(types: tuple[str, ...], actual: str) -> bool:
    return actual in types or (actual == INTEGER and NUMBER in types)


_ABSENT = object()


def _lookup(msg: Any, path: tuple[str, ...]) -> Any:
    value = msg
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _ABSENT
        value = value[key]
    return value


@dataclass(frozen=True)
class Need:
    path: str
    types: tuple[str, ...]
    nonempty: bool = False  # a string or array that must not be empty (a table name, a list of rows)
    # ``path`` split once: every message of a kind is checked against its needs (a split per check was a tenth of
    # the checks' cost)
    keys: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.path.split(".")))

    def problem(self, msg: Any) -> Optional[str]:
        value = _lookup(msg, self.keys)
        if value is _ABSENT:
            return f"missing (required, {self.spelled})"
        actual = json_type(value)
        if not _accepts(self.types, actual):
            return f"must be {self.spelled}, got {actual} {str(value)[:40]!r}"
        if self.nonempty and not value:
            return f"must be a non-empty {actual}"
        return None

    @property
    def spelled(self) -> str:
        return " or ".join(self.types) if self.types != ANY else "any value"

    def describe(self) -> str:
        return f"{self.path}: {'non-empty ' if self.nonempty else ''}{self.spelled}"


def need(path: str, *types: str, nonempty: bool = False) -> Need:
    return Need(path, types, nonempty)


@dataclass(frozen=True)
class Required:
    """A codec's required fields. ``kind(msg)`` names the kind of a parsed message (the keys of ``needs``, e.g.
    ``"INSERT"``, ``"DDL"``), or None for a message whose kind the vendor's own reading rejects or that needs
    nothing; ``needs`` lists per kind what it must carry; ``table`` is the format's name of the field that names
    a row event's table (what a dead letter of a data event without table names)."""

    kind: Callable[[Any], Optional[str]]
    needs: Mapping[str, tuple[Need, ...]]
    table: str = "table"
    # The part of the message the paths are relative to (Debezium: the payload inside its envelope); None: the
    # message has no such part, the vendor's reading says what is wrong.
    subject: Callable[[Any], Any] = staticmethod(lambda msg: msg)

    def problem(self, msg: Any) -> Optional[tuple[str, str]]:
        """(field, reason) of the first requirement ``msg`` misses, or None."""
        try:
            msg = self.subject(msg)
            if not isinstance(msg, dict):
                return None  # the vendor's reading names a message that is not an object
            kind = self.kind(msg)
        except (TypeError, ValueError, AttributeError, KeyError):
            return None  # a kind field of the wrong shape: the vendor's reading names it
        for n in self.needs.get(kind, ()) if kind is not None else ():
            reason = n.problem(msg)
            if reason:
                return n.path, f"{reason} in a {kind} message"
        return None

    def satisfied(self, msg: Any) -> bool:
        """Whether ``msg`` has what its kind needs (for a fast path, which declines a message that has not)."""
        return self.problem(msg) is None

    def check(self, vendor: str, msg: Any, position: Optional[Position]) -> None:
        found = self.problem(msg)
        if found:
            raise DecodeError(vendor, found[0], position, found[1])

    def describe(self) -> dict[str, list[str]]:
        return {kind: [n.describe() for n in needs] for kind, needs in self.needs.items()}


def same_needs(kinds: tuple[str, ...], *needs: Need) -> dict[str, tuple[Need, ...]]:
    """``needs`` for each of ``kinds`` (INSERT, UPDATE and DELETE usually share most of theirs)."""
    return {k: tuple(needs) for k in kinds}


# No declaration: nothing is required beyond what the vendor's reading checks.
NOTHING = Required(kind=lambda msg: None, needs={})
