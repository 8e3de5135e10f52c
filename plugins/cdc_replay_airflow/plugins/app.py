"""The plugin's FastAPI app, mounted by the Airflow API server at ``URL_PREFIX``.

Airflow does not authenticate plugin apps: every route depends on ``require_login`` (Airflow's own
``requires_access_view(AccessView.PLUGINS)``), so the page needs the same login as the rest of the UI (the
JWT cookie the UI sets, or a bearer token) and anonymous requests get 401 (a bad token 403).

Routes (under /cdc-replay):
  /                                         reports by DAG run (and pipeline) and table, pass/fail at a glance
  /reports/{dag_id}/{run_id}[/{pipeline}]   one report page (a run verified per pipeline lists its pipelines)
  /api/reports                              the listing as JSON (?dag_id=&run_id= filter)
  /api/reports/{dag_id}/{run_id}[/{pipeline}]  one report as JSON: {"tables": [...], "accounting": {...}}
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Optional
from urllib.parse import quote

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
from airflow.api_fastapi.core_api.security import requires_access_view
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from ..reports_index import ACCOUNTING, HTML, REPORT, list_reports, report_dir, reports_root

URL_PREFIX = "/cdc-replay"
require_login = requires_access_view(AccessView.PLUGINS)  # one object, so tests can override it

app = FastAPI(title="cdc-replay verification reports", dependencies=[Depends(require_login)],
              docs_url=None, redoc_url=None, openapi_url=None)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3rem .6rem;vertical-align:top}
th{background:#f3f3f3}.ok{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}
.badge{padding:.1rem .45rem;border-radius:.3rem;font-weight:600;display:inline-block;margin:.1rem}
.muted{color:#777}
"""


def _e(v: object) -> str:
    return html.escape("" if v is None else str(v))


def _badge(ok: bool, text: str) -> str:
    return f'<span class="badge {"ok" if ok else "fail"}">{_e(text)}</span>'


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HTTPException(status_code=422, detail=f"{path.name} of {what} is not readable: {exc}") from None


def _dir(dag_id: str, run_id: str, pipeline: Optional[str]) -> Path:
    try:
        return report_dir(dag_id, run_id, pipeline)
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


def _what(dag_id: str, run_id: str, pipeline: Optional[str]) -> str:
    return f"DAG {dag_id} run {run_id}" + (f" pipeline {pipeline}" if pipeline else "")


def _links(request: Request, r: dict) -> tuple[str, str]:
    params = {"dag_id": r["dag_id"], "run_id": r["run_id"]}
    if r["pipeline"]:
        params["pipeline"] = r["pipeline"]
        return (request.url_for("pipeline_page", **params).path, request.url_for("pipeline_json", **params).path)
    return request.url_for("report_page", **params).path, request.url_for("report_json", **params).path


def _chip(t: dict) -> str:
    """One table's verdict; the link shows that table across runs."""
    text = f"{t['table']} {t['actual_rows']}/{t['expected_rows']}"
    return f"<a href='?table={_e(quote(str(t['table'])))}' title='this table in every run'>{_badge(t['ok'], text)}</a>"


def _listing(request: Request, reports: list[dict], heading: str, empty: str) -> HTMLResponse:
    rows = []
    for r in reports:
        page, raw = _links(request, r)
        chips = " ".join(_chip(t) for t in r["tables"])
        status = _badge(r["ok"], {"passed": "PASSED", "failed": "FAILED"}.get(r["status"], "UNREADABLE"))
        rows.append(
            f"<tr><td>{_e(r['dag_id'])}</td><td>{_e(r['run_id'])}</td><td>{_e(r['pipeline'] or '')}</td>"
            f"<td>{status}</td><td>{chips}</td><td class='muted'>{_e(r['generated_at'])}</td>"
            f"<td><a href='{_e(page)}'>report</a> · <a href='{_e(raw)}'>json</a></td></tr>")
    body = ("<table><tr><th>DAG</th><th>run</th><th>pipeline</th><th>status</th>"
            "<th>tables (state rows / expected)</th><th>verified at</th><th></th></tr>"
            + "".join(rows) + "</table>") if rows else f"<p class='muted'>{_e(empty)}</p>"
    failed = sum(1 for r in reports if not r["ok"])
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>CDC verification</title><style>{_CSS}</style>"
        f"</head><body><h1>{_e(heading)}</h1><p>{len(reports)} report(s), {failed} failed.</p>{body}</body></html>")


