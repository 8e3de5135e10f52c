"""The Airflow plugin of the cdc-replay provider (entry point ``airflow.plugins``:
``cdc_replay_airflow.plugins:CdcReplayPlugin``):

- pages listing verification reports by DAG run and table, pass/fail at a glance, each report with its charts
  (FastAPI app at ``/cdc-replay``, behind Airflow login; in the menu through ``external_views``);
- registration of ``VerificationReportLink``, which the shared task group attaches to its verify task.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from ..links import VerificationReportLink
from .app import URL_PREFIX, app


class CdcReplayPlugin(AirflowPlugin):
    name = "cdc_replay"
    # Airflow mounts the app on its API server; every route requires an Airflow login (see app.py).
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "cdc-replay verification reports"}]
    # The menu entry ("Browse" menu); url_route shows the page inside the Airflow UI at
    # /plugin/cdc-replay-verification, where the UI's login cookie authenticates the embedded page.
    external_views = [{
        "name": "CDC verification",
        "href": f"{URL_PREFIX}/",
        "destination": "nav",
        "category": "browse",
        "url_route": "cdc-replay-verification",
    }]
    # Registered so Airflow knows the link class; it is attached to the verify task only (task_groups.replay_merge_verify, links.attach_report_link).
    operator_extra_links = [VerificationReportLink()]
