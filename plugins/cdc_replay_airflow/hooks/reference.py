"""The source database verify counts rows against, from an Airflow connection."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook

from ..plan import REFERENCE_ENV  # the job reads it through `verify --reference env:...` (the plan says so)

# SQLAlchemy drivers the project installs, by Airflow connection type.
SQLALCHEMY_DRIVERS = {"mysql": "mysql+pymysql", "postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2"}


def sqlalchemy_url(conn: Any) -> str:
    """An Airflow connection -> SQLAlchemy URL. An explicit `sqlalchemy_url` in the extra wins."""
    extra = conn.extra_dejson or {}
    if extra.get("sqlalchemy_url"):
        return extra["sqlalchemy_url"]
    driver = SQLALCHEMY_DRIVERS.get(conn.conn_type, conn.conn_type)
    auth = ""
    if conn.login:
        auth = quote(conn.login, safe="") + (f":{quote(conn.password, safe='')}" if conn.password else "") + "@"
    port = f":{conn.port}" if conn.port else ""
    return f"{driver}://{auth}{conn.host or ''}{port}/{conn.schema or ''}"


class ReferenceDatabaseHook(BaseHook):
    """`reference_conn_id` (mysql/postgres connection, or any with extra.sqlalchemy_url) -> the environment
    variable `cdc-replay verify --reference env:CDC_REPLAY_REFERENCE_URL` reads."""

    conn_name_attr = "reference_conn_id"
    hook_name = "cdc-replay reference database"

    def __init__(self, reference_conn_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reference_conn_id = reference_conn_id

    def get_url(self) -> str:
        return sqlalchemy_url(self.get_connection(self.reference_conn_id))

    def job_env(self) -> dict[str, str]:
        return {REFERENCE_ENV: self.get_url()}

    def job_args(self) -> str:
        """The --reference value: names the variable, never holds the URL."""
        return f"env:{REFERENCE_ENV}"
