"""Huawei Cloud DRS to Kafka, JSON-C format (MySQL / TaurusDB sources): DRS JSON (``drs_json``) with two
documented differences, so it is that codec with another dialect:

- the deleted row of a DELETE is in ``data`` (JSON puts it in ``old``);
- MySQL ``timestamp`` values are text ``yyyy-mm-dd hh:mm:ss[.f]`` instead of epoch seconds.

The text carries no zone. The canonical form of a MySQL TIMESTAMP is the instant (epoch seconds), so the text
is read in a fixed zone, ``+08:00`` by default: DRS's own example shows a ``datetime`` column and a ``timestamp``
column written at the same moment as ``2021-06-25 17:51:53`` and ``1624614713.201`` (09:51:53.201 UTC), i.e. a
source session at UTC+8. Use ``DrsJsonCCodec("UTC")`` (or any offset / IANA zone) for a job in another zone.
Text that is not a date-time (MySQL's zero date ``0000-00-00 00:00:00``) is kept verbatim.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from zoneinfo import ZoneInfo

from .drs_json import Dialect, DrsJsonCodec, Values
from ..event import Column

FORMAT = "drs-json-c"
DEFAULT_ZONE = "+08:00"

_LOCAL = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\Z")
_EPOCH = re.compile(r"-?\d+(?:\.(\d{1,9}))?\Z")
_UTC_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_zone(zone: str) -> tzinfo:
    m = re.fullmatch(r"([+-])(\d\d):?(\d\d)", zone)
    if m:
        minutes = int(m.group(2)) * 60 + int(m.group(3))
        return timezone(timedelta(minutes=-minutes if m.group(1) == "-" else minutes))
    if zone.upper() in ("UTC", "Z"):
        return timezone.utc
    return ZoneInfo(zone)


class JsonCValues(Values):
    """JSON values plus MySQL TIMESTAMP as local text in ``zone`` (integer arithmetic, fraction kept as written)."""

    def __init__(self, zone: str = DEFAULT_ZONE):
        self.zone_name = zone
        self.zone = parse_zone(zone)

    def to_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "timestamp":
            return self.local_to_epoch(text)
        return super().to_canonical(column, fam, text)

    def from_canonical(self, column: Column, fam: str, text: str) -> str:
        if fam == "timestamp":
            return self.epoch_to_local(text)
        return super().from_canonical(column, fam, text)

    def local_to_epoch(self, text: str) -> str:
        m = _LOCAL.match(text)
        if not m:
            return text  # zero date or other non-instant text: nothing to convert, kept verbatim
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        if 0 in (y, mo, d):
            return text  # MySQL zero date (0000-00-00 ...): no instant to convert, kept verbatim
        try:
            local = datetime(y, mo, d, h, mi, s, tzinfo=self.zone)
        except ValueError as exc:
            raise ValueError(f"not a valid date-time: {exc}") from None
        delta = local - _UTC_EPOCH
        seconds = delta.days * 86400 + delta.seconds
        fraction = m.group(7)
        if fraction is None:
            return str(seconds)
        return format(Decimal(seconds) + Decimal("0." + fraction), "f")

    def epoch_to_local(self, text: str) -> str:
        m = _EPOCH.match(text)
        if not m:
            self.local_to_epoch(text)  # written as it is, it must read back (ValueError: a date-time that is none)
            return text
        value = Decimal(text)
        seconds = int(value.to_integral_value(rounding="ROUND_FLOOR"))
        try:
            local = (_UTC_EPOCH + timedelta(seconds=seconds)).astimezone(self.zone)
        except (OverflowError, ValueError):
            raise ValueError(f"epoch seconds {text} are outside the years 1..9999") from None
        out = local.strftime("%Y-%m-%d %H:%M:%S")
        if m.group(1) is not None:
            digits = len(m.group(1))
            units = int((value - seconds) * (10 ** digits))
            out += "." + str(units).zfill(digits)
        return out


class DrsJsonCCodec(DrsJsonCodec):
    # DRS JSON's declaration: a DELETE's rows documented in data, TIMESTAMP columns local text at DEFAULT_ZONE (a
    # codec made for another zone declines them: see __init__)
    jvm_declaration = replace(DrsJsonCodec.jvm_declaration, delete_main="rows", value_conversions={
        "binary": "java_bytes", "timestamp": f"local_seconds{DEFAULT_ZONE}"})

    def __init__(self, zone: str = DEFAULT_ZONE):
        super().__init__(Dialect(
            name=FORMAT,
            description="Huawei DRS JSON-C: DRS JSON with the deleted row in data and MySQL timestamps as "
                        f"yyyy-mm-dd hh:mm:ss text (read in {zone})",
            delete_in="data",
            values=JsonCValues(zone),
            notes="As drs-json, but DELETE row in data (accepted in old too) and timestamp values are zone-less "
                  f"local text, read and written in {zone}; MySQL/TaurusDB sources only.",
        ))
        if zone != DEFAULT_ZONE:  # the class's declaration reads DEFAULT_ZONE: TIMESTAMP columns to Python
            self.jvm_declaration = replace(type(self).jvm_declaration, value_conversions={"binary": "java_bytes"},
                                           decline_families=("timestamp",))


CODEC = DrsJsonCCodec()
