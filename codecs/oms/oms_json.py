"""The OMS JSON family base: what every OceanBase OMS JSON format (Default, its extended-column-type variant,
SharePlex, DataWorks 2.0) shares, so a format module writes only its own message shape.

Every OMS JSON message carries one record (one event); values are written as bare JSON numbers for the types
OMS serialises as Long / BigDecimal / Double, as strings otherwise; key column values are joined with the
``\\u0001`` separator where OMS packs them into one text field."""

from __future__ import annotations

import functools
from typing import Any, Iterable, Optional

from ..base import Codec
from ..event import Column, Event, Image, Position
from ..shared.value_text import scalar_text
from ..types import NUMERIC_FAMILIES, family
from ..shared.memo import remember

SEPARATOR = "\u0001"
# Type families OMS writes as bare JSON numbers (Long / BigDecimal / Double, and booleans).
_BARE_FAMILIES = NUMERIC_FAMILIES | {"bool"}


# typed: a JsonNumber name or type is equal to the same str, but must not be given back for it.
@functools.lru_cache(maxsize=4096, typed=True)
def column(name: str, type_name: Optional[str] = None, jdbc_type: Optional[int] = None, number: bool = False
           ) -> Column:
    """``Column(...)``, built once per distinct column: Columns are frozen, and a table's rows repeat the same
    few, so sharing them saves constructing every column of every row (a few % of a decode)."""
    return Column(name, type_name, jdbc_type, number)


_DECLARATIONS: dict[tuple[int, ...], tuple[Column, ...]] = {}


def shared_columns(columns: Iterable[Column]) -> tuple[Column, ...]:
    """One tuple object per distinct list of (shared, see ``column``) Columns: the DECODED writer converts each
    distinct columns tuple once, by identity, so the rows of a table should hand it the same one (~4% of a
    replay's decode). Keyed by the Columns' ids: the stored tuple keeps them alive, so no other object can
    take one of those ids while the entry exists."""
    columns = tuple(columns)
    key = tuple(map(id, columns))
    hit = _DECLARATIONS.get(key)
    if hit is None:
        hit = remember(_DECLARATIONS, key, columns, limit=65536)
    return hit


class OmsJsonCodec(Codec):
    """Family base: one record per message, read by ``_event`` and written by ``_build``."""

    vendor = "OceanBase OMS"

    def events(self, msg: dict, position: Position) -> list[Event]:
        return [self._event(msg, position)]

    def build(self, events: list[Event]) -> dict:
        return self._build(events[0])

    def _event(self, msg: dict, position: Position) -> Event:
        raise NotImplementedError

    def _build(self, e: Event) -> dict[str, Any]:
        raise NotImplementedError

    def cells(self, values: dict, field: str, position: Position) -> tuple[Image, dict[str, bool]]:
        """A ``{column: value}`` object -> canonical image (exact text) and which values were bare numbers
        (not recorded for nulls)."""
        image: Image = {}
        bare: dict[str, bool] = {}
        for col, cell in values.items():
            try:
                image[col], is_number = scalar_text(cell)
            except TypeError as exc:
                raise self.error(f"{field}.{col}", position,
                                 f"a column value must be a string, number or null, got {exc}") from None
            if cell is not None:
                bare[col] = is_number
        return image, bare

    @staticmethod
    def bare(e: Event, col: str, own: bool) -> bool:
        """Write the value as a bare JSON number? As decoded for our own events; by type family for foreign
        ones (OMS writes Long / BigDecimal / Double values as numbers)."""
        c = e.column(col)
        return False if c is None else OmsJsonCodec.column_bare(c, own)

    @staticmethod
    def column_bare(c: Column, own: bool) -> bool:
        if own or c.number:
            return c.number
        return family(c.type_name, c.jdbc_type) in _BARE_FAMILIES
