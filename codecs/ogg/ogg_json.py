"""Oracle GoldenGate JSON (the JSON formatter of GoldenGate for Big Data, operation-modelled, one message per
operation), as Flink's ogg-json format reads it.

Keys: ``table`` (the fully qualified name: SCHEMA.TABLE, or CATALOG.SCHEMA.TABLE for sources with catalogs),
``op_type`` (I insert, U update, D delete, T truncate), ``op_ts`` (the operation's commit time from the trail, UTC,
"YYYY-MM-DD HH:MM:SS.ffffff"), ``current_ts`` (when the formatter wrote it), ``pos`` (the trail position: sequence
number and RBA, 20 digits, the ordering field), ``primary_keys`` (with includePrimaryKeys) and ``before`` /
``after`` images; optional ``tokens``. An image holds the columns the trail holds: with compressed updates only the
key and the changed columns (an absent column is "not present", never NULL). Initial loads are written as inserts.

No column types: numbers are bare JSON numbers (their literal kept exactly), everything else strings
(``shared.json_cells``). Lossless re-encode: the shared derive/fix recipe keeps what the canonical fields do not
say (``current_ts``, microseconds of ``op_ts``, ``pos`` spelled with other widths, ``tokens``...).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Optional

from ..base import TYPED_FAMILIES, Capabilities, Codec, untyped
from ..event import EncodeError, Event, Op, Position
from ..shared.declared_rows import DeclaredRows
from ..shared.required import OBJECT, STRING, Required, need
from ..shared.json_cells import declared, read_image, render_image, rendering
from ..shared.json_fix import fix_paths
from ..shared.value_text import is_text

FORMAT = "ogg-json"
OP_TYPES = {"I": Op.INSERT, "U": Op.UPDATE, "D": Op.DELETE, "T": Op.TRUNCATE}
OP_TYPE_OF = {op: code for code, op in OP_TYPES.items()} | {Op.SNAPSHOT: "I"}
_OP_TS = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\Z")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
POS_DIGITS = 20  # GoldenGate writes the trail sequence number and the RBA as 10 digits each


def _op_type(msg: dict) -> Optional[str]:
    code = msg.get("op_type")
    return code if code in OP_TYPES else None


# Every record names its table as SCHEMA.TABLE and carries the image its op_type implies.
_TABLE = need("table", STRING, nonempty=True)
REQUIRED = Required(_op_type, {"I": (_TABLE, need("after", OBJECT)), "U": (_TABLE, need("after", OBJECT)),
                               "D": (_TABLE, need("before", OBJECT)), "T": (_TABLE,)})


class OggJsonCodec(Codec):
    name = FORMAT
    required = REQUIRED
    vendor = "Oracle GoldenGate"
    description = "GoldenGate JSON: table SCHEMA.TABLE, op_type I/U/D/T, op_ts, current_ts, pos, before/after"
    capabilities = Capabilities(
        losses=untyped(*TYPED_FAMILIES),  # no column types: every value is exact text
        typed_values=False,
        before_image="full",
        delete_image="full",
        ops=frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.TRUNCATE}),
        notes="No column types (numbers bare, the rest strings); images hold what the trail holds (compressed "
              "updates: key and changed columns, the rest not present); no snapshot marker (SNAPSHOT is written "
              "as I), no DDL, heartbeat or transaction records; ordering is pos: a foreign sequence of one "
              "component, or two (trail sequence number, RBA) under 10^10, is written as pos, others are not "
              "carried; op_ts carries milliseconds (finer digits stay with own messages).",
    )

    # The JVM's declared decode of the plain row records (shared.declared_rows); what it declines (truncates, a
    # CATALOG.SCHEMA.TABLE name, cells written as booleans or JSON...) ``events`` decodes.
    jvm_declaration = DeclaredRows(
        op=("op_type", {code: op.value for code, op in OP_TYPES.items() if op.is_data}),
        images=(("before", "before"), ("after", "after")),
        reads={"table": ("table", "text"), "stamp": ("op_ts", "text"), "sequence": ("pos", "digits"),
               "primary_key": ("primary_keys", "list")},
        writes={"table": "qualified_table", "op_type": "op", "op_ts": "stamp_micros", "current_ts": "stamp_micros",
                "pos": "sequence_digits20", "primary_keys": "key_list"},
        qualified_table="one_dot", compare_unwritten_images=True)

    # ---------------------------------------------------------------------------------------------- decode

    def fix_paths(self, msg: dict, derived: dict, events: list[Event]) -> list[tuple[str, ...]]:
        # the images are the event itself (their cells' renderings are kept per cell); an image the encoder does not
        # write may still be in the message as null
        return fix_paths(msg, derived, {k for k in ("before", "after") if derived.get(k) is not None})

    def events(self, msg: dict, position: Position) -> list[Event]:
        code = msg.get("op_type")
        op = OP_TYPES.get(code) if is_text(code) else None
        if op is None:
            raise self.error("op_type", position, f"expected one of {sorted(OP_TYPES)}, got {code!r}")
        table = msg.get("table")
        if not is_text(table) or not table:
            raise self.error("table", position, f"expected the qualified table name, got {table!r}")
        parts = table.split(".")
        # SCHEMA.TABLE is read as database.table (how the other formats name an Oracle schema's table); a third
        # level (CATALOG.SCHEMA.TABLE) is the schema
        names: dict[str, Optional[str]] = {"database": ".".join(parts[:-1][:1]) or None, "table": parts[-1]}
        if len(parts) > 2:
            names["schema"] = ".".join(parts[1:-1])
        op_ts = msg.get("op_ts")
        event_ms = None
        if op_ts is not None:
            event_ms = _epoch_ms(op_ts) if is_text(op_ts) else None
            if event_ms is None:
                raise self.error("op_ts", position, f"expected 'YYYY-MM-DD HH:MM:SS.ffffff', got {op_ts!r}")
        pos = msg.get("pos")
        if pos is not None and not (is_text(pos) and pos.isascii() and pos.isdigit()):
            raise self.error("pos", position, f"expected the trail position as a string of digits, got {pos!r}")
        keys = msg.get("primary_keys")
        if keys is not None and not (isinstance(keys, list) and all(is_text(k) for k in keys)):
            raise self.error("primary_keys", position, "expected a list of column names")
        common: dict[str, Any] = dict(format=FORMAT, op=op, position=position, primary_key=tuple(keys or ()),
                                      event_time_ms=event_ms, sequence=(Decimal(pos),) if pos else (), **names)
        if op is Op.TRUNCATE:
            return [Event(**common)]
        numbers: dict[str, bool] = {}
        before, before_kinds = read_image(self, msg.get("before"), "before", position, numbers)
        after, after_kinds = read_image(self, msg.get("after"), "after", position, numbers)
        if op is not Op.DELETE and after is None:
            raise self.error("after", position, f"op_type {code} needs an after image")
        if op is Op.DELETE and before is None:
            raise self.error("before", position, "op_type D needs a before image")
        if op is Op.DELETE and after is not None:
            raise self.error("after", position, "a delete carries no after image")
        if op is Op.INSERT and before is not None:
            raise self.error("before", position, "an insert carries no before image")
        columns, render = declared(numbers, {"before": before_kinds, "after": after_kinds})
        return [Event(before=before, after=after, columns=columns,
                      vendor={"render": render} if render else {}, **common)]

    # ---------------------------------------------------------------------------------------------- encode

    def check_encodable(self, event: Event) -> None:
        if not self.capabilities.carries(event.op):
            raise EncodeError(FORMAT, "op_type", f"GoldenGate JSON cannot carry a {event.op.value} event")

    def message_op(self, msg: dict, first: Event) -> str:
        return msg["op_type"] if is_text(msg.get("op_type")) else first.op.value

    def build(self, events: list[Event]) -> dict:
        return self._message(events[0], images=True)

    def derive(self, events: list[Event]) -> dict:
        # The images are the event itself: ``fix_paths`` never compares an image the encoder writes, so decode
        # derives the message with empty placeholders there instead of rendering every cell (same keys, same order;
        # tests check both derivations give the same fixes).
        return self._message(events[0], images=False)

    def _message(self, e: Event, images: bool) -> dict:
        own = e.format == FORMAT
        stamp = _op_ts(e.event_time_ms) if e.event_time_ms is not None else None
        msg: dict[str, Any] = {"table": e.qualified_table, "op_type": OP_TYPE_OF[e.op]}
        if stamp is not None:  # current_ts is when the formatter ran: a re-encode writes the operation's time
            msg.update(op_ts=stamp, current_ts=stamp)
        pos = _pos(e.sequence)
        if pos is not None:
            msg["pos"] = pos
        if e.primary_key:
            msg["primary_keys"] = list(e.primary_key)
        if e.op is Op.TRUNCATE:
            return msg
        flags, render = rendering(e, own) if images else ({}, {})
        for part, image in (("before", e.before if e.op in (Op.UPDATE, Op.DELETE) else None),
                            ("after", (e.after or {}) if e.op is not Op.DELETE else None)):
            if image is not None:
                msg[part] = render_image(FORMAT, image, flags, render.get(part, {}), part) if images else {}
        return msg


def _epoch_ms(text: str) -> Optional[int]:
    m = _OP_TS.match(text)
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        stamp = datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc)
    except ValueError:
        return None
    millis = int((m.group(7) or "0").ljust(3, "0")[:3])
    return (stamp - _EPOCH) // timedelta(seconds=1) * 1000 + millis


def _op_ts(ms: int) -> str:
    try:
        stamp = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise EncodeError(FORMAT, "op_ts", f"event time {ms} ms is outside years 1-9999") from None
    return f"{stamp.year:04d}-{stamp:%m-%d %H:%M:%S}.{stamp.microsecond:06d}"


def _pos(sequence: tuple[Decimal, ...]) -> Optional[str]:
    """GoldenGate's trail position for a sequence: one component as is, or (trail sequence number, RBA) as the 10
    + 10 digits GoldenGate writes; None (not carried) for anything else."""
    if not sequence or not all(s == s.to_integral_value() and s >= 0 for s in sequence):
        return None
    if len(sequence) == 1:
        return str(int(sequence[0])).zfill(POS_DIGITS)
    if len(sequence) == 2 and all(s < 10 ** 10 for s in sequence):
        return f"{int(sequence[0]):010d}{int(sequence[1]):010d}"
    return None


CODEC = OggJsonCodec()
