"""Copies of one event (re-sent messages, overlapping replays) reduced to the first, before the events are keyed
and shuffled.

The merge applies the first copy of an event and skips every later one (same identity: content + sequence, see
``cdc_jobs.transforms.merge``). Data events equal in every column the merge reads (``keys.EVENT_COLUMNS``) but
their offset and index, within one source and partition, are such copies, and the first of them in order has the
smallest (offset, index). Keeping only that event changes nothing in the result (state, identities, positions
recorded, history), and an archive that holds each event many times keys, shuffles, sorts and windows it once per
source and partition. Spark computes it as a hash aggregate, partly before its own shuffle: copies inside one
input task never leave it. It runs on the events rather than on the keyed work rows because keying (key values,
roles, an UPDATE that changes its key split in two) then runs once per distinct event: 1M events of which 62k
distinct, the aggregate and keying together 3.1-3.3 s -> 2.0-2.2 s.

The aggregate and its shuffle cost as much as they save when nothing repeats: the merge's main job took 1.7x as
long with it on 1M distinct events. So the merge estimates first (``copy_counts``, over a sample of the events
drawn by fingerprint) and reduces only an archive with many copies.

Not reduced: events of a table without key and without sequence, whose identity includes their position
(identical such rows are several rows, ``keys.identity``); events without an offset or index (rare: their order
against the others would need NULL-first handling). Rows of a ``--base`` state never meet this step. Equal images
that list their columns in another order count as different (the ordered apply still tells such copies apart by
identity).
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .keys import EVENT_COLUMNS, is_data_event, key_columns
from ..sequence import sequence_or_empty

# (offset, index) as one decimal that orders like the pair: Spark's hash aggregate keeps fixed-width buffers
# only, and a struct minimum would fall back to sorting every row.
_SHIFT_OFFSET = Decimal(2 ** 63)
_SHIFT_INDEX = Decimal(2 ** 31)
_INDEX_SPAN = Decimal(2 ** 32)
PACKED = "decimal(38,0)"


def _packed() -> SparkColumn:
    offset = F.col("pos_offset").cast(PACKED) + F.lit(_SHIFT_OFFSET).cast(PACKED)
    index = F.col("pos_index").cast(PACKED) + F.lit(_SHIFT_INDEX).cast(PACKED)
    return (offset * F.lit(_INDEX_SPAN).cast(PACKED) + index).cast(PACKED)


def _unpacked(packed: SparkColumn) -> tuple[SparkColumn, SparkColumn]:
    span = F.lit(_INDEX_SPAN).cast(PACKED)
    offset = (F.floor(packed / span) - F.lit(_SHIFT_OFFSET).cast(PACKED)).cast("bigint")
    index = (F.pmod(packed, span) - F.lit(_SHIFT_INDEX).cast(PACKED)).cast("int")
    return offset, index


# Data events the copy estimate looks at, at most about: its error stays a few percent, far inside the margin of
# ``many_copies``' decision, and the pass reads only the light columns of the rest.
COPY_SAMPLE = 200_000


def _fingerprint() -> SparkColumn:
    """What copies of an event share that can be read without the images: table, op, sequence, event time,
    index in the message; and the position, for events without sequence. Different events that only share
    these count as one: that can only make ``first_copies`` run where it finds little to drop, never drop a row
    it should keep."""
    sequence = sequence_or_empty()
    unsequenced = F.when(F.size(sequence) == 0, F.struct("pos_source", "pos_partition", "pos_offset"))
    return F.xxhash64("table_name", "op", sequence, "event_time_ms", "pos_index", unsequenced)


def copy_counts(events: DataFrame, data_events: int) -> tuple[int, int]:
    """(data events in a sample, estimated distinct events among them): their ratio estimates the share of
    distinct events in the whole. The sample keeps the events whose fingerprint is a multiple of
    ``data_events // COPY_SAMPLE``, so the copies of an event are in it or out of it together and the sample
    repeats its events as often as the whole does. A separate pass over the light columns: in the aggregate that
    collects the declared column lists, the distinct count kept Spark from compiling it, which cost twice this
    pass (1M events: 1.0 s more there, 0.45 s here)."""
    if not data_events:
        return 0, 0
    every = max(1, data_events // COPY_SAMPLE)
    fingerprint = F.col("_fingerprint")
    sample = (events.filter(is_data_event()).select(_fingerprint().alias("_fingerprint"))
              .filter(F.pmod(fingerprint, F.lit(every)) == 0))
    r = sample.agg(F.count(F.lit(1)).alias("events"), F.approx_count_distinct(fingerprint).alias("distinct")).first()
    return int(r["events"]), int(r["distinct"])


def first_copies(data: DataFrame) -> DataFrame:
    """The data events as ``keys.prepare_events`` reads them (``EVENT_COLUMNS``), every later copy of an event in
    one source and partition dropped; in no particular order."""
    keyless_unsequenced = (F.size(key_columns()) == 0) & (F.size(sequence_or_empty()) == 0)
    positional = keyless_unsequenced | F.col("pos_offset").isNull() | F.col("pos_index").isNull()
    same = [c for c in EVENT_COLUMNS if c not in ("pos_offset", "pos_index", "before", "after")]
    grouped = data.groupBy(
        *same,
        F.map_entries("before").alias("_before"), F.map_entries("after").alias("_after"),
        # events that must stay apart keep their own position in the grouping key
        F.when(positional, F.struct("pos_offset", "pos_index")).alias("_own"),
    ).agg(F.min(F.when(~positional, _packed())).alias("_first"))
    offset, index = _unpacked(F.col("_first"))
    columns = {
        "pos_offset": F.when(F.col("_own").isNull(), offset).otherwise(F.col("_own.pos_offset")),
        "pos_index": F.when(F.col("_own").isNull(), index).otherwise(F.col("_own.pos_index")),
        "before": F.map_from_entries("_before"),
        "after": F.map_from_entries("_after"),
    }
    return grouped.select(*[columns[c].alias(c) if c in columns else F.col(c) for c in EVENT_COLUMNS])
