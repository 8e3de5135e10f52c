"""What every codec module provides. A format module defines one ``Codec`` subclass and ``CODEC = ...``."""

from __future__ import annotations

from dataclasses import dataclass
import json
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence

from . import jsontext
from .event import DecodeError, EncodeError, Event, Op, Position
from .shared.required import NOTHING, Required
from .shared.json_fix import apply_fix, derive_fix, fix_paths

if TYPE_CHECKING:
    from .shared.declared_rows import DeclaredRows


# The type families the merged state types (``cdc_jobs.transforms.state_types``); the others are text anyway.
TYPED_FAMILIES = ("binary", "bit", "bool", "date", "datetime", "decimal", "float", "int", "timestamp")


def untyped(*families: str) -> tuple[tuple[str, str], ...]:
    """``Capabilities.losses`` for families whose values travel as exact text without their type."""
    return tuple((f, "untyped") for f in families)


@dataclass(frozen=True)
class Capabilities:
    """What a format can carry, so a lossy re-encode is declared instead of silent."""

    binary: bool = False  # messages are bytes (Avro); text formats are JSON lines
    typed_values: bool = True  # values carry or are accompanied by declared types
    before_image: str = "full"  # of an UPDATE: "full" | "changed" (only changed columns) | "key" | "none"
    after_image: str = "full"  # of an UPDATE: "full" | "changed" (only changed columns; the rest are absent)
    delete_image: str = "full"  # what a delete carries: "full" | "key" | "none"
    ops: frozenset[Op] = frozenset(Op)
    primary_key: bool = True  # names the key columns; when False, replay --primary-key supplies them
    # names a schema between database and table; when False, a schema is written as the database (``flat_database``)
    schema_level: bool = True
    transactions: bool = False
    messages_per_update: int = 1
    # Packs the rows of one source message back into one message (Canal data[]), so a re-encode must see a
    # source message's rows together, in order.
    packs_rows: bool = False
    notes: str = ""
    # Type families this format cannot carry exactly, as (family, loss) pairs (``types.family`` names). Losses:
    #   "untyped"    the value arrives as its exact text but its type does not: the merged column is a string
    #   "wall-clock" an instant travels as wall-clock text in the source server's zone, which the message does
    #                not name: it is read and written as UTC (exact for a UTC server, shifted by its offset else)
    # ``tests/jobs/test_db_exactness.py`` checks every format against real databases: exact, or exactly this.
    losses: tuple[tuple[str, str], ...] = ()

    @property
    def order_scope(self) -> str:
        """What order a re-encode must keep. "key": only the changes of one row (table + primary key) must
        stay in order, so a table is re-encoded in parallel, split by key hash. "table": the format groups
        rows of a message or a transaction, so a table is re-encoded by one task, sorted and streamed."""
        return "table" if self.transactions or self.packs_rows else "key"

    def carries(self, op: Op) -> bool:
        """Whether an event with this op survives a re-encode. A format without a full-sync marker writes
        snapshot rows as inserts (what its own producers do during a full sync)."""
        return op in self.ops or (op is Op.SNAPSHOT and Op.INSERT in self.ops)

    def as_dict(self) -> dict:
        return {
            "binary": self.binary,
            "typed_values": self.typed_values,
            "before_image": self.before_image,
            "after_image": self.after_image,
            "delete_image": self.delete_image,
            "ops": sorted(o.value for o in self.ops),
            "primary_key": self.primary_key,
            "schema_level": self.schema_level,
            "transactions": self.transactions,
            "messages_per_update": self.messages_per_update,
            "packs_rows": self.packs_rows,
            "order_scope": self.order_scope,
            "notes": self.notes,
            "losses": dict(self.losses),
        }


class ContainerDecoder(NamedTuple):
    """``Codec.container_decoder``: read each record of the file with ``schema`` (the codec's own, whose bytes
    the file's writer schema lays out the same way), then ``decode(datum, position, raw)`` (``raw``, the record's
    bytes, when the reader has them: their look can spare checks of the datum); or first, when given,
    ``rows(datum, at)``: the fast path that builds the DECODED rows of a datum in its common shape without an
    ``Event`` (as ``Codec.plain_rows`` does for message bytes), or None to take ``decode``."""

    schema: Any
    decode: Callable[..., list[Event]]
    rows: Optional[Callable[[Any, tuple], Optional[list[tuple]]]] = None
    # The JVM twin of ``rows`` for this layout: a ``cdcreplay.codecs.RecordDecoder`` class in the codec's ``jvm/``
    # folder that reads a record's bytes and gives the rows ``rows`` gives for its datum (or declines it), which the
    # decode step runs where it reads the container in the JVM (``Codec.jvm_container_decoders``).
    jvm_rows: Optional[str] = None


