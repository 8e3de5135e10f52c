"""Verification reports: the JSON files, the terminal table and the HTML page. Pure functions plus atomic writes.

Files of one verification (``REPORT`` = ``--report``, default ``STATE/verification.json``):
  REPORT                         JSON list, one object per table, keys sorted (stable diffs between runs)
  REPORT stem + .accounting.json JSON object: overall verdict, record conservation per replay and source,
                                 re-encoding accounting, the reference used (URL masked), notes
  --html FILE                    one self-contained HTML page with both
"""

from __future__ import annotations

import html
import json
from cdc_jobs.io import storage
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

TABLE_COLUMNS = [  # (key, heading) of the terminal and HTML tables
    ("table", "table"), ("snapshot", "snapshot"), ("insert", "insert"), ("update", "update"), ("delete", "delete"),
    ("base_rows", "base"), ("expected_rows", "expected"), ("actual_rows", "state"),
    ("reference_rows", "reference"), ("ok", "status"),
]


def accounting_path(report: str | Path) -> str | Path:
    """REPORT stem + .accounting.json, beside REPORT (a local path, or a storage URI kept as a string)."""
    if storage.is_local(str(report)):
        p = Path(report)
        return p.with_name((p.stem if p.suffix == ".json" else p.name) + ".accounting.json")
    head, _, name = str(report).rpartition("/")
    return f"{head}/{name[:-len('.json')] if name.endswith('.json') else name}.accounting.json"


def write_atomic(path: str | Path, text: str) -> None:
    """Readers (the Airflow plugin) never see half a file: a local file is written beside and renamed into
    place, an object is visible only once uploaded (``cdc_jobs.io.storage.write_text``)."""
    storage.write_text(str(path), text)


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def write_reports(tables: Sequence[Mapping], accounting: Mapping, report: str | Path,
                  html_path: Optional[str | Path] = None) -> list[Path]:
    written = [Path(report) if storage.is_local(str(report)) else report, accounting_path(report)]
    write_atomic(written[0], to_json(list(tables)))
    write_atomic(written[1], to_json(dict(accounting)))
    if html_path:
        write_atomic(html_path, html_page(tables, accounting))
        written.append(Path(html_path) if storage.is_local(str(html_path)) else html_path)
    return written


# ------------------------------------------------------------------------------------------------ terminal

def _cell(row: Mapping, key: str) -> str:
    v = row.get(key)
    if key == "ok":
        return "ok" if v else "FAIL"
    if key == "reference_rows" and v is None:
        return "-"
    if key == "reference_rows" and row.get("reference_expected_rows") not in (None, row.get("actual_rows")):
        return f"{v} (as of: {row.get('reference_expected_rows')})"
    return "-" if v is None else str(v)


def render_table(headings: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headings)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(headings), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def terminal_report(tables: Sequence[Mapping], accounting: Mapping) -> str:
    out = [render_table([h for _, h in TABLE_COLUMNS],
                        [[_cell(t, k) for k, _ in TABLE_COLUMNS] for t in tables])]
    for t in tables:
        for p in t.get("problems", []):
            out.append(f"  {t['table']}: {p}")
    for r in accounting.get("replays", []):
        c = r["conservation"]
        status = "ok" if r["ok"] else "FAIL"
        out.append(f"replay {r['replay']} ({r.get('format')}): {c['records_read']} records read -> "
                   f"{sum(s['messages_with_events'] for s in c['sources'])} with events, "
                   f"{sum(s['dead_letters'] for s in c['sources'])} dead letters, "
                   f"{sum(s['fragments'] for s in c['sources'])} fragments, "
                   f"{sum(s['filtered_out_rows'] for s in c['sources'])} rows filtered out: {status}")
        dead = r.get("dead_letters")
        if dead and (dead["total"] or not dead["budget"]["ok"]):
            out.append(f"  dead letters: {dead['total']} (budget {dead['budget']['spec']}: "
                       f"{'ok' if dead['budget']['ok'] else 'EXCEEDED'})")
            for x in dead["by_reason"][:5]:
                out.append(f"    {x['dead_letters']} x {x['format']} field '{x['field']}': {x['reason']} "
                           f"(e.g. {x['example']})")
        enc = r.get("encoding")
        if enc:
            out.append(f"  re-encoded as {enc['format']}: {enc['messages']} messages: "
                       f"{'ok' if enc['ok'] else 'FAIL'}")
        for p in r.get("problems", []):
            out.append(f"  {p}")
    ref = accounting.get("reference")
    if ref:
        out.append(f"reference: {ref['source']}")
    out.append(f"verification: {'PASSED' if accounting.get('ok') else 'FAILED'}")
    return "\n".join(out)


def failure_message(tables: Iterable[Mapping], accounting: Mapping) -> str:
    """One line per failing table or replay, with the numbers (what Airflow shows as the task's error)."""
    lines = []
    for t in tables:
        if not t.get("ok"):
            lines.append(f"table {t['table']}: " + "; ".join(t.get("problems", [])))
    for r in accounting.get("replays", []):
        if not r["ok"]:
            lines.append(f"replay {r['replay']}: " + "; ".join(r.get("problems", [])))
    return "verification failed:\n" + "\n".join(f"  {line}" for line in lines)