def _filtered(dag_id: Optional[str], run_id: Optional[str], table: Optional[str]) -> list[dict]:
    reports = list_reports(dag_id=dag_id, run_id=run_id)
    if table:  # one table's history across runs: keep just that table's result
        reports = [{**r, "tables": [t for t in r["tables"] if t["table"] == table]} for r in reports]
        reports = [{**r, "ok": all(t["ok"] for t in r["tables"])} for r in reports if r["tables"]]
    return reports


@app.get("/", response_class=HTMLResponse, name="index")
def index(request: Request, dag_id: Optional[str] = None, run_id: Optional[str] = None,
          table: Optional[str] = None) -> HTMLResponse:
    heading = "CDC replay verification" + (f": {table}" if table else "")
    return _listing(request, _filtered(dag_id, run_id, table), heading,
                    f"No verification reports under {reports_root()} yet.")


@app.get("/api/reports", name="list_api")
def list_api(dag_id: Optional[str] = None, run_id: Optional[str] = None, table: Optional[str] = None
             ) -> JSONResponse:
    return JSONResponse(_filtered(dag_id, run_id, table))


def _page(request: Request, dag_id: str, run_id: str, pipeline: Optional[str]) -> HTMLResponse:
    d = _dir(dag_id, run_id, pipeline)
    what = _what(dag_id, run_id, pipeline)
    if (d / HTML).is_file():
        return HTMLResponse((d / HTML).read_text(encoding="utf-8"))
    if (d / REPORT).is_file():  # no HTML written: render it from the JSON
        from cdc_jobs.io.reports import html_page

        tables = _read_json(d / REPORT, what)
        accounting = _read_json(d / ACCOUNTING, what) if (d / ACCOUNTING).is_file() else {}
        return HTMLResponse(html_page(tables, accounting, title=what))
    if pipeline is None:  # a run verified per pipeline: the link of its verify tasks lands here
        below = list_reports(dag_id=dag_id, run_id=run_id)
        if below:
            return _listing(request, below, f"Verification of {what}", "")
    raise HTTPException(status_code=404, detail=f"no verification report for {what} (yet): the verify task "
                                                f"writes it when it runs")


def _json(dag_id: str, run_id: str, pipeline: Optional[str]) -> JSONResponse:
    d = _dir(dag_id, run_id, pipeline)
    what = _what(dag_id, run_id, pipeline)
    if not (d / REPORT).is_file():
        raise HTTPException(status_code=404, detail=f"no verification report for {what}")
    accounting = _read_json(d / ACCOUNTING, what) if (d / ACCOUNTING).is_file() else None
    return JSONResponse({"tables": _read_json(d / REPORT, what), "accounting": accounting})


@app.get("/reports/{dag_id}/{run_id}", response_class=HTMLResponse, name="report_page")
def report_page(request: Request, dag_id: str, run_id: str) -> HTMLResponse:
    return _page(request, dag_id, run_id, None)


@app.get("/reports/{dag_id}/{run_id}/{pipeline}", response_class=HTMLResponse, name="pipeline_page")
def pipeline_page(request: Request, dag_id: str, run_id: str, pipeline: str) -> HTMLResponse:
    return _page(request, dag_id, run_id, pipeline)


@app.get("/api/reports/{dag_id}/{run_id}", name="report_json")
def report_json(dag_id: str, run_id: str) -> JSONResponse:
    return _json(dag_id, run_id, None)


@app.get("/api/reports/{dag_id}/{run_id}/{pipeline}", name="pipeline_json")
def pipeline_json(dag_id: str, run_id: str, pipeline: str) -> JSONResponse:
    return _json(dag_id, run_id, pipeline)
