"""Shared declared columns: one ``Column`` object per distinct column and one tuple per distinct column list.

A table's messages repeat the same few columns, so a codec that builds its ``Column``s here saves constructing
every column of every row, and events of one table hand the decode step the same tuple: the DECODED writer
converts each distinct tuple once, by identity (``cdc_jobs.transforms.decode``), and checks that remember the
last columns they saw skip a table's repeats."""

from __future__ import annotations

import functools
from typing import Iterable, Optional

from ..event import Column
from .memo import remember


# typed: a JsonNumber name or type is equal to the same str, but must not be given back for it.
@functools.lru_cache(maxsize=4096, typed=True)
def column(name: str, type_name: Optional[str] = None, jdbc_type: Optional[int] = None, number: bool = False
           ) -> Column:
    """``Column(...)``, built once per distinct column (Columns are frozen, so sharing them is safe)."""
    return Column(name, type_name, jdbc_type, number)


_TUPLES: dict[tuple[int, ...], tuple[Column, ...]] = {}


def shared_columns(columns: Iterable[Column]) -> tuple[Column, ...]:
    """One tuple object per distinct list of (shared, see ``column``) Columns. Keyed by the Columns' ids: the
    stored tuple keeps them alive, so no other object can take one of those ids while the entry exists."""
    columns = tuple(columns)
    key = tuple(map(id, columns))
    hit = _TUPLES.get(key)
    if hit is None:
        hit = remember(_TUPLES, key, columns, limit=65536)
    return hit
