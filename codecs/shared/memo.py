"""Bounded per-process caches for what a codec works out once per distinct declaration (a table's messages repeat
theirs): cleared when full rather than evicted one by one, since an archive holds few declarations at a time."""

from __future__ import annotations

from typing import Any

LIMIT = 4096  # distinct declarations kept; more arrive only when schemas churn, and then a refill is cheap


def remember(cache: dict, key: Any, value: Any, limit: int = LIMIT) -> Any:
    """``cache[key] = value`` (returned), emptying ``cache`` first when it holds ``limit`` entries."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value
