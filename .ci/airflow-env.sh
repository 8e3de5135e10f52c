#!/usr/bin/env bash
# Source me: the embedded-default Airflow environment of this checkout (SQLite, local Spark, the repo's DAGs,
# plugin and sample pipelines). Used by `make demo`, `make ui` and the Airflow tests.
#   source .ci/airflow-env.sh            # exports only
#   source .ci/airflow-env.sh --migrate  # also creates/upgrades the metadata DB when needed
_cdc_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_cdc_bin="$_cdc_repo/.venv/bin"

export CDC_REPLAY_HOME="$_cdc_repo"
export PATH="$_cdc_bin:$PATH"                     # spark-submit, airflow and cdc-replay of the venv
export AIRFLOW_HOME="${AIRFLOW_HOME:-$_cdc_repo/var/airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$_cdc_repo/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$AIRFLOW_HOME/plugins"   # the project's plugin loads by entry point
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"  # standalone forks this many workers
export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="${AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG:-4}"
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
# timeout=60: the standalone's processes and the CLI (e.g. `airflow backfill create`) write to SQLite at once;
# wait for the lock instead of failing with "database is locked" after pysqlite's default 5 s.
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///$AIRFLOW_HOME/airflow.db?timeout=60}"
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="${AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL:-30}"
export AIRFLOW__API__PORT="${AIRFLOW__API__PORT:-8080}"
# Task processes report to the API server's execution API. Airflow's default is http://localhost:8080 whatever
# the port, so on any other port tasks would fail (or talk to another Airflow on 8080): derive it from the port.
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://127.0.0.1:$AIRFLOW__API__PORT/execution/}"
export AIRFLOW__LOGGING__LOGGING_LEVEL="${AIRFLOW__LOGGING__LOGGING_LEVEL:-INFO}"
# Spark: the embedded default is local mode; every other cluster is only a different connection.
export AIRFLOW_CONN_SPARK_DEFAULT="${AIRFLOW_CONN_SPARK_DEFAULT:-{\"conn_type\":\"spark\",\"host\":\"local[2]\"}}"
export PYSPARK_PYTHON="$_cdc_bin/python"
export PYSPARK_DRIVER_PYTHON="$_cdc_bin/python"
export CDC_REPLAY_SHUFFLE_PARTITIONS="${CDC_REPLAY_SHUFFLE_PARTITIONS:-4}"
# Project settings read by the DAGs.
export CDC_REPLAY_PIPELINES="${CDC_REPLAY_PIPELINES:-$_cdc_repo/dags/pipelines.sample.yaml}"
export CDC_REPLAY_REPORTS_DIR="${CDC_REPLAY_REPORTS_DIR:-$_cdc_repo/var/reports}"
export CDC_REPLAY_OUTPUT_ROOT="${CDC_REPLAY_OUTPUT_ROOT:-$_cdc_repo/var/output}"
# Trigger-form paths (source, out_dir, base, checkpoint) must lie under these (`:`-separated).
export CDC_REPLAY_DATA_ROOTS="${CDC_REPLAY_DATA_ROOTS:-$_cdc_repo/var}"
export CDC_REPLAY_DAILY_START="${CDC_REPLAY_DAILY_START:-2023-12-31}"

mkdir -p "$AIRFLOW_HOME" "$AIRFLOW__CORE__PLUGINS_FOLDER" "$CDC_REPLAY_REPORTS_DIR" "$CDC_REPLAY_OUTPUT_ROOT"

if [[ "${1:-}" == "--migrate" ]]; then
  # `airflow db migrate` is idempotent but costs seconds: skip it when this Airflow version already migrated.
  _cdc_stamp="$AIRFLOW_HOME/.migrated-$("$_cdc_bin/python" -c 'import airflow; print(airflow.__version__)')"
  if [[ ! -f "$_cdc_stamp" || ! -f "$AIRFLOW_HOME/airflow.db" ]]; then
    "$_cdc_bin/airflow" db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 \
      || { cat "$AIRFLOW_HOME/db-migrate.log" >&2; return 1 2>/dev/null || exit 1; }
    touch "$_cdc_stamp"
  fi
fi
unset _cdc_repo _cdc_bin _cdc_stamp
