"""Per-table Assets: the daily DAG announces every table whose state it rebuilt and verified, so a user's DAG
can run when, say, `shop.orders` of pipeline `shop` is rebuilt (also by a backfill or a re-run of a day):

    from cdc_replay_airflow.assets import table_asset

    with DAG("orders_report", schedule=[table_asset("shop", "shop.orders")], ...):
        ...

The daily DAG does not know the tables before a run (a pipeline's tables are globs), so its publish task emits
the events through the `ALIAS` AssetAlias; Airflow registers each table's Asset with its first event. Each event's
extra holds the day, the state directory, the verified row count and the published Delta table (``table``).
"""

from __future__ import annotations

ALIAS_NAME = "cdc_replay_tables"


def table_asset(pipeline: str, table: str):
    from airflow.sdk import Asset

    return Asset(name=f"cdc_replay/{pipeline}/{table}", uri=f"cdc-replay://{pipeline}/{table}", group="cdc-replay")


def alias():
    from airflow.sdk import AssetAlias

    return AssetAlias(ALIAS_NAME)
