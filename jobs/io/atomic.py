"""Publishing a job's output (replay, merge, archive) so that readers never see half of it, a failed or killed
run leaves the previous output current, only outputs of this project are ever replaced, and two runs never
write the same output at once.

Every output OUT is written by one run at a time (``lock.OutputLock``: a lease that a killed run cannot leave
stuck) into a fresh staging location, and becomes visible in one atomic step. Two commit protocols:

- ``rename`` (local and other POSIX file systems, the default there): the run writes ``.NAME.staging-<id>``
  beside OUT and swaps it in with one ``renameat2(RENAME_EXCHANGE)`` (Linux; two renames elsewhere). OUT stays a
  plain directory a user can ``ls``.
- ``pointer`` (object stores and HDFS: a directory rename there is a non-atomic copy): the run writes under
  ``OUT/_attempts/<attempt>/`` and then writes ``OUT/_CURRENT.json``, one small object naming the attempt and
  listing its files (the way table formats commit: that last single-object write makes the whole output
  visible). Readers resolve OUT through it (``resolve_output``). The attempt before the current one is kept for
  readers still busy with it; older attempts and those of killed runs are deleted by the next run.
  ``CDC_REPLAY_COMMIT=pointer`` selects it on POSIX too (e.g. a bucket mounted with a FUSE file system).

Both write ``_cdc_replay.json`` into the output: the marker that lets a later run replace it. An existing OUT
without it (and without the files of an output written before the marker existed) is refused, never deleted.
Spark's part files (``part-NNNNN-<job uuid>...``) are renamed to ``part-NNNNN...`` before the commit and its
``.crc`` side files removed, so a re-run gives byte-identical files under the same names.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as dt
import json
import os
import re
import shutil
import signal
import threading
import uuid
from pathlib import Path
from typing import Iterator, Optional, Union

from cdc_jobs.errors import UsageError
from cdc_jobs.io import storage
from cdc_jobs.io.delta_tables import DELTA_LOG
from cdc_jobs.io.lock import OutputLock
from cdc_jobs.io.remote_dir import RemoteDir

MARKER = "_cdc_replay.json"
POINTER = "_CURRENT.json"
ATTEMPTS = "_attempts"
LOCK = "_lock.json"
LAYOUT_VERSION = 1
# Files that identify outputs written before the marker existed (replay, merge, archive), so upgrading does not
# make a user's existing daily outputs unreplaceable.
_LEGACY = [("counts.json", "checkpoint.json"), ("_state.json",), ("_manifest.json", "_SUCCESS")]
_SPARK_PART = re.compile(r"^part-(\d{5,})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-c\d+)?(.*)$")

Stage = Union[Path, RemoteDir]


def commit_protocol(out: str) -> str:
    if not storage.is_local(out):
        return "pointer"
    chosen = os.environ.get("CDC_REPLAY_COMMIT", "rename")
    if chosen not in ("rename", "pointer"):
        raise UsageError(f"CDC_REPLAY_COMMIT={chosen!r}: use 'rename' or 'pointer'")
    return chosen


# ------------------------------------------------------------------------------------------------- testing aid

def kill_point(name: str) -> None:
    """Tests set CDC_REPLAY_TEST_KILL_AT=<name> to SIGKILL the whole run (driver, JVM, Python workers: the
    process group) at that exact point, which is what an OOM killer or a lost node does."""
    if os.environ.get("CDC_REPLAY_TEST_KILL_AT") == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


@contextlib.contextmanager
def _kill_when_writing(stage: Stage) -> Iterator[None]:
    """CDC_REPLAY_TEST_KILL_AT=write: SIGKILL as soon as Spark has produced the first part file in the stage."""
    if os.environ.get("CDC_REPLAY_TEST_KILL_AT") != "write" or not isinstance(stage, Path):
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            for _, _, files in os.walk(stage):
                if any(f.startswith("part-") for f in files):
                    kill_point("write")

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()


# ---------------------------------------------------------------------------------------------- ownership

def _marker_text(kind: str) -> str:
    # No time or run id in it: a re-run leaves the whole output byte-identical.
    return json.dumps({"written_by": "cdc-replay", "output": kind, "layout": LAYOUT_VERSION}, indent=2) + "\n"


def _looks_like_ours(names: set[str]) -> bool:
    if MARKER in names:
        return True
    if names and names <= {LOCK, POINTER, ATTEMPTS}:
        return True  # a first pointer-protocol run was killed before its commit
    return any(all(n in names for n in sig) for sig in _LEGACY)


def check_replaceable(out: str, option: str = "--out") -> None:
    """Refuse to replace anything this project did not write."""
    if storage.is_local(out):
        p = storage.local_path(out)
        if not p.exists():
            return
        if not p.is_dir():
            raise UsageError(f"{option} {out}: exists and is not a directory; refusing to replace it")
        names = {c.name for c in p.iterdir()}
    else:
        names = set(storage.listdir(out))
    if names and not _looks_like_ours(names):
        shown = ", ".join(sorted(names)[:5]) + (" ..." if len(names) > 5 else "")
        raise UsageError(f"{option} {out}: the directory exists and was not written by cdc-replay (no {MARKER}; "
                         f"it holds {shown}). Refusing to replace it: remove it yourself or choose another {option}")


# ------------------------------------------------------------------------------------------ deterministic names

def normalise_part_names(stage: Stage) -> None:
    """part-00003-<uuid>-c000.snappy.parquet -> part-NNNNN.snappy.parquet (numbered in order per directory);
    checksum side files removed. Spark's job UUID is random, so without this a re-run's names differ.
    A Delta table (a directory holding ``_delta_log/``) is left as it is: its log names its files."""
    if isinstance(stage, RemoteDir):
        stage.normalise_part_names(_SPARK_PART, DELTA_LOG)
        return
    for dirpath, dirs, files in os.walk(stage):
        if DELTA_LOG in dirs:
            dirs.clear()
            continue
        d = Path(dirpath)
        for f in files:
            if f.endswith(".crc"):
                (d / f).unlink()
        parts = sorted(f for f in files if _SPARK_PART.match(f))
        for i, f in enumerate(parts):
            (d / f).rename(d / f"part-{i:05d}{_SPARK_PART.match(f).group(2)}")


# -------------------------------------------------------------------------------------------- rename protocol

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where the kernel or file system cannot."""
    fn = getattr(_libc, "renameat2", None)
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: fall back to two renames
        return False
    raise OSError(err, os.strerror(err), str(a))


