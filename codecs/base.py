"""What every codec module provides. A format module defines one ``Codec`` subclass and ``CODEC = ...``."""

from __future__ import annotations

from dataclasses import dataclass
import json
import re
from typing import Iterable, Sequence

from . import jsontext
from .event import DecodeError, Event, Op, Position


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
    transactions: bool = False
    messages_per_update: int = 1
    notes: str = ""

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
            "transactions": self.transactions,
            "messages_per_update": self.messages_per_update,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class EncodedMessage:
    """One output message. ``events`` is how many canonical events it carries (Canal packs several rows in
    one message; a DataWorks update becomes two messages carrying half an event each, counted on the first)."""

    value: bytes
    key: bytes | None
    table: str
    op: str
    events: int = 1


class Codec:
    name: str = ""
    vendor: str = ""
    description: str = ""
    capabilities: Capabilities = Capabilities()

    def decode(self, raw: bytes, position: Position) -> list[Event]:
        """One archived message -> zero or more events. Raise ``DecodeError`` for anything malformed."""
        raise NotImplementedError

    def encode(self, events: Sequence[Event]) -> list[EncodedMessage]:
        """Events in order -> messages. Consecutive events from one source message may be packed back together."""
        raise NotImplementedError

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


def ddl_op(text: str | None) -> Op:
    """Formats without a truncate operation send it as a DDL statement; it is a TRUNCATE in the canonical model,
    so merge and verify treat it the same whichever format carried it."""
    return Op.TRUNCATE if text and re.match(r"\s*truncate\b", text, re.I) else Op.DDL


def message_key(event: Event) -> bytes | None:
    """Kafka key for a re-encoded message: the table and its primary-key values, so that every change of one
    row lands in one partition and keeps its order. The *after* image wins, so a key change follows the row."""
    if not event.primary_key:
        return event.qualified_table.encode() if event.qualified_table else None
    image = event.after if event.after is not None else (event.before or {})
    values = [image.get(k) or (event.before or {}).get(k) or "" for k in event.primary_key]
    return "\x01".join([event.qualified_table, *values]).encode()


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