@dataclass(frozen=True)
class EncodedMessage:
    """One output message. ``events`` is how many canonical events it carries (Canal packs several rows in
    one message; a DataWorks update becomes two messages carrying half an event each, counted on the first)."""

    value: bytes
    key: bytes | None
    table: str
    op: str
    events: int = 1


@dataclass(frozen=True)
class PlainColumns:
    """``Codec.plain_columns``: one message per row of a batch of EVENT rows, as Arrow arrays of the batch's
    length. Only the rows where ``taken`` is true carry a message; the others are left to ``plain_messages`` and
    ``encode``, and their values mean nothing."""

    value: Any  # pa.BinaryArray
    key: Any  # pa.BinaryArray (NULL: no key)
    table: Any  # pa.StringArray, the qualified table
    op: Any  # pa.StringArray, the message's record type
    taken: Any  # pa.BooleanArray, never NULL


class Codec:
    name: str = ""
    vendor: str = ""
    description: str = ""
    capabilities: Capabilities = Capabilities()
    # The fields each kind of message must carry (``shared.required.Required``): checked on the parsed message
    # once ``events`` has read it (the vendor's own errors come first) by ``decode``, or by the codec where it
    # overrides ``decode``; a miss is a dead letter naming the field. Shown by `cdc-replay formats`.
    required: Required = NOTHING

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        """One archived message -> zero or more events. Raise ``DecodeError`` for anything malformed.

        The recipe every JSON format shares (binary formats override ``decode``): parse the message, read its
        events (``events``), build the message the encoder would write for them (``derive``), and keep only
        where the received message differs (``fixes``) in ``event.vendor["fix"]``, which ``encode`` re-applies,
        so a re-encode is byte-for-byte. A vendor supplies ``events`` and ``derive``, and ``fix_paths`` /
        ``fix_subject`` where it compares other keys than the top-level ones of the whole message."""
        msg = self.json_object(raw, position)
        events = self.events(msg, position)
        self.required.check(self.name, msg, position)
        if not events:
            return events
        return with_fixes(events, self.fixes(msg, events))

    # Hooks of the decode recipe ----------------------------------------------------------------------------

    def events(self, msg: dict, position: Position) -> list[Event]:
        """The canonical events one parsed message carries (the vendor's reading of its fields)."""
        raise NotImplementedError

    def derive(self, events: list[Event]) -> dict:
        """The message (``fix_subject`` part) the encoder writes for ``events`` before any vendor fix; by
        default ``build`` (a vendor may derive a cheaper equivalent, or only the payload)."""
        return self.build(events)

    def fix_subject(self, msg: dict) -> dict:
        """The part of the message the fixes are relative to (Debezium: the payload inside its envelope)."""
        return msg

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        """Key paths compared between received and derived message; default every top-level key of either."""
        return fix_paths(msg, derived, set())

    def fixes(self, msg: dict, events: list[Event]) -> list[list]:
        """The lossless-re-encode fixes by definition: derive the message and diff it with the received one."""
        subject = self.fix_subject(msg)
        derived = self.derive(events)
        return derive_fix(subject, derived, self.fix_paths(subject, derived, events))

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        """Events in order -> messages. Consecutive events from one source message may be packed back together.

        The recipe every JSON format shares (others override ``encode``): group the events into messages
        (``message_groups``), build each message from the canonical fields (``build``), re-apply the fixes an
        own event kept at decode, and write it as exact JSON text."""
        out = []
        for group in self.message_groups(events):
            first = group[0]
            msg = self.build(group)
            if first.format == self.name and first.vendor.get("fix"):
                apply_fix(msg, first.vendor["fix"])
            out.append(EncodedMessage(jsontext.dumps(self.written(msg, first)), message_key(first),
                                      first.qualified_table,
                                      self.message_op(msg, first), events=len(group)))
        return out

    def written(self, msg: Any, e: Event) -> Any:
        """``msg``, written for ``e``, once it carries what its kind of message must (``required``, what decode
        checks): an event of another format can lack what this one always writes (an UPDATE without before image
        from a Postgres table without REPLICA IDENTITY FULL, a row without database), and a message the decoder
        would refuse is no output, so that is an ``EncodeError`` naming the field (a dead letter of the encode
        step). An own event's message is the one decode checked, fixes re-applied: not checked again."""
        if e.format != self.name:
            found = self.required.problem(msg)
            if found:
                raise EncodeError(self.name, found[0], f"the event has nothing to write there: {found[1]}")
        return msg

    # Hooks of the encode recipe ----------------------------------------------------------------------------

    def message_groups(self, events: Sequence[Event]) -> list[list[Event]]:
        """The events of each output message, each checked by ``check_encodable``: one message per event, or,
        for a format that packs rows (``capabilities.packs_rows``), the rows of one source message packed back
        into one message while they share table and op."""
        for e in events:
            self.check_encodable(e)
        if not self.capabilities.packs_rows:
            return [[e] for e in events]
        groups: list[list[Event]] = []
        for run in group_by_message(events):
            start = len(groups)
            for e in run:
                last = groups[-1][-1] if len(groups) > start else None
                if (last is not None and e.op.is_data and last.op is e.op
                        and last.qualified_table == e.qualified_table):
                    groups[-1].append(e)
                else:
                    groups.append([e])
        return groups

    def plain_messages(self, cols: Mapping[str, list], declared: Sequence[tuple], rows: range
                       ) -> Optional[list[EncodedMessage]]:
        """An optional fast path of ``encode`` for a format that writes one message per event: the messages of
        the events ``rows`` (one source message's events) of a batch of EVENT rows, built without an ``Event``
        each; or ``None`` when any of them is not in the shape the fast path takes, and ``encode`` runs on
        Events for the whole source message. ``cols``: one list per EVENT field (``RecordBatch.to_pydict``
        without ``columns``); ``declared``: each row's declared columns (``records.declared_columns``). It must
        give exactly the messages ``encode`` gives; a format's fast-path test compares them. Default: none."""
        return None

    def plain_columns(self, batch: Any) -> Optional[PlainColumns]:
        """An optional column-wise form of ``plain_messages`` for a format that writes one message per event: the
        messages of a whole ``pa.RecordBatch`` of EVENT rows built with Arrow kernels, no Python object per row
        (``shared.arrow_json``). Each taken row's message must be exactly the one ``plain_messages`` gives for that
        row alone; a format's test compares them. Default: none."""
        return None

    def check_encodable(self, event: Event) -> None:
        """Raise ``EncodeError`` for an event this format cannot carry."""

    def build(self, events: list[Event]) -> dict:
        """The message the canonical fields of ``events`` describe, before the vendor fixes."""
        raise NotImplementedError

    def message_op(self, msg: dict, first: Event) -> str:
        """The operation an output message is counted under (the reports' per-op counts)."""
        return first.op.value

    def container_decoder(self, writer_schema: Any) -> Optional[ContainerDecoder]:
        """For an Avro container archive written with ``writer_schema``: the schema to read its records with and
        a function that decodes one record so read (a datum, unions as ``(full name, value)``, see
        ``shared.avro.NAMED_TYPES``), so each archived record is decoded once instead of being read to a datum,
        written back to bytes and read again by ``decode``. ``None`` (the default, and for a schema that is not
        the codec's own): the reader hands ``decode`` the record's bytes. Must give exactly what ``decode``
        gives for those bytes."""
        return None

    # The roles of the message's keys for the one declared JVM decode of JSON row messages
    # (``shared.declared_rows.DeclaredRows``), which the decode step runs where line messages are in the JVM: it
    # decodes the messages it takes to the rows ``decode`` gives and declines the rest. None: decoded in Python.
    # Read only from the codec's own class (``jvm_declaration_text``), so a subclass that changes the decode never
    # runs its parent's declaration.
    jvm_declaration: Optional["DeclaredRows"] = None
    # Whether ``container_decoder`` names JVM twins (``ContainerDecoder.jvm_rows``) for the layouts it reads: then the
    # decode step may read this codec's Avro container archives as blocks for the JVM. Read from the codec's own
    # class only, as ``jvm_declaration`` is.
    jvm_container_decoders: bool = False
    # A JVM decode of one whole message (a ``PlainDecoder`` class: a Kafka record's value) for a codec without a
    # declaration, e.g. its container twins read to the message's end. Read from the codec's own class only.
    jvm_message_decoder: Optional[str] = None

    def plain_rows(self, raw: bytes, at: tuple) -> Optional[list[tuple]]:
        """An optional fast path of the decode step for the shape most of a format's messages have: the DECODED
        rows (``shared.plain_rows.data_row``) of the message ``raw`` found at ``at``
        (``shared.plain_rows.RecordAt``), built without an ``Event`` per row and already checked against the
        event record (``contract``); or ``None`` when the message is not in that shape, and the decode step runs
        ``decode`` (which names any error). It must give exactly the rows ``decode`` gives; a format's fast-path
        test compares them. Default: no fast path."""
        return None

    def assemble(self, fragments: Sequence[Event]) -> Event:
        """Join the fragments of one multi-message event (all share ``fragment_key``), in any order."""
        raise DecodeError(self.name, "fragment_key", fragments[0].position if fragments else None,
                          "this format does not split events over messages")

    # Helpers shared by the codecs -------------------------------------------------------------------------

    def error(self, field: str, position: Position | None, reason: str) -> DecodeError:
        return DecodeError(self.name, field, position, reason)

    def json_object(self, raw: bytes, position: Position) -> dict:
        """The message as a JSON object with exact number literals (``jsontext``), or a positioned error."""
        try:
            msg, _repaired = jsontext.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.error("$", position, f"not JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise self.error("$", position, "message is not a JSON object")
        return msg


def with_fixes(events: list[Event], fixes: list[list]) -> list[Event]:
    """``events`` carrying ``fixes`` in their vendor data (unchanged when there is nothing to fix)."""
    if not fixes:
        return events
    return [e.with_(vendor={**e.vendor, "fix": fixes}) for e in events]


def ddl_op(text: str | None) -> Op:
    """Formats without a truncate operation send it as a DDL statement; it is a TRUNCATE in the canonical model,
    so merge and verify treat it the same whichever format carried it."""
    return Op.TRUNCATE if text and re.match(r"\s*truncate\b", text, re.I) else Op.DDL


def flat_database(event: Event) -> str | None:
    """The database a format without a schema level writes: the event's schema where it has one (DRS's rule for
    Oracle and PostgreSQL sources; a MySQL database is what they call a schema), else its database. Writing the
    database instead made PostgreSQL's ``public.users`` and ``audit.users`` one table; the source's database name
    (one per sync task) is not carried."""
    return event.schema or event.database


def statement(event: Event) -> str | None:
    """The statement a format that writes one for every DDL and TRUNCATE writes: the event's own, or for a TRUNCATE
    carried without one (Debezium's op "t") the statement it stands for."""
    if event.ddl is None and event.op is Op.TRUNCATE:
        return f"TRUNCATE TABLE {event.qualified_table}"
    return event.ddl


def message_key(event: Event) -> bytes | None:
    """Kafka key for a re-encoded message: the table and its primary-key values, so that every change of one
    row lands in one partition and keeps its order. The *after* image wins, so a key change follows the row."""
    return row_key(event.qualified_table, event.primary_key, event.before, event.after)


def row_key(qualified_table: str, primary_key: Sequence[str], before: Optional[Mapping[str, Optional[str]]],
            after: Optional[Mapping[str, Optional[str]]]) -> bytes | None:
    """``message_key`` from the event's fields (for an encoder working from batch columns, without an Event)."""
    if not primary_key:
        return qualified_table.encode() if qualified_table else None
    image = after if after is not None else (before or {})
    values = [image.get(k) or (before or {}).get(k) or "" for k in primary_key]
    return "\x01".join([qualified_table, *values]).encode()


def group_by_message(events: Iterable[Event]) -> list[list[Event]]:
    """Runs of consecutive events that came from the same source message (same position bar ``index``)."""
    groups: list[list[Event]] = []
    last = None
    for e in events:
        p = e.position
        ident = (e.format, p.source, p.partition, p.offset)
        if groups and ident == last:
            groups[-1].append(e)
        else:
            groups.append([e])
        last = ident
    return groups


def jvm_declaration_text(codec: Codec) -> Optional[str]:
    """What decodes the codec's line messages in the JVM, from its own class: the declaration's text
    (``Codec.jvm_declaration``), or None."""
    if type(codec).__dict__.get("jvm_declaration") is not None:  # the instance's: it may narrow its class's
        return codec.jvm_declaration.text(codec.required.needs)
    return None


def jvm_message_text(codec: Codec) -> Optional[str]:
    """What decodes one of the codec's messages (a Kafka record's value) in the JVM: its declaration's text, or its
    own class's ``jvm_message_decoder``, or None."""
    return jvm_declaration_text(codec) or type(codec).__dict__.get("jvm_message_decoder")


def jvm_declared(codec: Codec) -> bool:
    """Whether the codec's own class declares its keys' roles for the declared JVM decode (``jvm_declaration``)."""
    return type(codec).__dict__.get("jvm_declaration") is not None


def jvm_container_twins(codec: Codec) -> bool:
    """Whether the codec's own class names JVM twins of its container fast paths (``Codec.jvm_container_decoders``)."""
    return bool(type(codec).__dict__.get("jvm_container_decoders"))
