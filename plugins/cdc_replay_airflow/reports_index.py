"""Finding and summarising verification reports on disk. Pure Python (no Airflow, no FastAPI): the plugin's pages
and the operator link build on it, and tests use it directly.

Layout (written by the verify task through ``cdc-replay verify --report ... --html ...``):
    <root>/<dag_id>/<run_id>/verification.json              list of per-table results
    <root>/<dag_id>/<run_id>/verification.accounting.json   overall verdict, record accounting
    <root>/<dag_id>/<run_id>/verification.html              the page for people
A DAG that verifies several pipelines in one run writes one level deeper: ``<root>/<dag_id>/<run_id>/<pipeline>/``.
The root is ``$CDC_REPLAY_REPORTS_DIR``, default ``$AIRFLOW_HOME/cdc-replay-reports``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

REPORT = "verification.json"
ACCOUNTING = "verification.accounting.json"
HTML = "verification.html"


def reports_root() -> Path:
    explicit = os.environ.get("CDC_REPLAY_REPORTS_DIR")
    if explicit:
        return Path(explicit)
    home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "airflow")
    return Path(home) / "cdc-replay-reports"


def report_dir(dag_id: str, run_id: str, pipeline: Optional[str] = None, root: Optional[Path] = None) -> Path:
    """The directory of one report; refuses names that would leave the root (``..``, slashes)."""
    root = (root or reports_root()).resolve()
    parts = [(dag_id, "dag_id"), (run_id, "run_id")] + ([(pipeline, "pipeline")] if pipeline is not None else [])
    for part, what in parts:
        if not part or "/" in part or "\\" in part or part in (".", "..") or "\x00" in part:
            raise ValueError(f"invalid {what} {part!r}")
    d = root.joinpath(*(p for p, _ in parts)).resolve()
    if root not in d.parents:
        raise ValueError("report path leaves the reports root")
    return d


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def summarise(dag_id: str, run_id: str, pipeline: Optional[str], d: Path) -> dict:
    tables = _load(d / REPORT)
    accounting = _load(d / ACCOUNTING) or {}
    readable = isinstance(tables, list)
    table_rows = [
        {"table": t.get("table"), "ok": bool(t.get("ok")), "expected_rows": t.get("expected_rows"),
         "actual_rows": t.get("actual_rows"), "reference_rows": t.get("reference_rows")}
        for t in (tables if readable else []) if isinstance(t, dict)
    ]
    ok = readable and all(t["ok"] for t in table_rows) and accounting.get("ok", True) is not False
    return {
        "dag_id": dag_id, "run_id": run_id, "pipeline": pipeline,
        "status": ("passed" if ok else "failed") if readable else "unreadable",
        "ok": ok,
        "generated_at": accounting.get("generated_at"),
        "tables": table_rows,
        "failed_tables": [t["table"] for t in table_rows if not t["ok"]],
        "accounting_ok": accounting.get("ok"),
        "has_html": (d / HTML).is_file(),
        "modified": (d / REPORT).stat().st_mtime if (d / REPORT).exists() else None,
    }


def _dirs(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))


def list_reports(root: Optional[Path] = None, dag_id: Optional[str] = None, run_id: Optional[str] = None
                 ) -> list[dict]:
    """Every report (per run, or per pipeline of a run), newest first."""
    root = root or reports_root()
    if not root.is_dir():
        return []
    out = []
    for dag_dir in _dirs(root):
        if dag_id and dag_dir.name != dag_id:
            continue
        for run_dir in _dirs(dag_dir):
            if run_id and run_dir.name != run_id:
                continue
            if (run_dir / REPORT).is_file():
                out.append(summarise(dag_dir.name, run_dir.name, None, run_dir))
            for pipe_dir in _dirs(run_dir):
                if (pipe_dir / REPORT).is_file():
                    out.append(summarise(dag_dir.name, run_dir.name, pipe_dir.name, pipe_dir))
    out.sort(key=lambda r: (-(r["modified"] or 0), r["dag_id"], r["run_id"], r["pipeline"] or ""))
    return out
