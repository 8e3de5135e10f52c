"""Publish a job's output directory all at once, so readers never see half of it and a failed run leaves the
previous output intact.

The job writes into a hidden staging sibling; ``publish`` swaps it in with renames (atomic on one local or POSIX
file system). A crash between the two renames leaves the previous output under ``.NAME.old-*``, never a mix.
Object stores need a table format's commit protocol instead; this is the local/HDFS-style variant.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Iterator


def _strip_scheme(path: str) -> Path:
    return Path(path[len("file://"):] if path.startswith("file://") else path).absolute()


@contextlib.contextmanager
def staged_output(out: str) -> Iterator[Path]:
    """Yields a fresh staging directory beside ``out``; on success it replaces ``out``, on error it is removed."""
    target = _strip_scheme(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.staging-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    publish(staging, target)


def publish(staging: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
        os.rename(target, old)
    os.rename(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
