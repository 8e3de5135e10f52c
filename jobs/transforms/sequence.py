"""The vendor's ordering tuple (``sequence``) as Spark compares it: ``array<decimal(38,0)>``, element by element,
a shorter prefix first. An event without one (NULL) orders as the empty sequence, before every sequenced event;
merge, verify and the copy estimate must all read a NULL the same way, so they take it from here."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

SEQUENCE_TYPE = "array<decimal(38,0)>"


def sequence_or_empty(column: str = "sequence") -> Column:
    """``column`` with NULL read as the empty sequence."""
    return F.coalesce(F.col(column), F.array().cast(SEQUENCE_TYPE))
