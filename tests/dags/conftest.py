"""Airflow DAG tests. The provider package (cdc_replay_airflow) is installed; dags/ holds only the DAG files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"


@pytest.fixture
def sample_pipelines(monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_PIPELINES", str(DAGS / "pipelines.sample.yaml"))
    monkeypatch.delenv("AIRFLOW_VAR_CDC_REPLAY_PIPELINES", raising=False)
    return DAGS / "pipelines.sample.yaml"


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment .ci/airflow-env.sh exports, with AIRFLOW_HOME and outputs under a test directory."""
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "CDC_REPLAY_PIPELINES"))}
    env.update({
        "PATH": f"{bin_dir}:{env.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type":"spark","host":"local[2]"}',
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "CDC_REPLAY_SHUFFLE_PARTITIONS": "4",
        "CDC_REPLAY_SPARK_RETRIES": "0",  # a failure in a test is a failure, not a 5-minute wait
        "CDC_REPLAY_REPORTS_DIR": str(home / "reports"),
        "CDC_REPLAY_OUTPUT_ROOT": str(home / "output"),
        # Form paths must lie under these (the tests' archives and outputs live in pytest's temp directory).
        "CDC_REPLAY_DATA_ROOTS": os.pathsep.join([str(home.parent.parent), str(REPO / "var")]),
    })
    env.update(extra)
    return env


# -- one `airflow standalone` per test session (browser and backfill tests) ------------------------------------

STANDALONE_START_TIMEOUT = 300  # s; the API server, scheduler and DAG processor on a busy 2-core machine


class Standalone:
    """A running `airflow standalone` (SQLite, LocalExecutor) with the repo's DAGs and plugin, its own
    AIRFLOW_HOME and a free localhost port. `api()` calls the REST API as the generated admin user."""

    def __init__(self, home: Path, port: int, env: dict[str, str], proc: "subprocess.Popen", log: Path):
        self.home, self.port, self.env, self.proc, self.log = home, port, env, proc, log
        self.url = f"http://127.0.0.1:{port}"
        self.user = "admin"
        self.password = ""
        self._token: str | None = None

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else "(no log)"

    def _request(self, method: str, path: str, body: object = None, token: str | None = None,
                 timeout: float = 30) -> tuple[int, object]:
        import json
        import urllib.error
        import urllib.request

        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                text = resp.read().decode()
                return resp.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            try:
                return exc.code, json.loads(text)
            except ValueError:
                return exc.code, text

    def token(self) -> str:
        if self._token is None:
            status, body = self._request("POST", "/auth/token",
                                         {"username": self.user, "password": self.password})
            assert status in (200, 201), f"login as {self.user} failed: {status} {body}"
            self._token = body["access_token"]
        return self._token

    def api(self, method: str, path: str, body: object = None, ok: tuple[int, ...] = (200, 201)) -> object:
        import time

        for attempt in range(5):
            status, data = self._request(method, "/api/v2" + path, body, token=self.token())
            # SQLite allows one writer: a write racing the scheduler can fail with "database is locked" (500).
            if status != 500 or "Database error" not in str(data):
                break
            time.sleep(1 + attempt)
        assert status in ok, f"{method} {path}: {status} {data}"
        return data

    def cli(self, *args: str, timeout: float = 300) -> "subprocess.CompletedProcess":
        """An `airflow` CLI command against this instance's metadata DB."""
        return subprocess.run([str(Path(sys.executable).parent / "airflow"), *args], env=self.env, cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 900) -> dict:
        """Poll until the run finished (success or failed); fail with the task states on timeout."""
        import time
        from urllib.parse import quote

        deadline = time.monotonic() + timeout
        path = f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}"
        while True:
            run = self.api("GET", path)
            if run["state"] in ("success", "failed"):
                return run
            if time.monotonic() > deadline or self.proc.poll() is not None:
                tis = self.api("GET", path + "/taskInstances")["task_instances"]
                pytest.fail(f"{dag_id} {run_id} still {run['state']} after {timeout:.0f}s (standalone exited: "
                            f"{self.proc.poll() is not None}); tasks: "
                            f"{[(t['task_id'], t['map_index'], t['state']) for t in tis]}\n{self.log_tail()}")
            time.sleep(1)  # one small GET: a 3 s poll added 1.5 s on average to every run a test waits for


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: "subprocess.Popen") -> None:
    """Stop the standalone and everything it forked (its own process group): TERM, then KILL after 30 s."""
    import signal

    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
    try:  # children that outlived their parent (task workers, serve-logs) are still in the group
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=30)


@pytest.fixture(scope="session")
def airflow_standalone(tmp_path_factory):
    """`airflow standalone` as `make ui` runs it, but on a test-owned home and port; stopped at session end
    (also when a test failed or was interrupted). Pipelines: the sample file; tests that need their own set
    the Airflow Variable cdc_replay_pipelines, which the tasks read first."""
    import json
    import time
    import urllib.request

    home = tmp_path_factory.mktemp("airflow-standalone")
    port = _free_port()
    env = airflow_env(
        home,
        # Several processes write to SQLite at once (scheduler, API server, the CLI in a test): wait for the
        # lock for up to 60 s instead of failing with "database is locked" after pysqlite's default 5 s.
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db?timeout=60",
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API__PORT=str(port),
        # Tasks reach the API server here; Airflow's default would be localhost:8080, whatever runs there.
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{port}/execution/",
        AIRFLOW__API__WORKERS="1",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin",
        AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
        AIRFLOW__CORE__PLUGINS_FOLDER=str(home / "plugins"),  # the project's plugin loads by entry point
        AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="4",
        AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="600",
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
        CDC_REPLAY_PIPELINES=str(DAGS / "pipelines.sample.yaml"),
    )
    (home / "plugins").mkdir()
    log = home / "standalone.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), "standalone"], env=env, cwd=REPO,
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # own process group: stopped as a whole
    sa = Standalone(home, port, env, proc, log)
    try:
        started = time.monotonic()
        deadline = started + STANDALONE_START_TIMEOUT
        passwords = home / "simple_auth_manager_passwords.json.generated"
        while True:
            if proc.poll() is not None:
                pytest.fail(f"airflow standalone exited {proc.returncode}:\n{sa.log_tail()}")
            try:
                with urllib.request.urlopen(sa.url + "/api/v2/monitor/health", timeout=5) as resp:
                    if resp.status == 200 and passwords.exists():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"airflow standalone did not answer on {sa.url} within "
                            f"{STANDALONE_START_TIMEOUT}s:\n{sa.log_tail()}")
            time.sleep(2)
        sa.password = json.loads(passwords.read_text())[sa.user]
        while True:  # the DAG processor has serialised both DAGs (the trigger form needs them)
            status, body = sa._request("GET", "/api/v2/dags?dag_id_pattern=cdc_", token=sa.token())
            if status == 200 and {d["dag_id"] for d in body["dags"]} >= {"cdc_replay", "cdc_daily_replay"}:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the DAGs were not parsed within {STANDALONE_START_TIMEOUT}s:\n{sa.log_tail()}")
            time.sleep(2)
        print(f"airflow standalone ready on {sa.url} in {time.monotonic() - started:.1f}s (home {home})")
        yield sa
    finally:
        _stop(proc)
