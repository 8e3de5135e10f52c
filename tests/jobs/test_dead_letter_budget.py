"""The --max-dead-letters syntax and verdicts (pure; the Spark side is in test_fuzz_replay.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_jobs.errors import UsageError
from cdc_jobs.transforms.dead_letters import DEFAULT_SPEC, Limit, evaluate, parse_budget, summary_lines


def test_syntax():
    assert parse_budget(None).spec == DEFAULT_SPEC == "1%"
    assert parse_budget("").limits == (Limit("run", percent=Decimal("1")),)
    assert parse_budget("100").limits == (Limit("run", count=100),)
    assert parse_budget("0.1%").limits == (Limit("run", percent=Decimal("0.1")),)
    assert parse_budget("100, 0.1%").limits == (Limit("run", count=100), Limit("run", percent=Decimal("0.1")))
    assert parse_budget("1%,table:5%,table:20").limits == (
        Limit("run", percent=Decimal(1)), Limit("table", percent=Decimal(5)), Limit("table", count=20))
    assert parse_budget("none").unlimited and parse_budget("NONE").limits == ()
    assert [lim.text for lim in parse_budget("run:0,.5%,table:2.50%").limits] == ["0", "0.5%", "table:2.5%"]


@pytest.mark.parametrize("spec", ["lots", "-1", "1.5", "101%", "table:", "10%%", "1e3", "50,", "rows:5"])
def test_bad_specs_name_the_option(spec):
    with pytest.raises(UsageError, match="--max-dead-letters"):
        parse_budget(spec)


def test_fraction_allows_the_floor_of_records_read():
    b = parse_budget("0.1%")
    assert evaluate(b, 9_999, 9, {})["ok"] and not evaluate(b, 9_999, 10, {})["ok"]
    assert evaluate(parse_budget("0"), 10**6, 0, {})["ok"] and not evaluate(parse_budget("0"), 10**6, 1, {})["ok"]


def test_every_item_must_hold():
    b = parse_budget("100,0.1%")
    assert not evaluate(b, 1_000_000, 101, {})["ok"]  # under 0.1% but over 100
    v = evaluate(b, 1_000, 50, {})  # under 100 but over 0.1%
    assert not v["ok"] and v["problems"] == ["50 dead letters of 1000 records read (5.00%), the budget 0.1% allows 1"]


def test_default_fails_an_unreadable_archive_and_tolerates_a_stray_line():
    b = parse_budget(None)
    assert not evaluate(b, 1_400, 1_400, {})["ok"]
    assert not evaluate(b, 1_408, 225, {})["ok"]  # dts-avro in issue 14: 16% unreadable passed verify
    assert evaluate(b, 200_000, 3, {})["ok"]


def test_table_limits_apply_to_each_table_with_a_known_table():
    b = parse_budget("table:10%")
    tables = {"shop.a": (1, 99), "shop.b": (5, 20), "(unknown)": (1000, 0)}
    v = evaluate(b, 2_000, 1_006, tables)
    assert not v["ok"]
    assert v["problems"] == ["table shop.b: 5 dead letters of 25 (20.00%), the budget table:10% allows 2"]
    lines = summary_lines(v, {"by_reason": [{"dead_letters": 5, "format": "f", "field": "x", "reason": "bad",
                                             "example": "s line 3"}],
                              "by_source": [{"dead_letters": 5, "source": "t", "partition": 0,
                                             "first_offset": 7, "last_offset": 9}]})
    assert lines[1:] == ["top reason: 5 x f field 'x': bad (e.g. s line 3)",
                         "top source: 5 in t (partition 0 offsets 7-9)"]
