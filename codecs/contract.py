"""What a decoded event must satisfy before it leaves the codec layer: the value ranges of the event record.

``cdc_codecs.records`` stores an event in fixed-width columns (int64 event time and offsets, int32 partition,
row index and fragment numbers, decimal(38,0) sequence components, int32 JDBC type codes). Vendor messages carry
these values as JSON numbers of any size, so a message can parse and decode and still not fit: a fuzzed
``"es": 1e400``-style integer used to reach pyarrow and kill the whole Spark task. ``check_event`` turns that
into a ``DecodeError`` naming vendor, field and position, so the record becomes one dead letter like any other
malformed message. The same goes for table names that cannot name a directory (control characters, megabyte
strings). It only compares numbers and three short names (no per-value work), so it is cheap enough to run on
every event.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Iterable, Optional

from .event import DATA_OPS, DecodeError, Event
from .shared.memo import remember

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# decimal(38,0): an integer of at most 38 digits.
SEQUENCE_LIMIT = Decimal(10) ** 38


def _int_problem(value: object, bounds: tuple[int, int], nullable: bool) -> Optional[str]:
    if value is None:
        return None if nullable else "missing (must be an integer)"
    if type(value) is not int:  # bool is an int subclass but not a valid value here; JsonNumber text neither
        return f"must be an integer, got {type(value).__name__} {str(value)[:40]!r}"
    lo, hi = bounds
    if value < lo or value > hi:
        return f"{_short(value)} does not fit the event record (range {lo} .. {hi})"
    return None


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"


def _sequence_problem(component: object) -> Optional[str]:
    if not isinstance(component, Decimal):
        return f"must be a Decimal, got {type(component).__name__}"
    try:
        if not component.is_finite() or component != component.to_integral_value():
            return f"{_short(component)} is not an integer"
        if component.copy_abs() >= SEQUENCE_LIMIT:  # abs() would round to the context precision (28 digits)
            return f"{_short(component)} has more than 38 digits (sequence components are decimal(38,0))"
    except InvalidOperation as exc:  # e.g. an exponent so large the integral value cannot be formed
        return f"{_short(component)} is not a usable number ({exc.__class__.__name__})"
    return None


# Table names become directory names (events/table_name=.../) and are matched by --tables globs: control
# characters (a NUL cannot be in a file name) and megabyte names are malformed input, not identifiers. 256
# characters is above every database's identifier limit (MySQL 64, PostgreSQL 63, Oracle 128).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NAME = 256
# merge writes STATE/<database>.<table>/ through Hadoop paths: a '/' would nest the directory elsewhere, a ':'
# reads as a URI scheme and failed the whole merge (found by the structure-aware fuzzer).
_PATH_CHARS = re.compile(r"[/:]")


def _name_problem(value: object) -> Optional[str]:
    if value is None:
        return None
    if type(value) is not str:  # a JSON number read as exact text (JsonNumber) is a str too, but no name
        return f"must be text, got {'the number ' + value if isinstance(value, str) else type(value).__name__}"
    if len(value) > MAX_NAME:
        return f"{len(value)} characters long (more than {MAX_NAME}: not an identifier)"
    if _CONTROL.search(value):
        return f"contains a control character: {value[:60]!r}"
    if _PATH_CHARS.search(value):
        return f"contains '/' or ':', which cannot name the table's state directory: {value[:60]!r}"
    return None


_I32_LO, _I32_HI = INT32
_I64_LO, _I64_HI = INT64
_NEG_LIMIT = -SEQUENCE_LIMIT


def _name_ok(n: object) -> bool:
    return n is None or (type(n) is str and len(n) <= MAX_NAME and n.isprintable() and "/" not in n
                         and ":" not in n)


def name_fits(name: object) -> bool:
    """A database/schema/table name the event record takes (``check_event`` names the problem otherwise)."""
    return _name_ok(name)


# Codecs share one columns tuple between the events of a table: check each distinct tuple once.
_COLUMNS_OK: dict[int, tuple] = {}


def _columns_ok(columns: tuple) -> bool:
    hit = _COLUMNS_OK.get(id(columns))
    if hit is not None and hit is columns:
        return True
    for c in columns:
        j = c.jdbc_type
        if j is not None and not (type(j) is int and _I32_LO <= j <= _I32_HI):
            return False
        if type(c.name) is not str or not (c.type_name is None or type(c.type_name) is str):
            return False
    remember(_COLUMNS_OK, id(columns), columns)  # holds the tuple, so its id stays unique while cached
    return True


def columns_fit(columns: tuple) -> bool:
    """Declared columns the event record takes (JDBC type codes in int32), checked once per distinct tuple."""
    return _columns_ok(columns)


def _fits(event: Event) -> bool:
    """The common case without allocation; ``check_event`` names the field only when this fails."""
    p, t = event.position, event.event_time_ms
    if t is not None and not (type(t) is int and _I64_LO <= t <= _I64_HI):
        return False
    ts = p.timestamp_ms
    if ts is not None and not (type(ts) is int and _I64_LO <= ts <= _I64_HI):
        return False
    if not (type(p.partition) is int and _I32_LO <= p.partition <= _I32_HI
            and type(p.offset) is int and _I64_LO <= p.offset <= _I64_HI
            and type(p.index) is int and _I32_LO <= p.index <= _I32_HI
            and type(event.fragment_index) is int and _I32_LO <= event.fragment_index <= _I32_HI
            and type(event.fragment_total) is int and _I32_LO <= event.fragment_total <= _I32_HI):
        return False
    for c in event.sequence:
        if not (type(c) is Decimal and c.is_finite() and _NEG_LIMIT < c < SEQUENCE_LIMIT
                and c == c.to_integral_value()):
            return False
    return (_name_ok(event.database) and _name_ok(event.schema) and _name_ok(event.table)
            and _columns_ok(event.columns) and all(type(k) is str for k in event.primary_key))


def check_event(vendor: str, event: Event, table_field: str = "table") -> None:
    """Raise ``DecodeError(vendor, field, position, reason)`` when ``event`` does not fit the event record.
    ``table_field``: the format's name of the field that names the table (``Required.table``), for the one rule
    of the record that is not a range: a data event belongs to a table (events/ is partitioned by it and merge
    and verify key rows by it)."""
    if event.op in DATA_OPS and not event.table:
        raise DecodeError(vendor, table_field, event.position,
                          f"a {event.op.value} event needs its table, got {event.table!r}")
    if _fits(event):
        return
    p = event.position
    for field, name in (("database", event.database), ("schema", event.schema), ("table", event.table)):
        problem = _name_problem(name)
        if problem:
            raise DecodeError(vendor, field, p, problem)
    checks = (
        ("event_time_ms", event.event_time_ms, INT64, True),
        ("fragment_index", event.fragment_index, INT32, False),
        ("fragment_total", event.fragment_total, INT32, False),
        ("position.partition", p.partition, INT32, False),
        ("position.offset", p.offset, INT64, False),
        ("position.index", p.index, INT32, False),
        ("position.timestamp_ms", p.timestamp_ms, INT64, True),
    )
    for field, value, bounds, nullable in checks:
        problem = _int_problem(value, bounds, nullable)
        if problem:
            raise DecodeError(vendor, field, p, problem)
    for n, component in enumerate(event.sequence):
        problem = _sequence_problem(component)
        if problem:
            raise DecodeError(vendor, f"sequence[{n}]", p, problem)
    for k in event.primary_key:  # a JSON number read as exact text is a str too (JsonNumber), but names no column
        if type(k) is not str:
            raise DecodeError(vendor, "primary_key", p, f"a key column name must be text, got {str(k)[:40]!r}")
    for c in event.columns:
        # A declared type from a vendor's nested metadata (a Debezium schema parameter) can be any JSON value.
        if type(c.name) is not str:
            raise DecodeError(vendor, "columns", p, f"a column name must be text, got {str(c.name)[:40]!r}")
        if c.type_name is not None and type(c.type_name) is not str:
            raise DecodeError(vendor, f"columns.{c.name}.type_name", p,
                              f"a declared type must be text, got {str(c.type_name)[:40]!r}")
        if c.jdbc_type is not None:
            problem = _int_problem(c.jdbc_type, INT32, True)
            if problem:
                raise DecodeError(vendor, f"columns.{c.name}.jdbc_type", p, problem)


def check_events(vendor: str, events: Iterable[Event], table_field: str = "table") -> None:
    """``check_event`` for each event of one message (the decode loop calls this inside its error handling)."""
    for e in events:
        check_event(vendor, e, table_field)
