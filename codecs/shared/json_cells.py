"""Row images of JSON formats that write each column value as a bare JSON scalar of the producer's choosing and
may declare no column types (Maxwell, Oracle GoldenGate's JSON formatter; CloudCanal's rows, whose types travel
beside them): numbers bare, text as strings, booleans, nested JSON as objects or arrays.

Canonical text keeps what was written exactly (``value_text.cell_text``): a number's literal, a string, "true" /
"false", the JSON text of an object or array. How each cell was written is kept so a re-encode writes it the same
way: per column, ``Column.number`` when its values were bare numbers; per cell, the kinds that differ from their
column's (``deviations``). A foreign event is written the way these producers write MySQL/Oracle values: the int,
decimal and float families as bare numbers, everything else as strings (``bare_family``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Optional

from ..event import Column, EncodeError, Event, Image, Position
from ..jsontext import JsonNumber
from ..types import family
from .columns import column
from .json_fix import unliteral
from .value_text import cell_text, is_json_number


def read_image(codec: Any, row: Any, field: str, position: Position, numbers: dict[str, bool]
               ) -> tuple[Optional[Image], dict[str, str]]:
    """A row object (or null) -> its canonical image and how each non-null cell was written ("num", "str", "bool",
    "json"); ``numbers`` collects per column whether any value was a bare number. ``codec.error`` names the field."""
    if row is None:
        return None, {}
    if not isinstance(row, dict):
        raise codec.error(field, position, "expected an object of column values")
    image: Image = {}
    kinds: dict[str, str] = {}
    for col, value in row.items():
        text, kind = cell_text(value)
        if kind == "?":
            raise codec.error(f"{field}.{col}", position, f"unsupported value {value!r}")
        image[col] = text
        if text is not None:
            kinds[col] = kind
            numbers[col] = numbers.get(col, False) or kind == "num"
    return image, kinds


def declared(numbers: Mapping[str, bool], kinds: Mapping[str, Mapping[str, str]]
             ) -> tuple[tuple[Column, ...], dict[str, dict[str, str]]]:
    """What an untyped message declares: every column seen, flagged when its values were bare numbers, and per image
    part (``kinds``: part -> ``read_image`` kinds) the cells written otherwise than their column (``vendor["render"]``)."""
    columns = _columns(tuple(numbers.items()))
    render = {part: dev for part, cells in kinds.items() if (dev := deviations(cells, numbers))}
    return columns, render


@lru_cache(maxsize=4096)
def _columns(flags: tuple[tuple[str, bool], ...]) -> tuple[Column, ...]:
    """One tuple of (frozen) Columns per distinct column list: a table's messages mostly repeat theirs, and events
    sharing it let the checks downstream that remember the last columns they saw skip the rest of a table's."""
    return tuple(column(name, None, None, flag) for name, flag in flags)


def rendering(event: Event, own: bool) -> tuple[dict[str, bool], Mapping[str, Mapping[str, str]]]:
    """How to write an event's cells: per column whether it is a bare number (as decoded for an own event, by type
    family for a foreign one, also for image columns it does not declare), and an own event's deviating cells."""
    columns = {c.name: c for c in event.columns}
    for image in (event.after, event.before):
        for name in image or {}:
            columns.setdefault(name, Column(name))
    flags = {name: (c.number if own else bare_family(c)) for name, c in columns.items()}
    return flags, (event.vendor.get("render", {}) if own else {})


def deviations(kinds: Mapping[str, str], flags: Mapping[str, bool]) -> dict[str, str]:
    """Cells not written the way their column's number flag says (kept so a re-encode reproduces them)."""
    return {col: kind for col, kind in kinds.items() if kind != ("num" if flags.get(col) else "str")}


def bare_family(column: Column) -> bool:
    """Foreign events: integer, decimal and floating columns are written as JSON numbers, the rest as strings."""
    return column.number or family(column.type_name, column.jdbc_type) in ("int", "decimal", "float")


def render_image(vendor: str, image: Image, flags: Mapping[str, bool], kinds: Mapping[str, str], part: str
                 ) -> dict[str, Any]:
    """Canonical image -> the row object: each cell as its kind says, else bare when its column is and it can be."""
    out: dict[str, Any] = {}
    for col, text in image.items():
        if text is None:
            out[col] = None
            continue
        kind = kinds.get(col) or ("num" if flags.get(col) and is_json_number(text) else "str")
        if kind == "bool":
            if text not in ("true", "false"):
                raise EncodeError(vendor, f"{part}.{col}", f"{text!r} is not a boolean")
            out[col] = text == "true"
        elif kind == "json":
            out[col] = unliteral(text)
        elif kind == "num":
            out[col] = JsonNumber(text)
        else:
            out[col] = text
    return out
