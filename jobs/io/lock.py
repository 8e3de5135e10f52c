"""One writer per output: a lease that a killed run cannot leave stuck.

The lock is a small JSON file (local: ``.NAME.lock`` beside the output; object store: ``OUT/_lock.json``)
holding the owner's host, pid, a random token, when it started and its last heartbeat. A background thread
renews the heartbeat every ``ttl / 4``. Another run finding the lock refuses to start, naming the owner, unless
the lock is stale: its owner ran on this host and that pid is gone (a SIGKILLed run: taken over at once), or
its heartbeat is older than the lease (``CDC_REPLAY_LOCK_TTL`` seconds, default 300: a run on another machine
that died).

Local file systems create the lock with O_EXCL, so of two runs starting together exactly one wins. Object
stores offer no exclusive create through pyarrow.fs: the lock is written and read back after a short settle
time, and a run that finds another token there gives up. That closes the race except for two runs starting
within the settle time of each other; the Airflow DAGs never start two runs of one output at once, so the lock
is there for people and retries.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Optional

from cdc_jobs.errors import UsageError
from cdc_jobs.io import storage

SETTLE_SECONDS = 0.5


def lease_seconds() -> float:
    return float(os.environ.get("CDC_REPLAY_LOCK_TTL", "300"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    def __init__(self, uri: str, out: str):
        self.uri, self.out = uri, out
        self.token = uuid.uuid4().hex
        self.local = storage.is_local(uri)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.started = time.time()

    # -- content

    def _content(self) -> bytes:
        return (json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": self.token,
                            "started": self.started, "heartbeat": time.time(), "output": self.out}) + "\n").encode()

    def _read(self) -> Optional[dict]:
        try:
            data = storage.read_bytes(self.uri)
        except (FileNotFoundError, OSError):
            return None
        try:
            return json.loads(data)
        except ValueError:
            return {}  # half-written by a run killed while creating it: stale by the file's age below

    def _age(self, held: dict) -> float:
        beat = held.get("heartbeat")
        if beat is None:
            try:
                beat = storage.info(self.uri).mtime.timestamp()
            except (AttributeError, OSError):
                beat = 0
        if self.local:  # a local heartbeat also touches the file: the newer of the two counts
            try:
                beat = max(beat, os.stat(storage.local_path(self.uri)).st_mtime)
            except OSError:
                pass
        return time.time() - beat

    def _stale(self, held: dict) -> bool:
        if held.get("host") == socket.gethostname() and isinstance(held.get("pid"), int) \
                and held.get("token") != self.token and not _pid_alive(held["pid"]):
            return True
        return self._age(held) > lease_seconds()

    def _refuse(self, held: dict) -> UsageError:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(held.get("started", 0)))
        return UsageError(f"--out {self.out}: another run is writing this output (host {held.get('host')}, pid "
                          f"{held.get('pid')}, since {since}); refusing to start a second writer. If that run is "
                          f"dead, its lock expires {int(lease_seconds())} s after its last heartbeat "
                          f"(lock file {self.uri})")

    # -- acquire / release

    def _create_exclusive(self) -> bool:
        if self.local:
            path = storage.local_path(self.uri)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(self._content())
            return True
        if storage.exists(self.uri):
            return False
        storage.write_bytes(self.uri, self._content())
        time.sleep(SETTLE_SECONDS)
        held = self._read() or {}
        return held.get("token") == self.token

    def acquire(self) -> None:
        for _ in range(3):
            if self._create_exclusive():
                break
            held = self._read()
            if held is None:
                continue  # released between our attempt and the read
            if not self._stale(held):
                raise self._refuse(held)
            # Take over a dead run's lock: move it aside first, so of two runs doing this only one proceeds.
            if self.local:
                aside = f"{storage.local_path(self.uri)}.stale-{self.token}"
                try:
                    os.rename(storage.local_path(self.uri), aside)
                    os.unlink(aside)
                except FileNotFoundError:
                    pass
            else:
                storage.delete(self.uri)
        else:
            held = self._read() or {}
            raise self._refuse(held)
        self._thread = threading.Thread(target=self._beat, name="cdc-replay-lock-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        interval = max(0.5, lease_seconds() / 4)
        while not self._stop.wait(interval):
            held = self._read()
            if not held or held.get("token") != self.token:
                return  # taken over (we were presumed dead): the publish re-checks and fails
            try:
                storage.write_bytes(self.uri, self._content())
            except OSError:
                pass  # a transient store error: the next beat retries; the lease is several beats long

    def still_held(self) -> bool:
        held = self._read()
        return bool(held) and held.get("token") == self.token

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.still_held():
            storage.delete(self.uri)

    def __enter__(self) -> "OutputLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
