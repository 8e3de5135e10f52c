"""The plugin's FastAPI app, mounted by the Airflow API server at ``URL_PREFIX``.

Airflow does not authenticate plugin apps: every route depends on ``require_login`` (Airflow's own
``requires_access_view(AccessView.PLUGINS)``), so the page needs the same login as the rest of the UI (the
JWT cookie the UI sets, or a bearer token) and anonymous requests get 401/403.
"""

from __future__ import annotations

import html
import json
from typing import Optional

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
from airflow.api_fastapi.core_api.security import requires_access_view
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from .reports_index import ACCOUNTING, HTML, REPORT, list_runs, report_dir, reports_root

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


def _run_dir(dag_id: str, run_id: str):
    try:
        return report_dir(dag_id, run_id)
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


@app.get("/", response_class=HTMLResponse, name="index")
def index(request: Request, dag_id: Optional[str] = None) -> HTMLResponse:
    runs = list_runs(dag_id=dag_id)
    rows = []
    for r in runs:
        link = request.url_for("report_page", dag_id=r["dag_id"], run_id=r["run_id"]).path
        raw = request.url_for("report_json", dag_id=r["dag_id"], run_id=r["run_id"]).path
        chips = " ".join(
            _badge(t["ok"], f"{t['table']} {t['actual_rows']}/{t['expected_rows']}") for t in r["tables"])
        status = _badge(r["ok"], {"passed": "PASSED", "failed": "FAILED"}.get(r["status"], "UNREADABLE"))
        rows.append(
            f"<tr><td>{_e(r['dag_id'])}</td><td>{_e(r['run_id'])}</td><td>{status}</td><td>{chips}</td>"
            f"<td class='muted'>{_e(r['generated_at'])}</td>"
            f"<td><a href='{_e(link)}'>report</a> · <a href='{_e(raw)}'>json</a></td></tr>")
    body = ("<table><tr><th>DAG</th><th>run</th><th>status</th><th>tables (state rows / expected)</th>"
            "<th>verified at</th><th></th></tr>" + "".join(rows) + "</table>") if rows else \
        f"<p class='muted'>No verification reports under {_e(reports_root())} yet.</p>"
    failed = sum(1 for r in runs if not r["ok"])
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>CDC verification</title>"
            f"<style>{_CSS}</style></head><body><h1>CDC replay verification</h1>"
            f"<p>{len(runs)} run(s), {failed} failed{' for DAG ' + _e(dag_id) if dag_id else ''}.</p>{body}"
            f"</body></html>")
    return HTMLResponse(page)


@app.get("/api/reports", name="list_reports")
def list_reports(dag_id: Optional[str] = None) -> JSONResponse:
    return JSONResponse(list_runs(dag_id=dag_id))


@app.get("/reports/{dag_id}/{run_id}", response_class=HTMLResponse, name="report_page")
def report_page(dag_id: str, run_id: str) -> HTMLResponse:
    d = _run_dir(dag_id, run_id)
    if (d / HTML).is_file():
        return HTMLResponse((d / HTML).read_text(encoding="utf-8"))
    if (d / REPORT).is_file():  # no HTML written: render it from the JSON
        from cdc_jobs.reports import html_page

        tables = json.loads((d / REPORT).read_text())
        accounting = json.loads((d / ACCOUNTING).read_text()) if (d / ACCOUNTING).is_file() else {}
        return HTMLResponse(html_page(tables, accounting, title=f"{dag_id} / {run_id}"))
    raise HTTPException(status_code=404, detail=f"no verification report for DAG {dag_id} run {run_id} "
                                                f"(yet): the verify task writes it when it runs")


@app.get("/reports/{dag_id}/{run_id}/json", name="report_json")
def report_json(dag_id: str, run_id: str) -> JSONResponse:
    d = _run_dir(dag_id, run_id)
    if not (d / REPORT).is_file():
        raise HTTPException(status_code=404, detail=f"no verification report for DAG {dag_id} run {run_id}")
    accounting = json.loads((d / ACCOUNTING).read_text()) if (d / ACCOUNTING).is_file() else None
    return JSONResponse({"tables": json.loads((d / REPORT).read_text()), "accounting": accounting})
