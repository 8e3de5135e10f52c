"""The independent row count (Spark window functions over events) and the pure accounting rules of verify."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from cdc_codecs import Event, Op, Position
from cdc_codecs.records import to_record
from cdc_codecs.scenario import final_state, scenario_events
from cdc_jobs.transforms import verify_counts as vc
from cdc_jobs.schemas import EVENT_ARROW, EVENT_SPARK


def events_df(spark, events):
    table = pa.Table.from_pylist([to_record(e) for e in events], schema=EVENT_ARROW)
    return spark.createDataFrame(table, EVENT_SPARK)  # PySpark 4 takes a pyarrow Table


def implied(spark, events, base=None, taken_at=None):
    df = events_df(spark, events)
    facts = vc.event_facts(df)
    # verify passes the tables' declared key lists, which are then looked up by name: the same facts
    known = sorted({tuple(e.primary_key) for e in events if e.primary_key})
    assert sorted(map(repr, vc.event_facts(df, known).collect())) == sorted(map(repr, facts.collect()))
    if base:
        keys = spark.createDataFrame(base, "table_name string, key string")
        facts = facts.unionByName(vc.base_facts(keys))
    return vc.collect_int_map(vc.implied_rows(vc.as_of(facts, taken_at)), "table_name", "expected_rows")


def ev(op, seq, before=None, after=None, table="t", pk=("id",), t_ms=None):
    return Event(format="canonical", op=op, database="db", table=table, position=Position("src", offset=seq),
                 before=before, after=after, primary_key=pk, sequence=(Decimal(seq),),
                 event_time_ms=t_ms if t_ms is not None else 1000 * seq)


pytestmark = pytest.mark.spark


def test_scenario_implies_its_final_state_row_count(spark):
    # snapshot, inserts, updates incl. a key change (1 -> 3), a delete: rows 10 and 3 remain
    assert implied(spark, scenario_events()) == {"demo.all_types": len(final_state())}


def test_order_is_by_sequence_not_by_file_order_and_duplicates_across_replays_do_not_count_twice(spark):
    insert, delete = ev(Op.INSERT, 1, after={"id": "1"}), ev(Op.DELETE, 2, before={"id": "1"})
    assert implied(spark, [delete, insert]) == {"db.t": 0}  # delete is later in sequence, whatever the input order
    assert implied(spark, [insert, insert, ev(Op.INSERT, 3, after={"id": "2"})]) == {"db.t": 2}


def test_key_change_removes_old_key_and_null_key_values_stay_distinct(spark):
    events = [ev(Op.INSERT, 1, after={"id": "1"}), ev(Op.INSERT, 2, after={"id": None}),
              ev(Op.INSERT, 3, after={"id": "null"}),
              ev(Op.UPDATE, 4, before={"id": "1"}, after={"id": "5"})]
    assert implied(spark, events) == {"db.t": 3}  # NULL, "null", 5


def test_composite_key_and_truncate(spark):
    pk = ("a", "b")
    events = [ev(Op.INSERT, 1, after={"a": "1", "b": "x"}, pk=pk), ev(Op.INSERT, 2, after={"a": "1", "b": "y"}, pk=pk),
              ev(Op.TRUNCATE, 3, pk=()), ev(Op.INSERT, 4, after={"a": "2", "b": "x"}, pk=pk),
              ev(Op.UPDATE, 5, before={"a": "2", "b": "x"}, after={"a": "2", "b": "x", "c": "new"}, pk=pk)]
    assert implied(spark, events) == {"db.t": 1}


def test_base_state_rows_come_first_and_events_change_them(spark):
    base = [("db.t", '["1"]'), ("db.t", '["2"]'), ("db.other", '["9"]')]
    events = [ev(Op.DELETE, 1, before={"id": "1"}), ev(Op.INSERT, 2, after={"id": "3"})]
    assert implied(spark, events, base=base) == {"db.t": 2, "db.other": 1}


def test_as_of_counts_full_sync_rows_whatever_their_read_time_and_changes_up_to_then(spark):
    events = [ev(Op.SNAPSHOT, 1, after={"id": "1"}, t_ms=5000), ev(Op.SNAPSHOT, 2, after={"id": "2"}, t_ms=6000),
              ev(Op.INSERT, 3, after={"id": "3"}, t_ms=3000), ev(Op.DELETE, 4, before={"id": "1"}, t_ms=9000)]
    assert implied(spark, events, taken_at=1000) == {"db.t": 2}
    assert implied(spark, events, taken_at=3000) == {"db.t": 3}
    assert implied(spark, events) == {"db.t": 2}


def test_keyless_table_rows_are_keyed_by_their_whole_image(spark):
    events = [ev(Op.INSERT, 1, after={"a": "1", "b": "2"}, pk=()), ev(Op.INSERT, 2, after={"b": "2", "a": "3"}, pk=()),
              ev(Op.DELETE, 3, before={"b": "2", "a": "1"}, pk=())]
    assert implied(spark, events) == {"db.t": 1}


def test_per_source_counts_count_records_not_rows(spark):
    # One Canal-style message with three rows (same offset, index 0..2) and a single-row message.
    rows = [ev(Op.INSERT, 1, after={"id": str(i)}) for i in range(3)]
    rows = [e.with_(position=Position("f", offset=7, index=i)) for i, e in enumerate(rows)]
    rows.append(ev(Op.INSERT, 2, after={"id": "9"}).with_(position=Position("f", offset=8)))
    got = vc.per_source_counts(events_df(spark, rows), None)
    assert got == {("f", -1): {"event_rows": 4, "control_rows": 0, "event_messages": 2}}


# ----------------------------------------------------------------------------------- pure accounting rules

def _counts(**source):
    s = {"source": "f", "partition": -1, "records": 10, "events": 12, "control": 1, "dead_letters": 1,
         "fragments": 0, "filtered_out": 0} | source
    return {"records_read": s["records"], "sources": [s]}


def test_conservation_closes_in_records():
    observed = {("f", -1): {"event_rows": 12, "control_rows": 1, "event_messages": 9, "dead_letter_rows": 1,
                            "dead_letter_messages": 1}}
    result = vc.conservation(_counts(), observed)
    assert result["ok"], result["problems"]
    assert result["sources"][0]["unaccounted"] == 0


def test_conservation_names_source_when_a_record_is_missing():
    observed = {("f", -1): {"event_rows": 11, "control_rows": 1, "event_messages": 8, "dead_letter_rows": 1,
                            "dead_letter_messages": 1}}
    result = vc.conservation(_counts(), observed)
    assert not result["ok"]
    assert any("source f partition -1" in p and "1 unaccounted" in p for p in result["problems"])
    assert "source f partition -1: counts.json has 13 event rows, events/ holds 12" in result["problems"]


def test_conservation_with_filtered_rows_bounds_the_filtered_records():
    observed = {("f", -1): {"event_rows": 8, "control_rows": 1, "event_messages": 6, "dead_letter_rows": 1,
                            "dead_letter_messages": 1}}
    ok = vc.conservation(_counts(events=8, filtered_out=5), observed)  # 3 records hold the 5 filtered rows
    assert ok["ok"] and ok["sources"][0]["filtered_out_records"] == 3
    bad = vc.conservation(_counts(events=8, filtered_out=2), observed)  # 3 records cannot hold 2 rows
    assert not bad["ok"]
    exact = vc.conservation(_counts(events=8, filtered_out=5, filtered_records=2), observed)
    assert not exact["ok"] and exact["sources"][0]["unaccounted"] == 1


def test_encoding_check_packing_and_split_updates():
    found = {"db.t": {"SNAPSHOT": 4, "INSERT": 2, "UPDATE": 3}, "": {"HEARTBEAT": 1}}
    counts = {"encoded": {"format": "x", "messages": 5, "by_table": {
        "db.t": {"INSERT": {"events": 6, "messages": 2}, "UPDATE": {"events": 3, "messages": 3}}}}}
    ok = vc.encoding_check(counts, found, ["INSERT", "UPDATE", "DELETE"], 1, 5)
    assert ok["ok"], ok["problems"]
    assert {r["op"]: r["rule"] for r in ok["rows"] if r["table"] == ""} == {"HEARTBEAT": "x cannot carry HEARTBEAT: "
                                                                                         "not written"}
    # A format writing each update as two messages must show 6 messages for 3 updates.
    split = vc.encoding_check(counts, found, ["INSERT", "UPDATE"], 2, 5)
    assert not split["ok"] and any("db.t UPDATE" in p for p in split["problems"])
    # An event lost in encoding, and a file with fewer lines than counted.
    lost = {"encoded": {"format": "x", "messages": 5, "by_table": {
        "db.t": {"INSERT": {"events": 5, "messages": 2}, "UPDATE": {"events": 3, "messages": 3}}}}}
    bad = vc.encoding_check(lost, found, ["INSERT", "UPDATE"], 1, 4)
    assert not bad["ok"]
    assert any("INSERT: 6 events in, 5 events" in p for p in bad["problems"])
    assert any("encoded/ holds 4 messages" in p for p in bad["problems"])


def test_conservation_with_fragments_bounds_the_records_seen_twice():
    # DataWorks-style: 2 plain records + one update written as two halves, assembled into one event that keeps
    # the position of its first half. That record is in events/ and among the fragment records.
    source = {"source": "f", "partition": -1, "records": 4, "events": 3, "control": 0, "dead_letters": 0,
              "fragments": 2, "filtered_out": 0}
    observed = {("f", -1): {"event_rows": 3, "control_rows": 0, "event_messages": 3}}
    assert vc.conservation({"sources": [source]}, observed)["ok"]
    # exact when replay says how many events were assembled; then one lost record is caught
    exact = source | {"assembled_events": 1}
    assert vc.conservation({"sources": [exact]}, observed)["ok"]
    lost = vc.conservation({"sources": [exact | {"records": 5}]}, observed)
    assert not lost["ok"] and lost["sources"][0]["unaccounted"] == 1
