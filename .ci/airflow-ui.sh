#!/usr/bin/env bash
# `make ui`: the Airflow UI on http://localhost:${AIRFLOW__API__PORT:-8080} with the project's DAGs, plugin and
# sample pipeline (airflow standalone: SQLite, LocalExecutor, scheduler + dag-processor + triggerer + API
# server in one process tree), sized for a small machine. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/airflow-env.sh --migrate
# Small machine: few task processes, one API worker (standalone's defaults fork ~32 processes, ~5 GB).
export AIRFLOW__API__WORKERS="${AIRFLOW__API__WORKERS:-1}"
export AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="${AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT:-600}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-admin:admin}"

if [[ ! -d var/sample/archive ]]; then
  echo "building the sample archive the sample pipeline reads (var/sample/archive)"
  cdc-replay sample --format canal-json --out var/sample/archive --expected var/sample/expected.json
fi

port="$AIRFLOW__API__PORT"
log="$AIRFLOW_HOME/standalone.log"
airflow standalone >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null' INT TERM EXIT
echo "starting airflow standalone (pid $pid, log $log) ..."
for _ in $(seq 1 180); do
  if ! kill -0 "$pid" 2>/dev/null; then echo "airflow standalone exited; see $log" >&2; tail -n 30 "$log" >&2; exit 1; fi
  if curl -fsS "http://localhost:$port/api/v2/monitor/health" >/dev/null 2>&1; then break; fi
  sleep 2
done
passwords="$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
user="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS%%:*}"
password=$(python -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "?"))' "$passwords" "$user" 2>/dev/null || echo "?")
cat <<MSG

  Airflow UI:  http://localhost:$port
  log in as:   $user
  password:    $password      (generated; stored in $passwords)
  DAGs:        cdc_replay (trigger with the form; pick pipeline 'sample_shop'), cdc_daily_replay (paused)
  Ctrl-C stops Airflow.

MSG
wait "$pid"
