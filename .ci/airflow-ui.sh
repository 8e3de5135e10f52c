#!/usr/bin/env bash
# `make ui`: the Airflow UI on http://localhost:${AIRFLOW__API__PORT:-8080} with the project's DAGs, plugin and
# sample pipeline (airflow standalone: SQLite, LocalExecutor, scheduler + dag-processor + triggerer + API
# server in one process tree), sized for a small machine. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/airflow-env.sh --migrate
# Small machine: few task processes, one API worker (standalone's defaults fork ~32 processes, ~5 GB).
export AIRFLOW__API__WORKERS="${AIRFLOW__API__WORKERS:-1}"
export AIRFLOW__API__HOST="${AIRFLOW__API__HOST:-127.0.0.1}"  # this machine only; set 0.0.0.0 to share it
export AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="${AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT:-600}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-admin:admin}"

if [[ ! -d var/sample/archive ]]; then
  echo "building the sample archive the sample pipeline reads (var/sample/archive)"
  cdc-replay sample --format canal-json --out var/sample/archive --expected var/sample/expected.json
fi

port="$AIRFLOW__API__PORT"
# Another Airflow (or anything) on the port would answer the health check below and we would print the wrong
# password: refuse instead.
if curl -s -o /dev/null --max-time 3 "http://localhost:$port/"; then
  echo "port $port is already in use (another 'make ui'?). Stop it, or run: AIRFLOW__API__PORT=8081 make ui" >&2
  exit 1
fi
log="$AIRFLOW_HOME/standalone.log"
# setsid: standalone and everything it forks (scheduler, task workers, API server...) get their own process
# group, so stopping the UI stops all of them and nothing is left running.
setsid airflow standalone >"$log" 2>&1 </dev/null &
pid=$!
stop() {
  trap - INT TERM EXIT
  if kill -0 "$pid" 2>/dev/null; then
    echo "stopping airflow standalone ..."
    kill -TERM -- "-$pid" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  kill -KILL -- "-$pid" 2>/dev/null || true  # stragglers of the group (task workers, serve-logs)
}
trap 'stop; exit 130' INT TERM
trap stop EXIT
timeout_s="${CDC_REPLAY_UI_START_TIMEOUT:-300}"
echo "starting airflow standalone (pid $pid, log $log; up to ${timeout_s}s on a busy machine) ..."
started=$(date +%s)
until curl -fsS --max-time 5 "http://localhost:$port/api/v2/monitor/health" >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null; then echo "airflow standalone exited; see $log" >&2; tail -n 30 "$log" >&2; exit 1; fi
  if (( $(date +%s) - started > timeout_s )); then
    echo "airflow standalone did not answer on port $port within ${timeout_s}s; see $log" >&2
    tail -n 30 "$log" >&2; exit 1
  fi
  sleep 2
done
passwords="$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
for _ in $(seq 1 30); do [[ -s "$passwords" ]] && break; sleep 1; done  # written by the API server at start
user="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS%%:*}"
password=$(python -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "?"))' "$passwords" "$user" 2>/dev/null || echo "?")
cat <<MSG

  Airflow UI:  http://localhost:$port
  log in as:   $user
  password:    $password      (generated; stored in $passwords)
  DAGs:        cdc_replay (trigger with the form; pick pipeline 'sample_shop'), cdc_daily_replay (paused)
  Reports:     http://localhost:$port/cdc-replay/  (also Browse > CDC verification; the verify task's link)
  Backfill:    source .ci/airflow-env.sh; airflow dags unpause cdc_daily_replay
               airflow backfill create --dag-id cdc_daily_replay --from-date A --to-date B --max-active-runs 1
               (one day at a time: each day continues from the previous day's state)
  Ctrl-C stops Airflow.

MSG
wait "$pid" || true