def _siblings(target: Path, kind: str) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.{kind}-*"))


def _recover_local(target: Path) -> None:
    """Runs under the lock, before writing: undo what a killed run left. A kill between the two fallback
    renames leaves the previous output as .NAME.old-*: it is put back. Stagings of killed runs are removed."""
    olds = _siblings(target, "old")
    if olds and not target.exists():
        os.rename(olds[-1], target)
        olds = olds[:-1]
    for p in _siblings(target, "staging") + olds:
        shutil.rmtree(p, ignore_errors=True)


def _publish_rename(staging: Path, target: Path) -> None:
    kill_point("publish")
    if target.exists():
        if _exchange(staging, target):
            kill_point("published")
            shutil.rmtree(staging, ignore_errors=True)  # now holds the previous output
            return
        old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
        os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, target)
    kill_point("published")


# ------------------------------------------------------------------------------------------- pointer protocol

def read_pointer(out: str) -> Optional[dict]:
    uri = storage.join(out, POINTER)
    try:
        return json.loads(storage.read_text(uri))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        if not storage.exists(uri):
            return None
        raise UsageError(f"{out}: cannot read the commit pointer {POINTER}: {exc}") from exc


def _kept(pointer: Optional[dict]) -> set[str]:
    """Attempts that stay: the committed one and the one before it (readers may still be using it)."""
    if not pointer:
        return set()
    return {a.split("/")[-1] for a in (pointer["attempt"], pointer.get("previous")) if a}


def _clean_attempts(out: str, keep: set[str]) -> None:
    for a in storage.listdir(storage.join(out, ATTEMPTS)):
        if a not in keep:
            storage.delete(storage.join(out, ATTEMPTS, a))


def _publish_pointer(out: str, attempt: str, previous: Optional[dict]) -> None:
    location = storage.join(out, ATTEMPTS, attempt)
    files = [[rel, size] for rel, size in storage.walk_files(location)]
    pointer = {"attempt": f"{ATTEMPTS}/{attempt}", "files": files,
               "previous": previous["attempt"] if previous else None,
               "committed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    kill_point("publish")
    storage.write_text(storage.join(out, POINTER), json.dumps(pointer, indent=1) + "\n")  # the commit
    kill_point("published")
    keep = {attempt} | ({previous["attempt"].split("/")[-1]} if previous else set())
    _clean_attempts(out, keep)


def _attempt_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def _spark_reaches(scheme: str) -> Optional[bool]:
    """Whether the running Spark has a Hadoop FileSystem for ``scheme`` (None: no Spark session here)."""
    try:
        from pyspark.sql import SparkSession

        s = SparkSession.getActiveSession()
        if s is None:
            return None
        jvm = s._jvm
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, s._jsc.hadoopConfiguration())
            return True
        except Exception:  # noqa: BLE001 - py4j wraps the JVM's UnsupportedFileSystemException
            return False
    except Exception:  # noqa: BLE001 - Spark Connect or no JVM: treat as unreachable
        return None


