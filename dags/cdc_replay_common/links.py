"""The verify task's extra link to its report page, when the project's Airflow plugin provides one.

The plugin (plugins/cdc_replay_plugin) owns the link class and registers it with Airflow; the DAGs only attach
it. Without the plugin the verify task simply has no extra link: parsing must not depend on it."""

from __future__ import annotations

from typing import Any

# Names the plugin may export for the link (class or ready instance), most specific first.
_CANDIDATES = ("VerificationReportLink", "VerifyReportLink", "ReportLink")


def verify_links() -> list[Any]:
    try:
        import cdc_replay_plugin as plugin
    except Exception:  # plugin missing or broken: the DAG still parses
        return []
    for name in _CANDIDATES:
        link = getattr(plugin, name, None)
        if link is not None:
            return [link() if isinstance(link, type) else link]
    return []
