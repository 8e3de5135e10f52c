"""The OMS JSON family base: what every OceanBase OMS JSON format (Default, its extended-column-type variant,
SharePlex, DataWorks 2.0) shares, so a format module writes only its own message shape.

Every OMS JSON message carries one record (one event); values are written as bare JSON numbers for the types
OMS serialises as Long / BigDecimal / Double, as strings otherwise; key column values are joined with the
``\\u0001`` separator where OMS packs them into one text field."""

from __future__ import annotations

from typing import Any, Optional

from ..base import Codec
from ..event import Column, Event, Image, Position
from ..shared.value_text import scalar_text
from ..types import NUMERIC_FAMILIES, family

SEPARATOR = "\u0001"
# Type families OMS writes as bare JSON numbers (Long / BigDecimal / Double, and booleans).
_BARE_FAMILIES = NUMERIC_FAMILIES | {"bool"}


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
