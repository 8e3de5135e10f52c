"""The dead-letter budget (``--max-dead-letters``) and the dead-letter breakdown shown by replay and verify.

A replay that turns a whole day into dead letters must not "succeed". The budget says how many dead letters a
run may have before replay exits non-zero (publishing nothing) and verify fails:

    SPEC  := ITEM[,ITEM...]        every item must hold; the budget is exceeded when any item is
    ITEM  := [table:]LIMIT         no prefix: the whole run; ``table:``: each table on its own
    LIMIT := N | P%                at most N dead letters, or at most P percent (decimal, 0..100)
    SPEC  := none                  no budget (forensics on a known-bad archive)

    run:   dead letters of the run   vs records read by the run  (P% allows floor(records * P / 100))
    table: dead letters of a table   vs that table's event rows + its dead letters
           (only dead letters whose table is known: a message that cannot be read at all names no table and
           is held by the run items)

Default (``DEFAULT_SPEC``): ``1%`` of the records read, so an unreadable archive can never pass, while the odd
corrupt line of a large day does not stop a backfill. Examples: ``0`` (no dead letter at all), ``100``,
``0.1%``, ``100,0.1%`` (both), ``1%,table:5%``.

The breakdown groups dead letters by reason (field + the codec's reason with positions and numbers blanked),
by table and by source file/partition, with an example position each; it is computed with Spark aggregations
and only the top entries reach the driver.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping, Optional

from cdc_jobs.errors import UsageError

DEFAULT_SPEC = "1%"
OPTION = "--max-dead-letters"
TOP = 10
UNKNOWN_TABLE = "(unknown)"


class DeadLetterBudgetExceeded(RuntimeError):
    """Replay over budget: a data problem, not a usage error (exit code 1, like a failed verify)."""

    user_facing = True
    exit_code = 1


@dataclass(frozen=True)
class Limit:
    scope: str  # "run" | "table"
    count: Optional[int] = None
    percent: Optional[Decimal] = None

    @property
    def text(self) -> str:
        value = f"{self.count}" if self.count is not None else f"{self.percent.normalize():f}%"
        return value if self.scope == "run" else f"table:{value}"

    def allowed(self, records: int) -> int:
        if self.count is not None:
            return self.count
        return math.floor(Decimal(records) * self.percent / 100)


@dataclass(frozen=True)
class Budget:
    spec: str
    limits: tuple[Limit, ...]

    @property
    def unlimited(self) -> bool:
        return not self.limits


_ITEM = re.compile(r"^(?:(?P<scope>run|table):)?(?:(?P<count>\d+)|(?P<pct>\d+(?:\.\d+)?|\.\d+)%)$")


def parse_budget(spec: Optional[str]) -> Budget:
    """``--max-dead-letters`` text -> Budget (None or empty: the default). Raises UsageError naming the option."""
    text = DEFAULT_SPEC if spec is None or not str(spec).strip() else str(spec).strip()
    if text.lower() in ("none", "unlimited"):
        return Budget("none", ())
    limits = []
    for raw in text.split(","):
        item = raw.strip().replace(" ", "")
        m = _ITEM.match(item)
        if not m:
            raise UsageError(f"{OPTION} {text!r}: '{raw.strip()}' is not a limit; write N (a count), P% (percent "
                             f"of records read), either prefixed 'table:' for each table, comma-separated, e.g. "
                             f"'100,0.1%' or '1%,table:5%'; 'none' for no budget")
        scope = m.group("scope") or "run"
        if m.group("count") is not None:
            limits.append(Limit(scope, count=int(m.group("count"))))
            continue
        try:
            pct = Decimal(m.group("pct"))
        except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
            raise UsageError(f"{OPTION} {text!r}: '{raw}' is not a number") from None
        if pct > 100:
            raise UsageError(f"{OPTION} {text!r}: {pct}% is more than 100%")
        limits.append(Limit(scope, percent=pct))
    return Budget(text, tuple(limits))


# ------------------------------------------------------------------------------------------------ evaluate

def evaluate(budget: Budget, records_read: int, dead_letters: int,
             tables: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """Check the budget. ``tables``: table -> (dead letters, event rows) for dead letters whose table is known.
    Returns {"spec", "ok", "checks": [...], "problems": [...]}; table checks are listed when they fail."""
    checks, problems = [], []
    for limit in budget.limits:
        if limit.scope == "run":
            allowed = limit.allowed(records_read)
            ok = dead_letters <= allowed
            checks.append({"scope": "run", "limit": limit.text, "dead_letters": dead_letters,
                           "records": records_read, "allowed": allowed, "ok": ok})
            if not ok:
                problems.append(f"{dead_letters} dead letters of {records_read} records read "
                                f"({_pct(dead_letters, records_read)}), the budget {limit.text} allows {allowed}")
            continue
        failed = 0
        for table, (dead, rows) in sorted(tables.items()):
            if table == UNKNOWN_TABLE:
                continue
            allowed = limit.allowed(rows + dead)
            if dead > allowed:
                failed += 1
                checks.append({"scope": f"table {table}", "limit": limit.text, "dead_letters": dead,
                               "records": rows + dead, "allowed": allowed, "ok": False})
                problems.append(f"table {table}: {dead} dead letters of {rows + dead} "
                                f"({_pct(dead, rows + dead)}), the budget {limit.text} allows {allowed}")
        checks.append({"scope": "each table", "limit": limit.text, "tables": len(tables), "failed": failed,
                       "ok": failed == 0})
    return {"spec": budget.spec, "ok": not problems, "checks": checks, "problems": problems}


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.2f}%" if d else "-"


# ----------------------------------------------------------------------------------------------- breakdown

# "<vendor>: field '<f>' at <source> line <n>: " / "... partition <p> offset <o>: " -> "" (the codec's reason stays)
_POSITION_PREFIX = r"^.*?: field '.*?' at .*?(?: line -?\d+| partition -?\d+ offset -?\d+): "


def breakdown(dead, top: int = TOP) -> dict[str, Any]:
    """Dead letters (a DataFrame with the dead-letter columns) by reason, table and source; top entries only."""
    from pyspark.sql import functions as F

    table = F.col("table_name") if "table_name" in dead.columns else F.lit(None).cast("string")
    reason = F.substring(F.regexp_replace(F.regexp_replace(F.coalesce(F.col("dl_reason"), F.lit("")),
                                                           _POSITION_PREFIX, ""), r"\d+", "N"), 1, 200)
    rows = dead.select(F.coalesce(F.col("format"), F.lit("")).alias("format"),
                       F.coalesce(F.col("dl_field"), F.lit("")).alias("field"), reason.alias("reason"),
                       F.coalesce(table, F.lit(UNKNOWN_TABLE)).alias("table"), "pos_source", "pos_partition",
                       "pos_offset")
    # Three small aggregations; sources and tables are few (files, partitions, tables), reasons are cut to top.
    by_reason = (rows.groupBy("format", "field", "reason")
                 .agg(F.count(F.lit(1)).alias("n"),
                      F.min(F.struct("pos_source", "pos_partition", "pos_offset")).alias("first"))
                 .orderBy(F.desc("n"), "field", "reason").limit(top).collect())
    by_table = rows.groupBy("table").agg(F.count(F.lit(1)).alias("n")).collect()
    by_source = sorted(rows.groupBy("pos_source", "pos_partition")
                       .agg(F.count(F.lit(1)).alias("n"), F.min("pos_offset").alias("first"),
                            F.max("pos_offset").alias("last")).collect(),
                       key=lambda r: (-r["n"], r["pos_source"] or "", r["pos_partition"] or 0))
    return {
        "total": sum(r["n"] for r in by_table),
        "by_reason": [{"format": r["format"], "field": r["field"], "reason": r["reason"], "dead_letters": r["n"],
                       "example": _where(r["first"]["pos_source"], r["first"]["pos_partition"],
                                         r["first"]["pos_offset"])} for r in by_reason],
        "by_table": {r["table"]: r["n"] for r in sorted(by_table, key=lambda r: (-r["n"], r["table"]))},
        "by_source": [{"source": r["pos_source"], "partition": r["pos_partition"], "dead_letters": r["n"],
                       "first_offset": r["first"], "last_offset": r["last"]} for r in by_source[:top]],
        "sources_with_dead_letters": len(by_source),
    }


NONE = {"total": 0, "by_reason": [], "by_table": {}, "by_source": [], "sources_with_dead_letters": 0}


def _where(source: str, partition: Optional[int], offset: Optional[int]) -> str:
    if partition is None or partition < 0:
        return f"{source} line {offset}"
    return f"{source} partition {partition} offset {offset}"


def table_counts(by_table: Mapping[str, int], events: Mapping[str, Mapping[str, int]]) -> dict[str, tuple[int, int]]:
    """table -> (dead letters, event rows) for the per-table limits."""
    out = {}
    for table, dead in by_table.items():
        rows = sum((events.get(table) or {}).values())
        out[table] = (int(dead), int(rows))
    return out


def summary_lines(evaluation: Mapping, dead: Mapping, top: int = 3) -> list[str]:
    """The budget problems, then the top reasons and sources: what a user needs to decide what broke."""
    lines = list(evaluation.get("problems", []))
    for r in dead.get("by_reason", [])[:top]:
        lines.append(f"top reason: {r['dead_letters']} x {r['format']} field '{r['field']}': {r['reason']} "
                     f"(e.g. {r['example']})")
    for s in dead.get("by_source", [])[:top]:
        span = (f"lines {s['first_offset']}-{s['last_offset']}" if s["partition"] is None or s["partition"] < 0
                else f"partition {s['partition']} offsets {s['first_offset']}-{s['last_offset']}")
        lines.append(f"top source: {s['dead_letters']} in {s['source']} ({span})")
    return lines