# -------------------------------------------------------------------------------------------------- HTML

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #ccc;padding:.25rem .6rem}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}
.ok{background:#e6f4ea;color:#137333;font-weight:600}.fail{background:#fce8e6;color:#a50e0e;font-weight:600}
.badge{padding:.15rem .5rem;border-radius:.3rem}code{font-size:90%}ul{margin:.2rem 0}
.charts{display:flex;flex-wrap:wrap;gap:1rem 2rem}figure.chart{margin:0}figcaption{color:#555;font-size:12px}
"""


def _e(v: Any) -> str:
    return html.escape("-" if v is None else str(v))


def _status(ok: Any) -> str:
    return f'<span class="badge {"ok" if ok else "fail"}">{"ok" if ok else "FAIL"}</span>'


def html_page(tables: Sequence[Mapping], accounting: Mapping, title: str = "cdc-replay verification") -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{_e(title)} {_status(accounting.get('ok'))}</h1>",
             f"<p>generated {_e(accounting.get('generated_at'))}; state <code>{_e(accounting.get('state'))}</code>"
             f"{'; base <code>' + _e(accounting.get('base')) + '</code>' if accounting.get('base') else ''}</p>"]
    ref = accounting.get("reference")
    if ref:
        parts.append(f"<p>reference: <code>{_e(ref['source'])}</code> ({_e(ref['kind'])})</p>")
    parts.append("<h2>Tables</h2><table><tr>" + "".join(f"<th>{_e(h)}</th>" for _, h in TABLE_COLUMNS)
                 + "<th>problems</th></tr>")
    for t in tables:
        cells = []
        for k, _ in TABLE_COLUMNS:
            if k == "ok":
                cells.append(f"<td>{_status(t.get('ok'))}</td>")
            elif k == "table":
                cells.append(f"<td>{_e(t.get(k))}</td>")
            else:
                cells.append(f'<td class="n">{_e(_cell(t, k))}</td>')
        probs = "".join(f"<li>{_e(p)}</li>" for p in t.get("problems", []))
        parts.append(f"<tr>{''.join(cells)}<td><ul>{probs}</ul></td></tr>")
    parts.append("</table>")
    from cdc_jobs.io.charts import report_charts  # inline SVG: the page needs nothing from the network

    parts.append(report_charts(tables, accounting))
    for r in accounting.get("replays", []):
        parts.append(f"<h2>Replay <code>{_e(r['replay'])}</code> ({_e(r.get('format'))}) {_status(r['ok'])}</h2>")
        parts.append("<table><tr><th>source</th><th>partition</th><th>records read</th><th>with events</th>"
                     "<th>dead letters</th><th>fragments</th><th>filtered out (records)</th><th>unaccounted</th>"
                     "<th>event rows</th><th>control rows</th><th>status</th></tr>")
        for s in r["conservation"]["sources"]:
            nums = [s["records_read"], s["messages_with_events"], s["dead_letters"], s["fragments"],
                    s["filtered_out_records"], s["unaccounted"], s["event_rows"], s["control_rows"]]
            parts.append(f"<tr><td>{_e(s['source'])}</td><td class='n'>{_e(s['partition'])}</td>"
                         + "".join(f"<td class='n'>{_e(n)}</td>" for n in nums)
                         + f"<td>{_status(s['ok'])}</td></tr>")
        parts.append("</table>")
        enc = r.get("encoding")
        if enc:
            parts.append(f"<h3>Re-encoded as {_e(enc['format'])}: {_e(enc['messages'])} messages "
                         f"{_status(enc['ok'])}</h3><table><tr><th>table</th><th>op</th><th>events in</th>"
                         "<th>events out</th><th>messages</th><th>rule</th><th>status</th></tr>")
            for row in enc["rows"]:
                parts.append(f"<tr><td>{_e(row['table'])}</td><td>{_e(row['op'])}</td>"
                             f"<td class='n'>{_e(row['events_in'])}</td><td class='n'>{_e(row['events_out'])}</td>"
                             f"<td class='n'>{_e(row['messages'])}</td><td>{_e(row['rule'])}</td>"
                             f"<td>{_status(row['ok'])}</td></tr>")
            parts.append("</table>")
        dead = r.get("dead_letters")
        if dead:
            parts.append(_dead_letters_html(dead))
        if r.get("problems"):
            parts.append("<ul>" + "".join(f"<li>{_e(p)}</li>" for p in r["problems"]) + "</ul>")
    notes = accounting.get("notes") or []
    if notes:
        parts.append("<h2>How this is counted</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _dead_letters_html(dead: Mapping) -> str:
    """Dead letters of one replay: the budget verdict, then by reason, table and source file/partition."""
    budget = dead.get("budget") or {}
    parts = [f"<h3>Dead letters: {_e(dead.get('total'))} (budget <code>{_e(budget.get('spec'))}</code>) "
             f"{_status(budget.get('ok', True))}</h3>"]
    if not dead.get("total"):
        return "\n".join(parts)
    parts.append("<table><tr><th>dead letters</th><th>format</th><th>field</th><th>reason</th><th>example</th></tr>"
                 + "".join(f"<tr><td class='n'>{_e(x['dead_letters'])}</td><td>{_e(x['format'])}</td>"
                           f"<td><code>{_e(x['field'])}</code></td><td>{_e(x['reason'])}</td>"
                           f"<td><code>{_e(x['example'])}</code></td></tr>" for x in dead.get("by_reason", []))
                 + "</table>")
    parts.append("<table><tr><th>table</th><th>dead letters</th></tr>"
                 + "".join(f"<tr><td>{_e(t)}</td><td class='n'>{_e(n)}</td></tr>"
                           for t, n in (dead.get("by_table") or {}).items()) + "</table>")
    parts.append("<table><tr><th>source</th><th>partition</th><th>dead letters</th><th>first</th><th>last</th></tr>"
                 + "".join(f"<tr><td>{_e(x['source'])}</td><td class='n'>{_e(x['partition'])}</td>"
                           f"<td class='n'>{_e(x['dead_letters'])}</td><td class='n'>{_e(x['first_offset'])}</td>"
                           f"<td class='n'>{_e(x['last_offset'])}</td></tr>" for x in dead.get("by_source", []))
                 + "</table>")
    return "\n".join(parts)
