"""Which offsets a Kafka replay reads: a pure function of what the brokers answered at planning time.

Per partition the driver asks once for the beginning and end offsets and for ``offsets_for_times`` at the two
window edges; this module turns those answers into half-open offset ranges ``[start, end)``, which Spark's Kafka
source then reads (``kafka_source``). Because the end is fixed at planning time, re-running a plan reads exactly
the same records even while producers keep appending. Kept free of kafka-python and Spark so that real-Kafka answers
(``None`` for "no record at or after that time", timestamp indexes) are tested without a broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from cdc_jobs.errors import UsageError


class PlanError(UsageError):
    """The brokers' state makes a lossless replay impossible (e.g. records after the checkpoint expired)."""


@dataclass(frozen=True)
class PartitionState:
    """What the brokers answered for one partition. ``since_answer``/``until_answer`` are the offsets of
    ``offsets_for_times`` at the read-from / read-until times, ``None`` when no record is at or after that time
    (or the time was not asked)."""

    topic: str
    partition: int
    beginning: int
    end: int
    since_answer: Optional[int] = None
    until_answer: Optional[int] = None


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # first offset to read
    end: int  # exclusive; offsets in between may be missing (compaction, transaction markers)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def offset_answer(offset: Optional[int], timestamp: Optional[int], query_ms: int) -> Optional[int]:
    """One ``offsets_for_times`` answer -> the first offset at or after ``query_ms``, or ``None`` for "none".

    Real Kafka answers "none" as ``None`` (protocol offset -1). An answer whose timestamp is before the query
    cannot be a match (a match's timestamp is >= the query), so it is "none" too: some Kafka-protocol brokers
    answer offset 0 with timestamp -1 instead, and taking that 0 would re-read the whole partition."""
    if offset is None or offset < 0:
        return None
    if timestamp is not None and timestamp < query_ms:
        return None
    return offset


def checkpoint_offsets(checkpoint: Optional[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """``{"sources": [{"source": topic, "partition": p, "next_offset": o, ...}]}`` -> {(topic, p): o}.
    File sources in the same checkpoint (partition -1) are ignored."""
    if not checkpoint:
        return {}
    sources = checkpoint.get("sources") if isinstance(checkpoint, Mapping) else None
    if not isinstance(sources, list):
        raise UsageError("--checkpoint: expected {\"sources\": [{\"source\", \"partition\", \"next_offset\"}]}")
    out: dict[tuple[str, int], int] = {}
    for i, s in enumerate(sources):
        try:
            partition = int(s["partition"])
            if partition < 0:
                continue
            key = (str(s["source"]), partition)
            offset = int(s["next_offset"])
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"--checkpoint: sources[{i}] needs source, partition and next_offset") from None
        if offset < 0:
            raise UsageError(f"--checkpoint: sources[{i}] next_offset {offset} is negative")
        out[key] = max(offset, out.get(key, 0))
    return out


def plan_ranges(states: Iterable[PartitionState], *, has_since: bool, has_until: bool,
                checkpoint: Optional[Mapping[tuple[str, int], int]] = None) -> list[OffsetRange]:
    """Offset range per partition.

    start: the checkpoint's next offset for that partition; else with a window start the first offset at or
    after (since - lookback), or the end when no record is that new; else the beginning.
    end: with a window end the first offset at or after (until + lookahead), capped at the end offset taken at
    planning time (no record that new yet -> the end offset); else the end offset.
    A partition that is not in the checkpoint (added later, or empty then) starts as if there was none.
    """
    checkpoint = checkpoint or {}
    out: list[OffsetRange] = []
    for s in sorted(states, key=lambda s: (s.topic, s.partition)):
        if s.beginning > s.end:
            raise PlanError(f"Kafka {s.topic} partition {s.partition}: beginning offset {s.beginning} is after "
                            f"the end offset {s.end}")
        next_offset = checkpoint.get((s.topic, s.partition))
        if next_offset is not None:
            if next_offset < s.beginning:
                raise PlanError(
                    f"Kafka {s.topic} partition {s.partition}: the checkpoint continues at offset {next_offset} "
                    f"but the partition now begins at {s.beginning}; offsets {next_offset}..{s.beginning - 1} "
                    f"were deleted (retention), so a lossless continuation is impossible. Replay from an "
                    f"archive of those records, or start a new run with --since")
            if next_offset > s.end:
                raise PlanError(
                    f"Kafka {s.topic} partition {s.partition}: the checkpoint continues at offset {next_offset} "
                    f"but the partition ends at {s.end}: was the topic re-created? The checkpoint does not "
                    f"belong to this topic")
            start = next_offset
        elif has_since:
            start = s.end if s.since_answer is None else s.since_answer
        else:
            start = s.beginning
        start = min(max(start, s.beginning), s.end)
        end = s.end
        if has_until and s.until_answer is not None:
            end = min(s.until_answer, s.end)
        out.append(OffsetRange(s.topic, s.partition, start, max(start, end)))
    return out
