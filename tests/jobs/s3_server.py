"""A real S3 API for the tests: moto's server mode on 127.0.0.1, from its own virtualenv (.venv/moto-server, see
tests/README.md), reached by the jobs through the standard AWS_* environment only. Test modules import the
``s3`` fixture (one server per module)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

REPO = Path(__file__).resolve().parents[2]
BUCKET = "cdc-test"


def _moto_server() -> str:
    exe = REPO / ".venv" / "moto-server" / "bin" / "moto_server"
    found = str(exe) if exe.exists() else shutil.which("moto_server")
    if not found:
        pytest.fail("moto_server not installed: run `make install` (it creates .venv/moto-server)")
    return found


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> dict[str, str]:
    """The server's AWS_* environment, set in os.environ for the module (and BUCKET created)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc = subprocess.Popen([_moto_server(), "-H", "127.0.0.1", "-p", str(port)], stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "test",
           "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        admin = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", allow_bucket_creation=True,
                                  access_key="test", secret_key="test", region="us-east-1")
        for _ in range(100):
            try:
                admin.create_dir(BUCKET)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"moto_server did not start: {log.read_text()[-2000:]}")
        yield env
    finally:
        proc.kill()
        proc.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
