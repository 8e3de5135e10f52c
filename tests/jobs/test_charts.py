"""The verification report's charts (jobs/io/charts.py): inline SVG that shows the report's own numbers, with
failing tables marked, and nothing fetched from the network."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from cdc_jobs.io.reports import html_page

SVG = "{http://www.w3.org/2000/svg}"
HOUR = 3_600_000
DAY = 1_704_067_200_000  # 2024-01-01T00:00Z


def _table(name, expected, actual, **ops):
    return {"table": name, "expected_rows": expected, "actual_rows": actual, "ok": expected == actual,
            "problems": [] if expected == actual else ["off"], "snapshot": 0, "insert": 0, "update": 0, "delete": 0,
            "truncate": 0, **ops}


def _source(source, partition, dead):
    return {"source": source, "partition": partition, "dead_letters": dead, "records_read": 10 + dead,
            "messages_with_events": 10, "fragments": 0, "filtered_out_records": 0, "unaccounted": 0,
            "event_rows": 10, "control_rows": 0, "ok": True}


def charts(page: str) -> dict[str, ET.Element]:
    found = {}
    for svg in re.findall(r"<svg .*?</svg>", page, flags=re.S):
        el = ET.fromstring(svg)  # well-formed XML, or the browser would not draw it either
        found[el.get("data-chart")] = el
    return found


def titles(el: ET.Element) -> list[str]:
    return [t.text for t in el.iter(SVG + "title")]


def test_report_draws_every_chart_from_its_numbers():
    tables = [_table("shop.customers", 40, 40, insert=57, update=41, delete=14),
              _table("shop.orders", 12, 9, snapshot=10, insert=5, delete=3)]
    accounting = {"ok": False, "replays": [{
        "replay": "/r", "ok": False, "conservation": {"sources": [
            _source("/a/part-0.jsonl", -1, 3), _source("kafka://k:9092/t", 2, 1), _source("/a/part-1.jsonl", -1, 0)]},
        "charts": {"events_per_hour": [{"table": "shop.customers", "hour_ms": DAY, "events": 80},
                                       {"table": "shop.customers", "hour_ms": DAY + 2 * HOUR, "events": 32},
                                       {"table": "shop.orders", "hour_ms": DAY + HOUR, "events": 18}],
                   "dead_letters_by_reason": [{"reason": "data: invalid JSON at offset #", "dead_letters": 3},
                                              {"reason": "ts: not a number", "dead_letters": 1}]}}]}
    page = html_page(tables, accounting)
    assert not re.search(r"(src|href)=['\"]?https?:", page)  # nothing to fetch at view time
    c = charts(page)
    assert set(c) == {"events_per_hour", "ops_per_table", "rows_per_table", "dead_letters_by_reason",
                      "dead_letters_by_source"}
    hourly = titles(c["events_per_hour"])
    assert "shop.customers 2024-01-01 02:00 UTC: 32 events" in hourly
    assert "shop.orders 2024-01-01 00:00 UTC: 0 events" in hourly  # an hour without events is a zero, not a gap
    assert {p.get("data-series") for p in c["events_per_hour"].iter(SVG + "polyline")} == {"shop.customers",
                                                                                          "shop.orders"}
    assert "shop.customers update: 41" in titles(c["ops_per_table"])
    rows = c["rows_per_table"]
    assert "shop.orders expected: 12" in titles(rows) and "shop.orders merged: 9" in titles(rows)
    marked = [t.text for t in rows.iter(SVG + "text") if t.get("data-mark") == "fail"]
    assert marked == ["FAIL"]  # only shop.orders fails
    assert "data: invalid JSON at offset # dead letters: 3" in titles(c["dead_letters_by_reason"])
    by_source = titles(c["dead_letters_by_source"])
    assert "/a/part-0.jsonl dead letters: 3" in by_source and "kafka://k:9092/t [partition 2] dead letters: 1" in by_source
    assert not any("part-1" in t for t in by_source)


def test_clean_run_says_so_instead_of_empty_axes():
    page = html_page([_table("shop.t", 1, 1, insert=1)], {"ok": True, "replays": [
        {"replay": "/r", "ok": True, "conservation": {"sources": []}, "charts": {"events_per_hour": [],
                                                                              "dead_letters_by_reason": []}}]})
    c = charts(page)
    assert "no dead letters: every record was decoded" in "".join(c["dead_letters_by_reason"].itertext())
    assert "no events in the window" in "".join(c["events_per_hour"].itertext())
