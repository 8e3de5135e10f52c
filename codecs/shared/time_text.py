"""Canonical date/time text shared by the codecs: dates, times of day (or MySQL durations), datetimes with up
to nine fraction digits, epoch seconds, and zoned text with an offset or a zone id."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# --- dates and times -------------------------------------------------------------------------------------------

_FRACTION = r"(?:\.(\d{1,9}))?"
DATE_RE = re.compile(r"(-?\d{1,4})-(\d{1,2})-(\d{1,2})\Z")
TIME_RE = re.compile(r"(-)?(\d{1,3}):(\d{1,2}):(\d{1,2})" + _FRACTION + r"\Z")
DATETIME_RE = re.compile(r"(-?\d{1,4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{1,2}):(\d{1,2})" + _FRACTION + r"\Z")
EPOCH_RE = re.compile(r"(-)?(\d+)" + _FRACTION + r"\Z")
_OFFSET_RE = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})\Z")
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=timezone.utc)


def fraction(nanos: int) -> str:
    """".123" for 123000000 ns; "" for 0. Trailing zeros carry no information in a nanosecond count."""
    if not 0 <= nanos < 10 ** 9:
        raise ValueError(f"fraction of a second out of range: {nanos} ns")
    return "" if nanos == 0 else "." + f"{nanos:09d}".rstrip("0")


def fraction_nanos(digits: Optional[str]) -> int:
    return int((digits or "").ljust(9, "0") or "0")


def date_text(year: int, month: int, day: int) -> str:
    sign = "-" if year < 0 else ""
    return f"{sign}{abs(year):04d}-{month:02d}-{day:02d}"


def time_text(hours: int, minutes: int, seconds: int, nanos: int, negative: bool = False) -> str:
    sign = "-" if negative else ""
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction(nanos)}"


def parse_date(text: str) -> tuple[int, int, int]:
    m = DATE_RE.match(text)
    if not m:
        raise ValueError(f"not a date (YYYY-MM-DD): {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def parse_time(text: str) -> tuple[bool, int, int, int, int]:
    m = TIME_RE.match(text)
    if not m:
        raise ValueError(f"not a time (HH:MM:SS[.f]): {text!r}")
    return bool(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), fraction_nanos(m.group(5))


def parse_datetime(text: str) -> tuple[int, int, int, int, int, int, int]:
    m = DATETIME_RE.match(text)
    if not m:
        raise ValueError(f"not a datetime (YYYY-MM-DD HH:MM:SS[.f]): {text!r}")
    return (*(int(g) for g in m.groups()[:6]), fraction_nanos(m.group(7)))  # type: ignore[return-value]


def epoch_text(seconds: int, nanos: int) -> str:
    """Epoch seconds + nanoseconds (nanos >= 0, as Avro producers store negative instants) -> "-0.5"."""
    total = seconds * 10 ** 9 + nanos
    whole, frac = divmod(abs(total), 10 ** 9)
    return ("-" if total < 0 else "") + str(whole) + fraction(frac)


def parse_epoch(text: str) -> tuple[int, int]:
    """"1606233662.012345" -> (1606233662, 12345000); "-0.5" -> (-1, 500000000)."""
    m = EPOCH_RE.match(text)
    if not m:
        raise ValueError(f"not epoch seconds: {text!r}")
    total = int(m.group(2)) * 10 ** 9 + fraction_nanos(m.group(3))
    return divmod(-total if m.group(1) else total, 10 ** 9)


@lru_cache(maxsize=256)
def zone(name: str) -> tzinfo:
    """A zone id (Asia/Shanghai), an offset (+08:00, GMT+8:00) or Z/UTC/GMT."""
    if name in ("Z", "UTC", "GMT"):
        return timezone.utc
    m = _OFFSET_RE.match(name)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return timezone(-delta if m.group(1) == "-" else delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def split_zoned(text: str) -> tuple[str, str]:
    """"2020-11-25 08:01:02.5 Asia/Shanghai" -> ("2020-11-25 08:01:02.5", "Asia/Shanghai")."""
    local, sep, zone_name = text.rpartition(" ")
    if not sep or not DATETIME_RE.match(local):
        raise ValueError(f"not a zoned timestamp (YYYY-MM-DD HH:MM:SS[.f] ZONE): {text!r}")
    return local, zone_name


def zoned_from_epoch(seconds: int, nanos: int, zone_name: str) -> str:
    local = (_EPOCH_UTC + timedelta(seconds=seconds)).astimezone(zone(zone_name))
    return (f"{date_text(local.year, local.month, local.day)} "
            f"{time_text(local.hour, local.minute, local.second, nanos)} {zone_name}")


def epoch_from_zoned(text: str) -> tuple[int, int, str]:
    """The instant of a zoned text (fold=0 in a DST overlap; the decoder keeps the raw value when that is
    not the instant it read)."""
    local, zone_name = split_zoned(text)
    y, mo, d, h, mi, s, nanos = parse_datetime(local)
    delta = datetime(y, mo, d, h, mi, s, tzinfo=zone(zone_name)) - _EPOCH_UTC
    return delta.days * 86400 + delta.seconds, nanos, zone_name
