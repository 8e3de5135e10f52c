"""The Airflow UI as a user drives it, in headless Chromium against a real `airflow standalone` (what `make ui`
starts): log in with the generated password, fill the cdc_replay trigger form with an ad-hoc source, trigger,
let the standalone scheduler run the DAG on local Spark, then open the run and the plugin's verification report
through the verify task's extra link, and check its charts. Screenshots go to test-artifacts/ at the repo root
(test-artifacts/report-charts.png: the report's charts).

The source is an oms-shareplex archive, which names no key columns: the form's primary keys make it mergeable. The
form also asks for a target format, a reference database and Kafka client settings, both Airflow connections with
passwords (added through the REST API, as the UI's Connections page does): the tables are counted through the
reference's URL, the jobs' arguments and progress lines reach the task logs, and no password shows in any log or
output."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from services import missing, require_module

from .conftest import REPO
from .dag_runs import REFERENCE_DB, reference_tables, table_rows

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
BIN = Path(sys.executable).parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
UI_TIMEOUT_MS = 60_000  # one page action on a busy 2-core machine
RUN_TIMEOUT_S = 900  # validate + three spark-submits, scheduled by the standalone

pytestmark = [
    pytest.mark.browser,
    pytest.mark.airflow,
    pytest.mark.db,  # the reference database (PostgreSQL)
    pytest.mark.xdist_group("airflow-standalone"),  # shares the session's standalone with test_backfill
    pytest.mark.usefixtures("chromium"),
]


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} is missing (Debian package 'chromium': apt-get install -y chromium)")
    return CHROMIUM


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"browser-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def toasts(page) -> list[str]:
    """The notifications the UI shows (success or error), as a user reads them."""
    return [t.strip() for t in page.locator("[role=status], [role=alert]").all_inner_texts() if t.strip()]


def wait_until_triggered(page, sa, trigger, run_id: str, timeout: float = 180) -> None:
    """The run exists once the UI's trigger request was accepted. The success toast is transient (gone after a
    few seconds on a busy machine), so the run is confirmed through the API. If the UI reported an error (SQLite
    allows one writer: a trigger racing the scheduler can fail with "database is locked"), the user clicks
    Trigger again; the fixed run id makes a duplicate impossible. A poll the busy API server does not answer
    within its timeout is asked again until the deadline."""
    path = f"/api/v2/dags/cdc_replay/dagRuns/{quote(run_id, safe='')}"
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        try:
            status, _ = sa._request("GET", path, token=sa.token())
        except OSError:  # the API server did not answer in time (SQLite, a loaded machine): ask again
            status = None
        if status == 200:
            return
        new = [t for t in toasts(page) if t not in seen]
        seen += new
        if any("error" in t.lower() or "fail" in t.lower() for t in new) and trigger.is_visible() \
                and trigger.is_enabled():
            trigger.click()
        time.sleep(2)
    pytest.fail(f"run {run_id} was not created {timeout:.0f}s after Trigger; the UI showed: {seen}\n"
                f"{sa.log_tail()}")


@pytest.fixture
def sync_api():
    """Requested first, so a missing playwright skips before the standalone starts."""
    return require_module("playwright.sync_api", "the Python package 'playwright' is not installed "
                                                 "(the 'test' extra pins it)")


SECRET_DB, SECRET_KAFKA = "pg-Secret-4711", "sasl-Secret-0815"
PRIMARY_KEYS = ["shop.customers=id", "shop.order_items=order_id,line_no"]


def add_connections(sa) -> None:
    """A reference database whose URL carries a password (PostgreSQL here trusts local connections: the password is
    carried, never checked; what matters is where it appears) and Kafka SASL settings."""
    for conn in ({"connection_id": "shop_reference", "conn_type": "postgres", "host": "127.0.0.1", "port": 5432,
                  "login": "postgres", "password": SECRET_DB, "schema": REFERENCE_DB},
                 {"connection_id": "kafka_shop", "conn_type": "kafka", "login": "svc", "password": SECRET_KAFKA,
                  "extra": json.dumps({"security.protocol": "SASL_PLAINTEXT"})}):
        sa.api("DELETE", f"/connections/{conn['connection_id']}", ok=(200, 204, 404))
        sa.api("POST", "/connections", conn)


def pick(dialog, page, field: str, value: str) -> None:
    """A searchable list: type to filter, Enter picks; the list then shows what was picked."""
    box = dialog.locator(f"#element_{field}")
    box.get_by_role("combobox").fill(value)
    page.get_by_role("option", name=value, exact=True).wait_for()
    box.get_by_role("combobox").press("Enter")
    box.get_by_text(value, exact=True).wait_for()


def test_trigger_form_run_and_verification_report(sync_api, airflow_standalone, tmp_path):
    sa = airflow_standalone
    archive, expected = tmp_path / "archive", tmp_path / "expected.json"
    subprocess.run([str(BIN / "cdc-replay"), "sample", "--format", "oms-shareplex", "--out", str(archive),
                    "--rows", "20", "--changes", "60", "--expected", str(expected)],
                   env=sa.env, check=True, capture_output=True, timeout=300)
    truth = json.loads(expected.read_text())
    out_dir = tmp_path / "run"
    run_id = f"browser_{int(time.time())}"
    add_connections(sa)

    with reference_tables(truth), sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=UI_TIMEOUT_MS)
        page = None
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1200})
            context.set_default_timeout(UI_TIMEOUT_MS)
            page = context.new_page()

            # -- log in with the generated password ---------------------------------------------------------
            page.goto(sa.url + "/", timeout=UI_TIMEOUT_MS)
            page.wait_for_url("**/auth/login**")
            page.get_by_label("Username").fill(sa.user)
            page.get_by_label("Password").fill(sa.password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(lambda url: "/auth/login" not in url)

            # -- the trigger form: ad-hoc source, format, tables, output directory, run id -----------------
            page.goto(f"{sa.url}/dags/cdc_replay")
            page.get_by_role("button", name="Trigger").first.click()
            dialog = page.get_by_role("dialog")
            dialog.get_by_text("Trigger Dag - cdc_replay").wait_for()
            unpause = dialog.get_by_text("Unpause cdc_replay on trigger")
            if unpause.count():  # paused at creation: the run would wait forever
                box = dialog.get_by_role("checkbox", name="Unpause cdc_replay on trigger")
                if not box.is_checked():
                    unpause.click()
            dialog.get_by_role("button", name="Tables", exact=True).click()
            dialog.locator("#element_tables").fill("shop.*")
            dialog.locator("#element_primary_key").fill("\n".join(PRIMARY_KEYS))  # a list: one entry per line
            dialog.get_by_role("button", name="Target", exact=True).click()
            pick(dialog, page, "to_format", "oms-default")
            dialog.locator("#element_out_dir").fill(str(out_dir))
            dialog.get_by_role("button", name="Verify", exact=True).click()
            dialog.locator("#element_reference_conn_id").fill("shop_reference")
            dialog.get_by_role("button", name="Advanced Options", exact=True).click()
            dialog.get_by_label("Run ID").fill(run_id)
            dialog.get_by_role("button", name="Source", exact=True).click()
            dialog.locator("#element_source").fill(str(archive))
            dialog.locator("#element_kafka_config").fill("kafka_shop")
            pick(dialog, page, "format", "oms-shareplex")
            trigger = dialog.get_by_role("button", name="Trigger", exact=True)
            assert trigger.is_enabled(), "the trigger form reports invalid fields"
            form_png = shot(page, "1-trigger-form")
            trigger.click()
            wait_until_triggered(page, sa, trigger, run_id)

            # -- the run, executed by the standalone's scheduler ------------------------------------------
            conf = sa.api("GET", f"/dags/cdc_replay/dagRuns/{quote(run_id, safe='')}")["conf"]
            assert conf["source"] == str(archive) and conf["format"] == "oms-shareplex", conf
            assert conf["tables"] == ["shop.*"] and conf["out_dir"] == str(out_dir), conf
            assert conf["primary_key"] == PRIMARY_KEYS and conf["to_format"] == "oms-default", conf
            assert conf["reference_conn_id"] == "shop_reference" and conf["kafka_config"] == "kafka_shop", conf
            run = sa.wait_for_run("cdc_replay", run_id, timeout=RUN_TIMEOUT_S)
            assert run["state"] == "success", f"run {run_id} {run['state']}:\n{sa.log_tail()}"
            page.goto(f"{sa.url}/dags/cdc_replay/runs/{quote(run_id, safe='')}")
            page.get_by_text(run_id).first.wait_for()
            page.get_by_text("Success").first.wait_for()
            run_png = shot(page, "2-successful-run")

            # -- the verification report, through the verify task's extra link (task instance > Details) ----
            page.goto(f"{sa.url}/dags/cdc_replay/runs/{quote(run_id, safe='')}/tasks/jobs.verify")
            page.get_by_role("link", name="Details", exact=True).click()
            link = page.get_by_role("link", name="Verification report")
            link.wait_for()
            href = link.get_attribute("href") or ""
            assert href.endswith(f"/cdc-replay/reports/cdc_replay/{quote(run_id, safe='')}"), href
            link.click()  # same origin: opens in this tab, authenticated by the UI's login cookie
            page.wait_for_url("**/cdc-replay/reports/**")
            page.get_by_text("Tables", exact=True).wait_for()
            text = page.locator("body").inner_text()
            report_png = shot(page, "3-verification-report")
            # -- its charts: inline SVG, drawn by the browser with nothing fetched --------------------------
            charts = page.locator("svg[data-chart]")
            names = charts.evaluate_all("els => els.map(e => e.dataset.chart)")
            sizes = charts.evaluate_all("els => els.map(e => [e.getBoundingClientRect().width, "
                                        "e.getBoundingClientRect().height])")
            series = page.locator("svg[data-chart=events_per_hour] polyline").evaluate_all(
                "els => els.map(e => e.dataset.series)")
            bars = page.locator("svg[data-chart=rows_per_table] rect title").all_text_contents()  # SVG <title> has no innerText
            page.locator("svg[data-chart=events_per_hour]").scroll_into_view_if_needed()
            charts_png = ARTIFACTS / "report-charts.png"  # kept: the report with its charts, as a user sees it
            page.locator("div.charts").screenshot(path=str(charts_png))
        except Exception:
            if page is not None and not page.is_closed():
                try:
                    shot(page, "failure")  # what the browser showed when the test gave up
                except Exception:  # the original error matters more than a missing screenshot
                    pass
            raise
        finally:
            browser.close()

    for table in truth:
        assert table in text, f"{table} missing from the report page:\n{text[:2000]}"
    assert "FAIL" not in text, text[:2000]  # the report's badges read "ok" or "FAIL"
    api = sa._request("GET", f"/cdc-replay/api/reports/cdc_replay/{quote(run_id, safe='')}", token=sa.token())[1]
    results = {t["table"]: t for t in api["tables"]}
    assert set(results) == set(truth), results
    for table, rows in truth.items():
        assert results[table]["ok"] and results[table]["actual_rows"] == len(rows), results[table]
    assert names == ["events_per_hour", "ops_per_table", "rows_per_table", "dead_letters_by_reason",
                     "dead_letters_by_source"], names
    assert all(w > 100 and h > 30 for w, h in sizes), sizes  # drawn, not collapsed
    assert sorted(series) == sorted(truth), series  # one line per table
    for table, rows in truth.items():
        assert f"{table} merged: {len(rows)}" in bars, bars

    # What the run wrote, as the shareplex user checks it: every table verified and counted in the reference
    # database through its connection's URL, merged (read by delta-rs), and re-encoded in the target format.
    report = json.loads((sa.home / "reports" / "cdc_replay" / run_id / "verification.json").read_text())
    for r in report:
        assert r["ok"] and r["reference_rows"] == r["actual_rows"] == len(truth[r["table"]]), r
    assert set(table_rows(out_dir / "state")) == set(truth)
    assert (out_dir / "replay" / "encoded").is_dir()
    logs = [*sa.home.rglob("*.log")]
    runs = "\n".join(p.read_text(errors="replace") for p in logs if f"run_id={run_id}" in str(p))
    assert "--primary-key=shop.order_items=order_id,line_no" in runs  # the job's exact arguments are logged
    assert "progress" in runs  # the jobs' plain progress lines reach the task log
    # Secrets: not in the logs (task logs included), reports, counts.json or any other output file.
    outputs = [p for p in [*out_dir.rglob("*"), *(sa.home / "reports" / "cdc_replay" / run_id).rglob("*")]
               if p.is_file()]
    assert any(p.name == "counts.json" for p in outputs)
    for path in logs + outputs:
        data = path.read_bytes()
        for secret in (SECRET_DB, SECRET_KAFKA):
            assert secret.encode() not in data, f"{secret} found in {path}"
    for png in (form_png, run_png, report_png, charts_png):
        assert png.stat().st_size > 10_000, png  # a real rendering, not a blank page
    print(f"screenshots: {form_png}, {run_png}, {report_png}, {charts_png}")
