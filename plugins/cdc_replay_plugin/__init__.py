"""Airflow plugin of cdc-replay (entry point ``airflow.plugins``: ``cdc_replay_plugin:CdcReplayPlugin``).

- a page listing verification reports by DAG run and table, pass/fail at a glance, with links to each report
  (FastAPI app at ``/cdc-replay``, behind Airflow login; in the menu through ``external_views``);
- ``VerificationReportLink``, the verify task's extra link to its report (see ``links.attach_report_link``).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from .links import VerificationReportLink, attach_report_link

__all__ = ["CdcReplayPlugin", "VerificationReportLink", "attach_report_link"]


def _app():
    from .app import URL_PREFIX, app

    return {"app": app, "url_prefix": URL_PREFIX, "name": "cdc-replay verification reports"}


class CdcReplayPlugin(AirflowPlugin):
    name = "cdc_replay"
    fastapi_apps = [_app()]
    external_views = [{
        "name": "CDC verification",
        "href": "/cdc-replay/",
        "destination": "nav",
        "category": "browse",
        "url_route": "cdc-replay-verification",  # shown inside the Airflow UI at /plugin/cdc-replay-verification
    }]
    operator_extra_links = [VerificationReportLink()]
