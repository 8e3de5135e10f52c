"""Airflow plugin of cdc-replay (entry point ``airflow.plugins``: ``cdc_replay_plugin:CdcReplayPlugin``).

- a page listing verification reports by DAG run and table, pass/fail at a glance, with links to each report
  (FastAPI app at ``/cdc-replay``, behind Airflow login; in the menu through ``external_views``);
- ``VerificationReportLink``, the verify task's extra link to its report (see ``links.attach_report_link``).

Names are resolved lazily so that a DAG file importing the link class does not build the web app.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CdcReplayPlugin", "VerificationReportLink", "attach_report_link"]


def __getattr__(name: str) -> Any:
    if name == "CdcReplayPlugin":
        from .plugin import CdcReplayPlugin

        return CdcReplayPlugin
    if name in ("VerificationReportLink", "attach_report_link", "report_url"):
        from . import links

        return getattr(links, name)
    raise AttributeError(f"module 'cdc_replay_plugin' has no attribute {name!r}")
