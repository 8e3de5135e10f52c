"""The verify task's extra link ("Verification report") to its run's report page in the plugin.

The one way it is attached: `task_groups.replay_merge_verify` wraps its verify task in `attach_report_link`
(the link is for that task only, not every operator of its type). The provider (get_provider_info) and the
plugin register the class so Airflow can show it.

Airflow 3 computes the link on the worker when the task finishes (also when it fails) and stores it as an XCom;
the UI shows the button from that. The URL is ``[api] base_url`` (if set) + ``/cdc-replay/reports/<dag>/<run>``.
"""

from __future__ import annotations

from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

URL_PREFIX = "/cdc-replay"  # same as app.URL_PREFIX; kept here so workers need not import FastAPI


def report_url(dag_id: str, run_id: str, base_url: str = "") -> str:
    return f"{base_url.rstrip('/')}{URL_PREFIX}/reports/{quote(dag_id, safe='')}/{quote(run_id, safe='')}"


def _base_url() -> str:
    try:
        from airflow.configuration import conf

        return conf.get("api", "base_url", fallback="") or ""
    except Exception:  # no configuration available (e.g. parsing outside Airflow): a relative link still works
        return ""


class VerificationReportLink(BaseOperatorLink):
    name = "Verification report"

    def get_link(self, operator, *, ti_key) -> str:
        return report_url(ti_key.dag_id, ti_key.run_id, _base_url())


def attach_report_link(operator):
    """Adds the link to this one operator instance and returns it."""
    links = list(getattr(operator, "operator_extra_links", ()) or ())
    if not any(isinstance(link, VerificationReportLink) for link in links):
        links.append(VerificationReportLink())
    operator.operator_extra_links = links
    return operator
