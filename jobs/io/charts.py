"""Charts of a verification, as inline SVG: the HTML report (and the Airflow plugin's run page, which shows the
same HTML) works offline, with no script and no asset fetched at view time.

From the report's data (verify collects only small aggregates: per table x hour, per reason, per source):
- events per table over time, one line per table across the hours of the window;
- operations per table (stacked: snapshot, insert, update, delete, truncate);
- dead letters by reason and by source file / partition;
- expected vs merged rows per table, failing tables marked.

Every chart is an ``<svg role="img" data-chart="NAME">`` with a ``<title>``, so screen readers and tests can find
it, and with the numbers in ``<title>`` tooltips of each mark.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e",
           "#9498a0"]
OP_COLORS = {"snapshot": "#97bbf5", "insert": "#3ca951", "update": "#efb118", "delete": "#ff725c",
             "truncate": "#a463f2"}
FAIL, OK, EXPECTED = "#d93025", "#3ca951", "#9498a0"
FONT = "font-family='system-ui,sans-serif' font-size='11'"


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _svg(name: str, title: str, width: int, height: int, body: Iterable[str]) -> str:
    return (f"<figure class='chart'><svg xmlns='http://www.w3.org/2000/svg' role='img' data-chart='{_e(name)}' "
            f"width='{width}' height='{height}' viewBox='0 0 {width} {height}' {FONT}>"
            f"<title>{_e(title)}</title>{''.join(body)}</svg><figcaption>{_e(title)}</figcaption></figure>")


def _empty(name: str, title: str, text: str) -> str:
    return _svg(name, title, 420, 40, [f"<text x='8' y='24' fill='#777'>{_e(text)}</text>"])


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1
    for step in (1, 2, 2.5, 5, 10):
        magnitude = 10 ** (len(str(int(v))) - 1)
        if v <= step * magnitude:
            return step * magnitude
    return v


def hbar(name: str, title: str, rows: Sequence[tuple[str, Mapping[str, float]]], colors: Mapping[str, str],
         marks: Mapping[str, str] | None = None, grouped: bool = False) -> str:
    """Horizontal bars, one row per label; segments stacked (or side by side when `grouped`). `marks`: label ->
    text shown after the row (e.g. FAIL)."""
    if not rows:
        return _empty(name, title, "nothing to show")
    label_w, bar_w, row_h = min(max(len(r[0]) for r in rows) * 7 + 12, 260), 420, 26 if grouped else 20
    legend_h = 22
    height = legend_h + row_h * len(rows) + 24
    total = _nice_max(max((max(v.values(), default=0) if grouped else sum(v.values())) for _, v in rows))
    body = []
    x = label_w
    for key, color in colors.items():  # legend
        body.append(f"<rect x='{x}' y='4' width='10' height='10' fill='{color}'/>"
                    f"<text x='{x + 14}' y='13'>{_e(key)}</text>")
        x += 14 + len(key) * 7 + 14
    for i, (label, values) in enumerate(rows):
        y = legend_h + i * row_h
        mark = (marks or {}).get(label)
        body.append(f"<text x='{label_w - 6}' y='{y + row_h / 2 + 4}' text-anchor='end'"
                    f"{' fill=' + repr(FAIL) + ' font-weight=' + repr('bold') if mark else ''}>{_e(label)}</text>")
        offset = 0.0
        for j, (key, color) in enumerate(colors.items()):
            v = float(values.get(key, 0) or 0)
            w = bar_w * v / total
            if grouped:
                h = (row_h - 6) / len(colors)
                body.append(f"<rect x='{label_w}' y='{y + 2 + j * h:.1f}' width='{w:.1f}' height='{h:.1f}' "
                            f"fill='{color}'><title>{_e(label)} {_e(key)}: {v:,.0f}</title></rect>")
            elif v:
                body.append(f"<rect x='{label_w + offset:.1f}' y='{y + 3}' width='{w:.1f}' height='{row_h - 6}' "
                            f"fill='{color}'><title>{_e(label)} {_e(key)}: {v:,.0f}</title></rect>")
                offset += w
        end = label_w + (bar_w * max(values.values(), default=0) / total if grouped else offset)
        shown = " / ".join(f"{float(values.get(k, 0) or 0):,.0f}" for k in colors) if grouped else \
            f"{sum(float(v or 0) for v in values.values()):,.0f}"
        body.append(f"<text x='{end + 4:.1f}' y='{y + row_h / 2 + 4}' fill='#444'>{_e(shown)}</text>")
        if mark:
            body.append(f"<text x='{end + 8 + len(shown) * 6.5:.1f}' y='{y + row_h / 2 + 4}' fill='{FAIL}' "
                        f"font-weight='bold' data-mark='fail'>{_e(mark)}</text>")
    axis_y = legend_h + row_h * len(rows) + 14
    body.append(f"<text x='{label_w}' y='{axis_y}' fill='#777'>0</text>"
                f"<text x='{label_w + bar_w}' y='{axis_y}' fill='#777' text-anchor='end'>{total:,.0f}</text>")
    return _svg(name, title, label_w + bar_w + 140, height, body)


def lines(name: str, title: str, points: Sequence[Mapping[str, Any]]) -> str:
    """One line per table over the hours of the window; `points`: {table, hour_ms, events}."""
    if not points:
        return _empty(name, title, "no events in the window")
    hours = sorted({int(p["hour_ms"]) for p in points})
    tables = sorted({str(p["table"]) for p in points})
    counts = {(str(p["table"]), int(p["hour_ms"])): int(p["events"]) for p in points}
    top = _nice_max(max(counts.values()))
    left, plot_w, plot_h, top_pad = 56, 560, 180, 8
    legend_rows = (len(tables) + 2) // 3
    height = top_pad + plot_h + 36 + legend_rows * 16
    step = plot_w / max(len(hours) - 1, 1)
    body = [f"<line x1='{left}' y1='{top_pad + plot_h}' x2='{left + plot_w}' y2='{top_pad + plot_h}' stroke='#bbb'/>",
            f"<line x1='{left}' y1='{top_pad}' x2='{left}' y2='{top_pad + plot_h}' stroke='#bbb'/>",
            f"<text x='{left - 4}' y='{top_pad + 8}' text-anchor='end' fill='#777'>{top:,.0f}</text>",
            f"<text x='{left - 4}' y='{top_pad + plot_h}' text-anchor='end' fill='#777'>0</text>"]
    label_every = max(1, -(-90 // max(int(step), 1)))  # hour labels are ~80 px wide: never let them overlap
    for i, h in enumerate(hours):
        if i % label_every == 0:
            t = datetime.fromtimestamp(h / 1000, tz=timezone.utc)
            body.append(f"<text x='{left + i * step:.1f}' y='{top_pad + plot_h + 14}' text-anchor='middle' "
                        f"fill='#777'>{_e(t.strftime('%m-%d %H:00'))}</text>")
    for n, table in enumerate(tables):
        color = PALETTE[n % len(PALETTE)]
        xy = [(left + i * step, top_pad + plot_h - plot_h * counts.get((table, h), 0) / top)
              for i, h in enumerate(hours)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        body.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2' "
                    f"data-series='{_e(table)}'/>")
        for (x, y), h in zip(xy, hours):
            hour = datetime.fromtimestamp(h / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:00")
            body.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='2.5' fill='{color}'><title>{_e(table)} "
                        f"{hour} UTC: {counts.get((table, h), 0):,} events</title></circle>")
        lx, ly = left + (n % 3) * 200, top_pad + plot_h + 30 + (n // 3) * 16
        body.append(f"<rect x='{lx}' y='{ly - 9}' width='10' height='10' fill='{color}'/>"
                    f"<text x='{lx + 14}' y='{ly}'>{_e(table)}</text>")
    return _svg(name, title, left + plot_w + 20, height, body)


def report_charts(tables: Sequence[Mapping], accounting: Mapping) -> str:
    """The report's charts section (HTML with inline SVG)."""
    replays = accounting.get("replays") or []
    per_hour: dict[tuple[str, int], int] = {}
    reasons: dict[str, int] = {}
    sources: dict[str, int] = {}
    for r in replays:
        charts = r.get("charts") or {}
        for p in charts.get("events_per_hour", []):
            key = (str(p["table"]), int(p["hour_ms"]))
            per_hour[key] = per_hour.get(key, 0) + int(p["events"])
        for p in charts.get("dead_letters_by_reason", []):
            reasons[str(p["reason"])] = reasons.get(str(p["reason"]), 0) + int(p["dead_letters"])
        for s in (r.get("conservation") or {}).get("sources", []):
            if s.get("dead_letters"):
                where = f"{s['source']}" + (f" [partition {s['partition']}]" if s.get("partition", -1) not in (-1, None) else "")
                sources[where] = sources.get(where, 0) + int(s["dead_letters"])
    op_keys = [k for k in OP_COLORS if any(t.get(k) for t in tables)] or ["insert"]
    parts = [
        lines("events_per_hour", "Events per table and hour of the window (UTC)",
              [{"table": t, "hour_ms": h, "events": n} for (t, h), n in sorted(per_hour.items())]),
        hbar("ops_per_table", "Operations per table", [(t["table"], {k: t.get(k, 0) for k in op_keys})
                                                       for t in tables], {k: OP_COLORS[k] for k in op_keys}),
        hbar("rows_per_table", "Expected vs merged rows per table (failing tables marked)",
             [(t["table"], {"expected": t.get("expected_rows", 0), "merged": t.get("actual_rows", 0)})
              for t in tables], {"expected": EXPECTED, "merged": OK},
             marks={t["table"]: "FAIL" for t in tables if not t.get("ok")}, grouped=True),
    ]
    if reasons or sources:
        parts.append(hbar("dead_letters_by_reason", "Dead letters by reason",
                          sorted(((k, {"dead letters": v}) for k, v in reasons.items()), key=lambda kv: -kv[1]["dead letters"]),
                          {"dead letters": FAIL}))
        parts.append(hbar("dead_letters_by_source", "Dead letters by source file / partition",
                          sorted(((k, {"dead letters": v}) for k, v in sources.items()), key=lambda kv: -kv[1]["dead letters"]),
                          {"dead letters": FAIL}))
    else:
        parts.append(_empty("dead_letters_by_reason", "Dead letters by reason", "no dead letters: every record was decoded"))
        parts.append(_empty("dead_letters_by_source", "Dead letters by source file / partition",
                            "no dead letters"))
    return "<h2>Charts</h2><div class='charts'>" + "".join(parts) + "</div>"
