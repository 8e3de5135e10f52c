"""Bodies of the small Python tasks (they run in the worker, never at parse time): find and load the pipelines
file, turn it into per-pipeline plans, and read verification reports into per-table results."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

from . import pipelines as pl
from .plan import ConfError, daily_plan


def pipelines_path() -> str | None:
    """The Airflow Variable (read from the metadata DB here, at run time), else the environment."""
    try:
        from airflow.sdk import Variable

        value = Variable.get(pl.VARIABLE, default=None)
    except Exception:  # no Variable backend reachable (e.g. a bare unit test): the environment still works
        value = None
    return pl.configured_path(value)


def load_pipelines_or_none() -> pl.Pipelines | None:
    path = pipelines_path()
    return pl.load(path) if path else None


def daily_items(pipes: pl.Pipelines, start: dt.datetime, end: dt.datetime, *, dag_id: str,
                run_id: str) -> list[dict[str, Any]]:
    """One item per pipeline, in file order: a plan, or the error that pipeline will fail with. Errors are
    carried, not raised, so each pipeline succeeds or fails on its own."""
    items = []
    for name in pipes.names:
        if name in pipes.errors:
            items.append({"pipeline": name, "error": pipes.errors[name]})
            continue
        try:
            items.append({"error": None, **daily_plan(pipes.valid[name], start, end, dag_id=dag_id, run_id=run_id)})
        except ConfError as exc:
            items.append({"pipeline": name, "error": str(exc)})
    return items


def table_results(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-table verification results of every pipeline that should have been verified. A pipeline that failed
    before writing its report appears as one failed entry, so the table view never looks greener than it is."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item.get("skip") or (not item.get("error") and not item.get("merge")):
            continue
        name = item["pipeline"]
        report = item.get("report")
        if item.get("error") or not report or not os.path.exists(report):
            out.append({"pipeline": name, "table": None, "ok": False,
                        "message": f"pipeline {name!r} has no verification report: "
                                   + (item.get("error") or "it failed before verify (see its tasks)")})
            continue
        with open(report, encoding="utf-8") as fh:
            data = json.load(fh)
        rows = data.get("tables", data) if isinstance(data, dict) else data
        for row in rows:
            out.append({"pipeline": name, "table": row.get("table"), "ok": bool(row.get("ok")),
                        "expected_rows": row.get("expected_rows"), "actual_rows": row.get("actual_rows"),
                        "message": row.get("message") or row.get("reason") or "", "report": report})
    return out


def describe_table_result(r: dict[str, Any]) -> str:
    if r["table"] is None:
        return r["message"]
    state = "ok" if r["ok"] else "MISMATCH"
    extra = f" ({r['message']})" if r.get("message") else ""
    return (f"pipeline {r['pipeline']!r} table {r['table']}: {state}: expected {r.get('expected_rows')} rows, "
            f"state has {r.get('actual_rows')}{extra}; report {r.get('report')}")


def verified_tables(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables of a plan's verification report that passed (the ones whose rebuilt state is announced)."""
    report = plan.get("report")
    if not report or not os.path.exists(report):
        return []
    with open(report, encoding="utf-8") as fh:
        data = json.load(fh)
    rows = data.get("tables", data) if isinstance(data, dict) else data
    return [r for r in rows if isinstance(r, dict) and r.get("ok") and r.get("table")]
