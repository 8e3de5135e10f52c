"""Codec settings that live in the process environment (``cdc_codecs.shared.schema_registry.ENVIRONMENT``: the
Schema Registry URL and its credentials, folders of archived schemas). The driver sets them from the job's options;
Spark tasks decode and encode in other processes, so the settings travel with each task: in the closure of the
Python task functions (``mapInArrow``, ``carried``; the archive's reader is one), never in a plan or a log. Not
through the context's executor environment: Spark keeps one set of Python workers per distinct environment, and
the settings differ per run (the encoders' schema folder is in the run's staging folder), so each re-encode in a
long-lived session started a new daemon and its workers (six more processes each time, ~3 s a run) and kept
them."""

from __future__ import annotations

import functools
import glob
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, TypeVar

from cdc_codecs.shared.schema_registry import ENV_FOLDER, ENV_FOLDER_OUT, ENV_URL, ENVIRONMENT

SCHEMAS_DIR = "_schemas"  # `cdc-replay archive` writes the topic's schemas here, beside the dump

A = TypeVar("A")
B = TypeVar("B")


def current() -> dict[str, str]:
    return {k: os.environ[k] for k in ENVIRONMENT if os.environ.get(k)}


def apply(encoded: Optional[str]) -> None:
    """In a task: take the driver's settings (JSON of ``current``), dropping any this process had from an earlier
    job."""
    env = json.loads(encoded) if encoded else {}
    for k in ENVIRONMENT:
        if env.get(k):
            os.environ[k] = env[k]
        else:
            os.environ.pop(k, None)


def schema_folders(sources: Sequence[str]) -> list[str]:
    """``_schemas`` folders archived with local archive files: in or under a source directory, in one of its
    parents (the archive root of a ``topic/partition=N`` dump), or beside a file's or a glob's directory."""
    found: list[str] = []
    for src in sources:
        if "://" in src and not src.startswith("file://"):
            continue
        path = Path(src[len("file://"):] if src.startswith("file://") else src)
        if glob.has_magic(str(path)):
            path = Path(str(path).split("*")[0].split("?")[0].split("[")[0]).parent
        candidates = [d / SCHEMAS_DIR for d in ([path, *path.parents] if path.is_dir() else path.parents)]
        nearest = next((c for c in candidates if c.is_dir()), None)
        below = sorted(Path(root) / SCHEMAS_DIR for root, dirs, _ in os.walk(path) if SCHEMAS_DIR in dirs) \
            if path.is_dir() else []
        for d in ([nearest] if nearest else []) + below:
            if str(d) not in found:
                found.append(str(d))
    return found


@contextmanager
def job_settings(registry: Optional[str], folders: Sequence[str], out: Optional[str]) -> Iterator[None]:
    """The settings for one job, in the driver's environment, restored afterwards (a test process runs many jobs
    in one session). Tasks get them by ``carried``."""
    wanted = {ENV_URL: registry, ENV_FOLDER: os.pathsep.join(folders) or None, ENV_FOLDER_OUT: out}
    saved_env = {k: os.environ.get(k) for k in wanted}
    for k, v in wanted.items():
        if v:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def carried(task: Callable[[Iterator[A]], Iterator[B]]) -> Callable[[Iterator[A]], Iterator[B]]:
    """``task`` (a ``mapInArrow`` function) run under the driver's settings of now: taken here, in the driver,
    and applied in the task's process before it starts (``apply``)."""
    env = current()
    settings = json.dumps(env) if env else None

    @functools.wraps(task)  # the task's type hints, from which Spark tells an Arrow UDF's kind
    def run(batches: Iterator[A]) -> Iterator[B]:
        apply(settings)
        return task(batches)

    return run


@contextmanager
def schemas_written_to(folder: Path) -> Iterator[None]:
    """Encoders in this process write the Avro schemas they make (without a registry) to ``folder``."""
    saved = os.environ.get(ENV_FOLDER_OUT)
    os.environ[ENV_FOLDER_OUT] = str(folder)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(ENV_FOLDER_OUT, None)
        else:
            os.environ[ENV_FOLDER_OUT] = saved
