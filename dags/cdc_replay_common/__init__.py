"""Wiring shared by the cdc-replay DAG files: the pipelines file model, its validation, and the exact
`cdc-replay` arguments each Spark task gets. Pure Python and cheap to import (no pyspark, no airflow at module
level): the DAG processor imports it on every parse."""
