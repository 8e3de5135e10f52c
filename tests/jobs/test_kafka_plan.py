"""Kafka replay planning as a pure function of the brokers' answers, including answers only real Kafka gives
(``None`` from ``offsets_for_times``, a timestamp index that finds a later offset, retention-moved beginnings).
No broker needed."""

from __future__ import annotations

import pytest

from cdc_jobs.errors import UsageError
from cdc_jobs.io.kafka_plan import (OffsetRange, PartitionState, PlanError, checkpoint_offsets, offset_answer,
                                 plan_ranges)


def st(p, beginning, end, since=None, until=None, topic="t"):
    return PartitionState(topic, p, beginning, end, since, until)


def test_offset_answer_none_and_inconsistent_answers_mean_no_record_at_or_after_the_time():
    assert offset_answer(None, None, 1000) is None  # real Kafka: nothing that new
    assert offset_answer(-1, -1, 1000) is None  # protocol -1
    assert offset_answer(0, -1, 1000) is None  # a Kafka-protocol broker's offset 0, timestamp -1 for "nothing"
    assert offset_answer(0, 999, 1000) is None  # a "match" older than the query cannot be one
    assert offset_answer(0, 1000, 1000) == 0  # a real match at offset 0 stays 0
    assert offset_answer(42, 5000, 1000) == 42


def test_window_start_and_end_come_from_the_time_index_and_are_capped_at_planning_end():
    ranges = plan_ranges([
        st(0, 0, 100, since=10, until=60),  # both edges found
        st(1, 0, 100, since=10, until=None),  # nothing at/after until yet: read to the end taken now
        st(2, 0, 100, since=None, until=None),  # nothing at/after since: nothing to read (not offset 0!)
        st(3, 50, 100, since=20, until=70),  # answer below the beginning (retention moved on): clamp
        st(4, 0, 100, since=90, until=120),  # answer past the planning end: capped
    ], has_since=True, has_until=True)
    assert [(r.partition, r.start, r.end) for r in ranges] == [
        (0, 10, 60), (1, 10, 100), (2, 100, 100), (3, 50, 70), (4, 90, 100)]


def test_until_before_since_answer_gives_an_empty_range_not_a_negative_one():
    [r] = plan_ranges([st(0, 0, 100, since=40, until=30)], has_since=True, has_until=True)
    assert (r.start, r.end, r.size) == (40, 40, 0)


def test_no_window_reads_beginning_to_end_and_empty_partitions_give_empty_ranges():
    ranges = plan_ranges([st(1, 0, 0), st(0, 7, 19)], has_since=False, has_until=False)
    assert ranges == [OffsetRange("t", 0, 7, 19), OffsetRange("t", 1, 0, 0)]  # sorted: a stable plan


def test_checkpoint_overrides_since_per_partition_and_new_partitions_use_the_window():
    ck = checkpoint_offsets({"sources": [
        {"source": "t", "partition": 0, "next_offset": 33, "max_event_time_ms": 5},
        {"source": "/archive/file.jsonl", "partition": -1, "next_offset": 9},  # a file source: ignored
    ]})
    assert ck == {("t", 0): 33}
    ranges = plan_ranges([st(0, 0, 100, since=10), st(1, 0, 100, since=60)], has_since=True, has_until=False,
                         checkpoint=ck)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 33, 100), (1, 60, 100)]
    # Without a window start, a partition missing from the checkpoint is read from its beginning.
    ranges = plan_ranges([st(0, 0, 100), st(1, 5, 100)], has_since=False, has_until=False, checkpoint=ck)
    assert [(r.start, r.end) for r in ranges] == [(33, 100), (5, 100)]


def test_checkpoint_at_the_end_reads_nothing_and_is_not_an_error():
    [r] = plan_ranges([st(0, 0, 100)], has_since=False, has_until=False, checkpoint={("t", 0): 100})
    assert r.size == 0


def test_checkpoint_before_the_retained_beginning_is_refused_because_records_were_lost():
    with pytest.raises(PlanError) as err:
        plan_ranges([st(2, 500, 900)], has_since=False, has_until=False, checkpoint={("t", 2): 120})
    msg = str(err.value)
    assert "t partition 2" in msg and "120" in msg and "500" in msg and "retention" in msg


def test_checkpoint_past_the_end_is_refused_as_belonging_to_another_topic():
    with pytest.raises(PlanError, match="re-created"):
        plan_ranges([st(0, 0, 10)], has_since=False, has_until=False, checkpoint={("t", 0): 11})


@pytest.mark.parametrize("bad", [{"sources": "x"}, {"nope": []}, {"sources": [{"source": "t"}]},
                                 {"sources": [{"source": "t", "partition": 0, "next_offset": -3}]}])
def test_malformed_checkpoint_is_a_usage_error_naming_the_option(bad):
    with pytest.raises(UsageError, match="--checkpoint"):
        checkpoint_offsets(bad)
