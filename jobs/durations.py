"""Duration text ("1h", "30m", "1d", "1h30m", "PT2H", "0") -> milliseconds, for options such as --lookback."""

from __future__ import annotations

import re
from typing import Optional

from cdc_jobs.errors import UsageError

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_ISO = re.compile(r"P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
                  r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def parse_duration(text: Optional[str], option: str = "--lookback") -> int:
    """Units ms, s, m (minutes), h, d, w, combinable ("1h30m"), or ISO-8601 ("PT1H30M", "P1D"). A bare "0"
    is zero; other bare numbers are refused because "90" could mean seconds or minutes."""
    if text is None:
        return 0
    t = str(text).strip().replace(" ", "")
    if t == "0":
        return 0
    if t[:1] in ("P", "p"):
        m = _ISO.fullmatch(t.upper())
        if m and any(m.groups()) and not t.upper().endswith("T"):
            weeks, days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
            return round(((weeks * 7 + days) * 24 * 3600 + hours * 3600 + minutes * 60 + seconds) * 1000)
        raise UsageError(f"{option}: '{text}' is not an ISO-8601 duration such as PT1H or P1D")
    t = t.lower()
    pos, total = 0, 0.0
    for m in _PART.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if pos == 0 or pos != len(t):
        raise UsageError(f"{option}: '{text}' is not a duration; use a number with a unit: ms, s, m, h, d, w "
                         f"(e.g. 30m, 1h, 1d, 1h30m)")
    return round(total)


parse_duration_ms = parse_duration
