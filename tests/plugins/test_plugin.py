"""The Airflow plugin: it loads in Airflow, its page lists the verification reports of DAG runs by run and table
with pass/fail and links, the report link of the verify task leads to the report, and nobody gets in without
an Airflow login."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cdc_jobs.io.reports import write_reports
from cdc_replay_airflow.plugins.app import URL_PREFIX, app, require_login
from cdc_replay_airflow.links import VerificationReportLink, attach_report_link, report_url

DAG_ID = "cdc_replay_shop"
GOOD_RUN = "scheduled__2024-01-02T00:00:00+00:00"
BAD_RUN = "manual__2024-01-03T10:00:00+00:00"
DAILY_RUN = "scheduled__2024-01-04T00:00:00+00:00"


def _table(name, expected, actual, problems=()):
    return {"table": name, "expected_rows": expected, "actual_rows": actual, "ok": not problems,
            "problems": list(problems), "snapshot": 0, "insert": expected, "update": 1, "delete": 0, "truncate": 0,
            "base_rows": 0, "reference_rows": None, "reference_expected_rows": None, "reference_ok": None,
            "reference_taken_at": None, "in_state": True}


@pytest.fixture
def reports_root(tmp_path, monkeypatch):
    """The reports two verify runs of a DAG leave behind (written by the same function verify uses)."""
    root = tmp_path / "cdc-replay-reports"
    monkeypatch.setenv("CDC_REPLAY_REPORTS_DIR", str(root))
    good = [_table("shop.customers", 35, 35), _table("shop.order_items", 24, 24)]
    bad = [_table("shop.customers", 35, 35),
           _table("shop.order_items", 24, 23, ["expected 24 rows (implied by the events), state has 23 (-1)"])]
    for run, tables in ((GOOD_RUN, good), (BAD_RUN, bad)):
        d = root / DAG_ID / run
        ok = all(t["ok"] for t in tables)
        write_reports(tables, {"ok": ok, "generated_at": "2024-01-03T10:05:00.000Z", "replays": []},
                      d / "verification.json", d / "verification.html")
    # the daily DAG verifies each pipeline of a run separately: <dag>/<run>/<pipeline>/
    d = root / "cdc_daily_replay" / DAILY_RUN / "shop"
    write_reports(good, {"ok": True, "generated_at": "2024-01-04T01:00:00.000Z", "replays": []},
                  d / "verification.json")
    (root / DAG_ID / "manual__broken").mkdir()
    (root / DAG_ID / "manual__broken" / "verification.json").write_text("{not json")
    return root


@pytest.fixture
def client():
    parent = FastAPI()
    parent.mount(URL_PREFIX, app)  # as the Airflow API server mounts it
    app.dependency_overrides[require_login] = lambda: None  # a logged-in user
    yield TestClient(parent)
    app.dependency_overrides.clear()


def test_page_lists_runs_by_dag_run_and_table_with_links(reports_root, client):
    page = client.get(f"{URL_PREFIX}/")
    assert page.status_code == 200
    html = page.text
    assert DAG_ID in html and GOOD_RUN in html and BAD_RUN in html
    assert "PASSED" in html and "FAILED" in html and "UNREADABLE" in html
    assert "shop.order_items 23/24" in html and "shop.customers 35/35" in html
    assert "4 report(s), 2 failed" in html
    api = {r["run_id"]: r for r in client.get(f"{URL_PREFIX}/api/reports").json()}
    assert api[DAILY_RUN]["pipeline"] == "shop" and api[DAILY_RUN]["ok"]
    assert api[GOOD_RUN]["status"] == "passed" and api[BAD_RUN]["status"] == "failed"
    assert api[BAD_RUN]["failed_tables"] == ["shop.order_items"]
    assert api["manual__broken"]["status"] == "unreadable"
    # one table across runs
    items = client.get(f"{URL_PREFIX}/api/reports", params={"table": "shop.order_items"}).json()
    assert {(r["run_id"], r["ok"]) for r in items} == {(GOOD_RUN, True), (BAD_RUN, False), (DAILY_RUN, True)}
    assert all([t["table"] for t in r["tables"]] == ["shop.order_items"] for r in items)
    assert "?table=shop.order_items" in html
    # every report link on the page works
    links = [part.split("'")[0] for part in html.split("href='")[1:] if not part.startswith("?")]
    assert len(links) == 8
    for link in links:
        r = client.get(link.replace("&amp;", "&"))
        broken = "manual__broken" in link
        assert r.status_code == (422 if broken else 200), link  # the unreadable report says so
    report = client.get(report_url(DAG_ID, BAD_RUN))
    assert report.status_code == 200 and "shop.order_items" in report.text and "FAIL" in report.text
    data = client.get(f"{URL_PREFIX}/api/reports/{DAG_ID}/{BAD_RUN}").json()
    assert [t["ok"] for t in data["tables"]] == [True, False] and data["accounting"]["ok"] is False


def test_run_link_of_a_per_pipeline_dag_lists_its_pipelines(reports_root, client):
    page = client.get(report_url("cdc_daily_replay", DAILY_RUN))
    assert page.status_code == 200 and "shop" in page.text and "PASSED" in page.text
    # no HTML was written for the pipeline: its page is rendered from the JSON
    pipe = client.get(report_url("cdc_daily_replay", DAILY_RUN) + "/shop")
    assert pipe.status_code == 200 and "shop.order_items" in pipe.text


def test_report_rendered_from_json_when_no_html_and_bad_paths_refused(reports_root, client):
    (reports_root / DAG_ID / GOOD_RUN / "verification.html").unlink()
    r = client.get(report_url(DAG_ID, GOOD_RUN))
    assert r.status_code == 200 and "shop.customers" in r.text
    for chart in ("events_per_hour", "ops_per_table", "rows_per_table", "dead_letters_by_reason",
                  "dead_letters_by_source"):  # the run page shows the report's charts
        assert f"data-chart='{chart}'" in r.text, chart
    assert client.get(report_url(DAG_ID, "manual__never")).status_code == 404
    assert client.get(f"{URL_PREFIX}/reports/..%2F..%2Fetc/passwd").status_code in (400, 404)
    assert client.get(f"{URL_PREFIX}/reports/../{GOOD_RUN}").status_code in (400, 404)
    only = client.get(f"{URL_PREFIX}/api/reports", params={"dag_id": "other"}).json()
    assert only == []


def test_anonymous_requests_are_refused(reports_root):
    parent = FastAPI()
    parent.mount(URL_PREFIX, app)
    anon = TestClient(parent)
    for path in ("/", "/api/reports", f"/reports/{DAG_ID}/{GOOD_RUN}", f"/reports/{DAG_ID}/{GOOD_RUN}/json"):
        r = anon.get(URL_PREFIX + path)
        assert r.status_code in (401, 403), path
        assert "shop.customers" not in r.text


def test_verify_task_link_points_at_its_runs_report():
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG(DAG_ID, schedule=None) as dag:
        verify = attach_report_link(EmptyOperator(task_id="verify"))
        EmptyOperator(task_id="merge")
    restored = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    assert [link.name for link in restored.task_dict["verify"].operator_extra_links] == ["Verification report"]
    assert not restored.task_dict["merge"].operator_extra_links

    class Key:  # what the task runner passes as ti_key
        dag_id, run_id, task_id = DAG_ID, BAD_RUN, "verify"

    (link,) = verify.operator_extra_links
    assert isinstance(link, VerificationReportLink)
    url = link.get_link(verify, ti_key=Key())
    assert url.endswith(f"/cdc-replay/reports/{DAG_ID}/manual__2024-01-03T10%3A00%3A00%2B00%3A00")


@pytest.mark.airflow
def test_airflow_loads_the_plugin_and_its_pages_need_a_login(reports_root, tmp_path):
    """In a fresh AIRFLOW_HOME: `airflow plugins` lists it; through Airflow's own API app, anonymous and bad
    tokens are refused and a logged-in viewer sees the reports."""
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__API_AUTH__JWT_SECRET": "test-secret-for-plugin-test",
           "CDC_REPLAY_REPORTS_DIR": str(reports_root)}
    bindir = Path(sys.executable).parent
    listed = subprocess.run([str(bindir / "airflow"), "plugins", "-o", "json"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout[listed.stdout.index("["):])}
    ours = plugins["cdc_replay"]
    assert "/cdc-replay" in str(ours["fastapi_apps"]) and "cdc-replay-verification" in str(ours["external_views"])
    assert "VerificationReportLink" in str(ours["operator_extra_links"])

    migrate = subprocess.run([str(bindir / "airflow"), "db", "migrate"], env=env, capture_output=True, text=True,
                             timeout=300)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    script = textwrap.dedent("""
        import json
        from fastapi.testclient import TestClient
        from airflow.api_fastapi.app import create_app, get_auth_manager
        from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
        c = TestClient(create_app())
        out = {"anonymous": c.get("/cdc-replay/").status_code,
               "bad_token": c.get("/cdc-replay/", headers={"Authorization": "Bearer x.y.z"}).status_code}
        token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="viewer", role="VIEWER"))
        c.cookies.set("_token", token)  # what the UI's login sets; the menu entry opens the page with it
        page = c.get("/cdc-replay/")
        out["viewer"] = page.status_code
        out["lists_runs"] = "scheduled__2024-01-02T00:00:00+00:00" in page.text
        print("RESULT" + json.dumps(out))
    """)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, run.stderr[-3000:]
    result = json.loads(line[len("RESULT"):])
    assert result["anonymous"] == 401 and result["bad_token"] in (401, 403)
    assert result["viewer"] == 200 and result["lists_runs"]
