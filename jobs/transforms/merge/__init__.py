"""The merge's pure parts: DDL parsing, schema evolution, the Spark transforms that key and order events, and the
per-key apply function that runs inside ``mapInArrow`` over key-sorted partitions.

Semantics (the contract users rely on; ``cdc_jobs.commands.merge`` has the I/O):

Order. Within a table and key, events are applied by the *order key*
``(rank, sequence, pos_source, pos_partition, pos_offset, pos_index)``: ``sequence`` is the vendor's typed
ordering tuple compared as numbers component by component (Spark array order == Python tuple order: element by
element, a shorter prefix first), the archive position breaks ties. ``rank`` is 0 only for a SNAPSHOT row whose
position in the change stream is unknown (no vendor sequence): such a row is the baseline and every change of
its key wins over it, whatever the timestamps say. Snapshot rows that do carry a sequence are ordered by it.

Duplicates. An event's identity is a hash of its content and sequence (op, table, before, after, sequence,
event time), not its position: every later copy of an identity within a key is skipped, so re-sent messages
(at-least-once delivery, overlapping replays) never change the result. Across days the state remembers, per
key, the order key and identity of the last event applied (``--base``): events ordered at or before it are
already part of the base, and a late copy of the last event itself is recognised by its identity. Exception:
a row of a table *without* primary key that also has no sequence (a full-sync row) includes its archive
position in its identity, because two identical such rows are two rows; a copy re-read from the same file line
is still recognised, one re-sent at another position is not. Caveat: when a vendor's sequence is not unique
per event (e.g. only a millisecond time), identical events with the same sequence are one event (an A-B-A
sequence inside one millisecond would lose the second A).

Images. A column absent from an update's after image keeps its value; a column present as NULL becomes NULL.

Unknown keys. INSERT / SNAPSHOT of an existing key replace the row (the source must have held the new image).
UPDATE of a key with no row upserts ``before`` overlaid with ``after`` (the best the source tells; columns in
neither are NULL). DELETE of an absent key is a no-op. Deleted keys are kept as tombstones in ``_canonical/``
so a late duplicate of an older insert cannot resurrect them in a later ``--base`` run.

Key changes. An UPDATE whose key differs before/after becomes a delete of the old key and a write of the new
key with ``before`` overlaid by ``after`` (codecs with a full before or full after image give the whole row; a
format with partial images on both sides, e.g. SharePlex, leaves the columns in neither image NULL).

Tables without a primary key. When the codec names a row-id column (event field ``row_id_column``, a hidden
column the source keeps per row) and the image has it, that column is the key.
Otherwise a row's identity is the SHA-256 of its non-NULL (column, value) pairs: INSERT adds one row with that
identity (duplicate rows are kept as separate rows), DELETE removes one matching row (none: no-op), UPDATE is a
delete of ``after``-overlaid-by-``before`` plus an insert of ``before``-overlaid-by-``after``. Such updates
need a before image; DROP/RENAME COLUMN changes the identity of rows inserted before it (documented limit).

DDL. ADD / DROP / RENAME / CHANGE / MODIFY COLUMN (MySQL and PostgreSQL spellings) and TRUNCATE / DROP TABLE
are applied to every row of the table at their position: ADD gives existing rows NULL (or the DDL's literal
DEFAULT), DROP removes the value, RENAME moves it, MODIFY only changes the declared type, TRUNCATE deletes all
rows. Other statements are kept in the DDL history as ``ignored``.

Removed columns and whole-row images (documents). Columns an event lists in ``removed_columns`` are removed from
the row (absent afterwards, not NULL), and an UPDATE with ``replaces_row`` replaces the row with its after image
(columns it lacks are gone); codecs of document stores set them (a field's unset, a document replace). Dotted
field paths stay one column (as the codecs keep them).

History (``--history``). Every applied change that alters a row emits a version (image + the event's order key
and time); deletes and TRUNCATE emit a marker that closes it. ``history_versions`` turns them into SCD type 2
rows (valid from / valid to in sequence and event-time terms, current flag); DDL does not create versions, and
a renamed column's older versions are read under the new name (``cdc_jobs.commands.merge.rename_lineage``).

Modules: ``order`` (order key), ``ddl_parse`` (DDL text -> actions), ``schema_evolution`` (columns through the
run), ``keys`` (events -> keyed work rows, identities), ``latest`` (the set-based latest image per key),
``copies`` (later copies of an event dropped before the shuffle),
``apply`` (the per-key ordered apply for the keys that need it), ``canonical`` (the ``_canonical/`` row),
``history`` (SCD type 2).
"""

from __future__ import annotations

from .apply import apply_events, make_applier
from .canonical import CANONICAL_ARROW, CANONICAL_SPARK
from .copies import copy_counts, first_copies
from .ddl_parse import DdlAction, parse_ddl
from .history import history_versions
from .keys import (DATA_OPS, IMAGE_TYPE, ROW_HASH, SORT_COLUMNS, WORK_COLUMNS, event_hash, is_data_event, prepare_base,
                   prepare_events)
from .order import ORDER_FIELDS, OrderKey, order_key, rank_column
from .schema_evolution import (SCHEMA_OPS, ColumnDecl, DdlEvent, column_lists, declarations, evolve_columns,
                               schema_events)

__all__ = ["apply_events", "copy_counts", "first_copies", "is_data_event", "make_applier", "CANONICAL_ARROW",
           "CANONICAL_SPARK", "DdlAction", "parse_ddl",
           "history_versions", "DATA_OPS", "IMAGE_TYPE", "ROW_HASH", "SORT_COLUMNS", "WORK_COLUMNS", "event_hash",
           "prepare_base", "prepare_events", "ORDER_FIELDS", "OrderKey", "order_key", "rank_column", "SCHEMA_OPS",
           "ColumnDecl", "DdlEvent", "column_lists", "declarations", "evolve_columns", "schema_events"]
