"""The driver class archive built at install time (``cdc_jobs.jvm.class_archive``): a job's driver JVM maps the
classes of Spark, Delta Lake and the connectors from it instead of loading them from their jars, and a driver
whose archive is missing (a cluster-mode driver on another machine) runs as before."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pyspark
import pytest

from cdc_jobs import jvm
from cdc_jobs.jvm import class_archive

pytestmark = pytest.mark.spark

JOB = """
import sys
from cdc_jobs.spark import session
spark = session("class archive test")
spark.range(5).write.format("delta").save(sys.argv[1])
print("rows:", spark.read.format("delta").load(sys.argv[1]).count())
"""


def _submit(tmp_path: Path, driver_options: str) -> tuple[str, str]:
    """spark-submit of a small Delta job (as the Airflow operator submits one); its output and class-load log."""
    script, log = tmp_path / "job.py", tmp_path / "classes.log"
    script.write_text(JOB)
    options = f"{driver_options} -Xlog:class+load=info:file={log}"
    done = subprocess.run([str(Path(pyspark.__file__).parent / "bin" / "spark-submit"), "--master", "local[1]",
                           "--jars", ",".join(map(str, jvm.runtime_jars())),
                           "--conf", f"spark.driver.extraJavaOptions={options}", str(script), str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, log.read_text()


def _source(log: str, cls: str) -> str:
    found = re.search(rf"\] {re.escape(cls)} source: (.*)$", log, re.M)
    assert found, f"{cls} was not loaded"
    return found.group(1)


def test_a_submitted_job_maps_its_driver_classes_from_the_archive(tmp_path):
    archive = class_archive.archive_path()
    assert archive.is_file(), "no class archive for this JVM build: run `python -m cdc_jobs.jvm` (make install)"
    assert archive not in class_archive.prune(archive.parent) and archive.is_file()  # its origin gives its key
    options = class_archive.driver_java_options()
    assert f"-XX:SharedArchiveFile={archive}" in options and "-Duser.timezone=UTC" in options
    out, log = _submit(tmp_path, options)
    assert "rows: 5" in out
    for cls in ("org.apache.spark.SparkContext", "io.delta.sql.DeltaSparkSessionExtension",
                "org.apache.spark.sql.delta.DeltaLog"):
        assert _source(log, cls) == "shared objects file (top)", cls


def test_without_its_archive_a_driver_loads_from_the_jars(tmp_path, monkeypatch):
    monkeypatch.setattr(class_archive, "archive_path", lambda: tmp_path / "none" / "driver-classes-x.jsa")
    assert class_archive.driver_java_options() == "-Duser.timezone=UTC"
    # an archive named but absent (the driver of a cluster-mode job on a machine without it): the job runs
    missing = f"-Duser.timezone=UTC -XX:SharedArchiveFile={tmp_path / 'absent.jsa'} -Xlog:cds=off"
    out, log = _submit(tmp_path, missing)
    assert "rows: 5" in out and _source(log, "org.apache.spark.SparkContext").endswith(".jar")


def test_another_jdk_build_gets_its_own_archive(tmp_path, monkeypatch):
    """A JDK upgraded in place would ignore the old archive without a word: its name follows the JVM build, so
    ``python -m cdc_jobs.jvm`` builds one for the new JDK."""
    fake = tmp_path / "jdk"
    (fake / "bin").mkdir(parents=True)
    (fake / "lib" / "server").mkdir(parents=True)
    (fake / "bin" / "java").write_text("")
    (fake / "lib" / "server" / "libjvm.so").write_bytes(b"one build")
    installed = class_archive.archive_path()
    monkeypatch.setenv("JAVA_HOME", str(fake))
    first = class_archive.archive_path()
    (fake / "lib" / "server" / "libjvm.so").write_bytes(b"another build")
    second = class_archive.archive_path()
    assert len({installed, first, second}) == 3
    assert first.parent == second.parent == installed.parent and first.name.startswith("driver-classes-")


def test_another_driver_class_path_gets_its_own_archive(tmp_path, monkeypatch):
    """The JVM ignores an archive trained on other class-path jars (path, size, time), without a word: a virtualenv
    made again, or a checkout at another path sharing the JVM folder, must not find the old archive under its
    name (CI did: its drivers ran from the jars)."""
    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core_2.13-4.2.0.jar").write_bytes(b"classes")
    monkeypatch.setattr(jvm, "pyspark_jars_dir", lambda: jars)
    first = class_archive.archive_path()
    assert class_archive.archive_path() == first  # the same files, the same name
    os.utime(jars / "spark-core_2.13-4.2.0.jar", ns=(1, 1))  # reinstalled: another time
    second = class_archive.archive_path()
    moved = tmp_path / "elsewhere"
    (tmp_path / "pyspark").rename(moved)
    monkeypatch.setattr(jvm, "pyspark_jars_dir", lambda: moved / "jars")
    third = class_archive.archive_path()
    assert len({first, second, third}) == 3


def test_archives_no_jvm_can_use_are_pruned(tmp_path, monkeypatch):
    """Every new virtualenv beside a shared JVM folder trains a ~200 MB archive; the ones whose java and jars no
    longer give their name are deleted, the one of another live checkout stays."""
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("")
    folder = tmp_path / "jvm-folder"
    folder.mkdir()

    def trained(name: str) -> Path:
        jars = tmp_path / name / "jars"
        jars.mkdir(parents=True)
        (jars / "spark-core.jar").write_bytes(name.encode())
        key = class_archive.archive_key(jdk / "bin" / "java", jars)
        archive = folder / f"driver-classes-{key}.jsa"
        archive.write_bytes(b"classes")
        archive.with_suffix(".origin.json").write_text(
            json.dumps({"java": str(jdk / "bin" / "java"), "jars": str(jars)}))
        return archive

    live, remade, removed = trained("live"), trained("remade"), trained("removed")
    os.utime(tmp_path / "remade" / "jars" / "spark-core.jar", ns=(1, 1))  # the virtualenv made again
    shutil.rmtree(tmp_path / "removed")  # the checkout deleted
    unrecorded = folder / "driver-classes-d6b8c3ebf1c4.jsa"  # named by the JDK build only
    unrecorded.write_bytes(b"classes")
    assert sorted(class_archive.prune(folder)) == sorted([remade, removed, unrecorded])
    assert sorted(p.name for p in folder.iterdir()) == sorted([live.name, live.with_suffix(".origin.json").name])
