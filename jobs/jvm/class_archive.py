"""A class-data-sharing archive (JDK AppCDS, a dynamic archive) of the classes a job's driver loads: its JVM maps
them instead of reading, parsing and verifying them from the ~300 jars of Spark, Delta Lake and the connectors
again in every job. Measured here (2 cores, JDK 17): a spark-submit'd replay of a small window 11.1 -> 8.1 s wall,
13.8 -> 10.5 CPU-s; every Airflow Spark task and every ``cdc-replay`` command starts that much sooner.

Built at install time (``python -m cdc_jobs.jvm``) into the jars' folder by one training run: spark-submit of
``archive_training.py`` (sample -> replay -> merge -> verify on a small archive) with ``-XX:ArchiveClassesAtExit``.
It is written beside its final name and renamed only after that JVM exited normally and a JVM started on it (a
truncated archive crashes the JVM that maps it). Jobs never build it. Its name follows the JDK build and the
driver's class path (``archive_key``), as the JVM would otherwise ignore it without a word (CI met that: a checkout
at another path, a JVM folder shared); ``prune`` deletes the ones no JVM can use any more. A driver JVM that cannot
use it starts as it would without it, and so does one where the file does not exist (a cluster-mode driver on
another machine); the JVM's notes about that are silenced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

ARCHIVE = "driver-classes"  # + "-<key>.jsa": one archive per JDK build and class path (``archive_key``)
TRAINING = Path(__file__).resolve().parent / "archive_training.py"
_QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
BASE_OPTIONS = "-Duser.timezone=UTC"  # the same timestamp text gave different epochs under other zones


def java_binary() -> Optional[Path]:
    """The ``java`` spark-class runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_key(java: Optional[Path] = None, jars: Optional[Path] = None) -> str:
    """Which JDK build and which driver class path an archive is for (by default: this process's ``java`` and
    PySpark's jars). A JVM ignores (silently, with our options) an archive made by another JDK build or on another
    class path: the JVM compares each class-path jar's path, size and time with the ones it was trained on.
    spark-submit's driver class path is PySpark's ``jars/``, so a JDK upgraded in place, a virtualenv made again
    (new jar times) or one at another path (a CI checkout beside a shared JVM folder) each get a new name, which
    ``python -m cdc_jobs.jvm`` then builds. Read from the files' metadata alone (no process started: every
    session asks)."""
    from cdc_jobs import jvm

    digest = hashlib.sha256()
    java = java_binary() if java is None else java
    if java is not None and java.exists():
        lib = java.parent.parent / "lib" / "server" / "libjvm.so"
        _add_file(digest, lib if lib.is_file() else java)
    for jar in sorted((jvm.pyspark_jars_dir() if jars is None else jars).glob("*.jar")):
        _add_file(digest, jar)
    return digest.hexdigest()[:12]


def _add_file(digest: "hashlib._Hash", path: Path) -> None:
    st = path.stat()
    digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())


def archive_path() -> Path:
    from cdc_jobs import jvm

    return jvm.build_dir() / f"{ARCHIVE}-{archive_key()}.jsa"


def _origin(archive: Path) -> Path:
    """Beside each archive: the ``java`` and PySpark jars folder it was trained with (JSON)."""
    return archive.with_suffix(".origin.json")


def prune(folder: Path) -> list[Path]:
    """Delete the archives in ``folder`` that no JVM can use any more, and return them: those whose ``java`` and
    jars (read from their origin record) now give another key (a virtualenv made again at the same path, a JDK
    upgraded, a checkout removed), and those without a record (named by JDK build only, before the class path was
    part of the name). Each is ~200 MB; without this, every new virtualenv beside a shared JVM folder left one.
    The archive of another live checkout sharing the folder still gives its own key, so it stays."""
    gone = []
    for archive in sorted(folder.glob(f"{ARCHIVE}-*.jsa")):
        key = archive.stem[len(ARCHIVE) + 1:]
        try:
            origin = json.loads(_origin(archive).read_text())
            live = archive_key(Path(origin["java"]), Path(origin["jars"])) == key
        except (OSError, ValueError, KeyError, TypeError):
            live = False
        if not live:
            archive.unlink(missing_ok=True)
            _origin(archive).unlink(missing_ok=True)
            gone.append(archive)
    return gone


def _option(flag: str, path: Path) -> str:
    # Spark splits extraJavaOptions on spaces, keeping double-quoted parts whole
    return f'{flag}="{path}"' if " " in str(path) else f"{flag}={path}"


def driver_java_options() -> str:
    """``spark.driver.extraJavaOptions`` of every job: UTC, and the class archive where it was built."""
    archive = archive_path()
    if not archive.is_file():
        return BASE_OPTIONS
    return " ".join([BASE_OPTIONS, _option("-XX:SharedArchiveFile", archive), *_QUIET])


def build(jars: list[Path], final: Path, timeout_s: float = 600) -> Optional[str]:
    """Make the archive ``final`` (``archive_path()``) unless it exists; None when done, else why not (the jobs
    then start without one)."""
    import pyspark

    from cdc_jobs import jvm

    prune(final.parent)
    if final.is_file():
        return None
    java = java_binary()
    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    if java is None or not submit.is_file():
        return f"no java (JAVA_HOME or PATH) or no {submit}"
    with tempfile.TemporaryDirectory(prefix=".class-archive-", dir=final.parent) as tmp:
        dump = Path(tmp) / final.name
        options = " ".join([BASE_OPTIONS, _option("-XX:ArchiveClassesAtExit", dump), *_QUIET])
        cmd = [str(submit), "--master", "local[2]", "--conf", f"spark.driver.extraJavaOptions={options}",
               *[a for k, v in jvm.DELTA_CONF.items() for a in ("--conf", f"{k}={v}")],
               "--jars", ",".join(map(str, jars)), str(TRAINING), str(Path(tmp) / "work")]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"the training run took over {timeout_s:.0f} s"
        if done.returncode != 0 or not dump.is_file():
            return f"the training run failed (exit {done.returncode}): {(done.stdout + done.stderr)[-2000:]}"
        check = subprocess.run([str(java), _option("-XX:SharedArchiveFile", dump), *_QUIET, "-version"],
                               capture_output=True, text=True, timeout=60)
        if check.returncode != 0:
            return f"a JVM on the new archive failed (exit {check.returncode}): {check.stderr[-2000:]}"
        _origin(final).write_text(json.dumps({"java": str(java), "jars": str(jvm.pyspark_jars_dir())}))
        os.replace(dump, final)
    return None