def check_spark_reaches(uri: str, option: str) -> None:
    """Executors read and write a store themselves (nothing is staged on the driver's disk, which a cluster's
    executors cannot see): a Spark without the store's Hadoop FileSystem is refused before anything is written."""
    scheme = "s3a" if storage.scheme_of(uri) in storage.S3_SCHEMES else storage.scheme_of(uri)
    reaches = _spark_reaches(scheme)
    if reaches is None:  # decide with the Spark that will run the job
        from cdc_jobs.spark import session

        session()
        reaches = _spark_reaches(scheme)
    if not reaches:
        raise UsageError(f"{option} {uri}: this Spark has no Hadoop FileSystem for {scheme}:// (`make install` "
                         f"puts the connectors, hadoop-aws for s3a://, on every session; on another cluster add "
                         f"them to its jars; see the README)")


# ------------------------------------------------------------------------------------------------- the API

def _still_ours(lock: OutputLock) -> None:
    if not lock.still_held():
        raise UsageError(f"--out {lock.out}: this run's lock was taken over (its heartbeat stopped for longer than "
                         f"the lease); not publishing, the other run's output stands")


@contextlib.contextmanager
def staged_output(out: str, kind: str = "output") -> Iterator[Stage]:
    """Yields a fresh, empty staging location for ``out``; on success it becomes ``out`` in one atomic step, on
    error it is removed and the previous output stays current. Refuses outputs this project did not write and
    outputs another run is writing."""
    storage.check_uri(out, "--out")
    check_replaceable(out)
    protocol = commit_protocol(out)
    local = storage.is_local(out)
    if local:
        target = storage.local_path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        lock_uri = str(target.parent / f".{target.name}.lock")
    else:
        lock_uri = storage.join(out, LOCK)
    with OutputLock(lock_uri, out) as lock:
        kill_point("locked")
        if protocol == "rename":
            _recover_local(target)
            staging = target.parent / f".{target.name}.staging-{uuid.uuid4().hex[:12]}"
            staging.mkdir()
            try:
                with _kill_when_writing(staging):
                    yield staging
                normalise_part_names(staging)
                (staging / MARKER).write_text(_marker_text(kind))
                _still_ours(lock)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            _publish_rename(staging, target)
            return
        previous = read_pointer(out)
        # Attempts of killed runs go; the current one and the one before it (readers may still use it) stay.
        _clean_attempts(out, _kept(previous))
        if local:
            _recover_local(target)  # a rename-protocol output switched to pointer keeps nothing half-done
        attempt = _attempt_id()
        location = storage.join(out, ATTEMPTS, attempt)
        if local:
            stage: Stage = storage.local_path(location)
            stage.mkdir(parents=True)
        else:
            check_spark_reaches(out, "--out")
            stage = RemoteDir(location)
        try:
            with _kill_when_writing(stage):
                yield stage
            normalise_part_names(stage)
            storage.write_text(storage.join(location, MARKER), _marker_text(kind))
            storage.write_text(storage.join(out, MARKER), _marker_text(kind))
            _still_ours(lock)
            _publish_pointer(out, attempt, previous)
        except BaseException:
            with contextlib.suppress(Exception):
                storage.delete(location)
            raise


def resolve_output(uri: str, option: str) -> Stage:
    """What readers (merge --base/--replay, verify, --checkpoint) open for an output: the directory itself
    (rename protocol), or the attempt its commit pointer names, which Spark reads in the store itself."""
    storage.check_uri(uri, option)
    pointer = read_pointer(uri)
    if pointer is None:
        if storage.is_local(uri):
            return storage.local_path(uri)
        if storage.is_file(uri):  # e.g. --checkpoint s3://.../checkpoint.json
            return RemoteDir(uri)
        if not storage.exists(uri) and not storage.is_dir(uri):
            raise UsageError(f"{option} {uri}: does not exist")
        raise UsageError(f"{option} {uri}: no committed output ({POINTER} missing): a run writing it did "
                         f"not finish, or it is not an output of cdc-replay")
    location = storage.join(uri, pointer["attempt"])
    if storage.is_local(uri):
        return storage.local_path(location)
    check_spark_reaches(uri, option)
    return RemoteDir(location)


def committed_location(uri: str) -> str:
    """The URI of the committed content of an output: the attempt its pointer names, or the output itself."""
    pointer = read_pointer(uri)
    return storage.join(uri, pointer["attempt"]) if pointer else uri


def committed_bytes(parts: list[tuple[str, str]], enough: int) -> int | None:
    """The bytes of outputs' committed content, each (output, folder of it; "" for all of it), added up, or the
    first sum that reaches ``enough``: the callers (a job's JIT) only ask whether what a job reads is that big.
    None when an output cannot be reached: that is the job's own error to report, with its option named, once
    its session runs; sizing only picks the JIT and must not report it first."""
    total = 0
    try:
        for uri, folder in parts:
            location = committed_location(uri)
            for _, size in storage.walk_files(storage.join(location, folder) if folder else location):
                total += size
                if total >= enough:
                    return total
    except OSError:
        return None
    return total
