"""The project's JVM side, declared once in ``pom.xml`` beside this module and built by Maven at install time
(``python -m cdc_jobs.jvm``: ``make install``, the Docker image):

* the project jar: the codecs' JVM decodes (``codecs/*/jvm/*.java``: the declared decode of JSON lines, the Avro
  container twins; pure Java and Jackson), the decode step's Spark adapter and the GROUP BY aggregate the replay
  counts with (``jobs/transforms/jvm/*.java``), compiled against Spark as ``provided`` and unit-tested with JUnit
  (``tests/jvm/``) when the tests are there;
* ``runtime_jars()``: that jar plus the connectors every SparkSession loads (Delta Lake, Spark's Kafka source and
  sink, hadoop-aws with the AWS SDK modules s3a uses), minus every artifact PySpark's own jars folder ships, so
  one library never appears in two versions;
* ``test_jars()``: what only the tests run, each in its own JVM (an Apache Kafka broker, an HDFS minicluster).

Everything lands in one folder named after a digest of the pom, the Java sources and the PySpark version, so a
change to any of them builds anew, and a folder appears whole or not at all. Jobs never run Maven: a session
that finds no folder for its digest has only PySpark's jars and stops, naming the command that builds them
(Delta's jars and the counts aggregate are needed by every replay and merge). ``CDC_REPLAY_JVM_DECODE=off`` decodes
in Python, which gives the same rows (``tests/codecs/test_jvm_fast_paths.py``), only slower; ``available`` says
whether a session decodes in the JVM.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

from cdc_jobs.errors import UsageError

_HERE = Path(__file__).resolve().parent
POM = _HERE / "pom.xml"
PROJECT_JAR = "cdc-replay-jvm.jar"
# The Spark SQL function the decode step calls for blocks of Avro container records (``cdc_jobs.transforms.jvm_decode``;
# blocks of lines go through ``LineRows``, Kafka records through ``RecordBlockDecode``, both called by py4j).
AVRO_BLOCK_DECODE = "cdc_avro_block_decode"
_ADAPTERS = {AVRO_BLOCK_DECODE: "cdcreplay.jobs.AvroBlockDecode"}
# What a session needs to read and write Delta tables (the jar alone is not enough: Delta's SQL and catalog).
DELTA_CONF = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
              "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
_SCOPES = ("compile", "runtime", "provided", "test", "system")


class JvmBuildError(RuntimeError):
    user_facing = True


def _codecs_dir() -> Path:
    import cdc_codecs

    return Path(cdc_codecs.__file__).resolve().parent


def _jobs_dir() -> Path:
    return _HERE.parent


def _tests_dir() -> Path:
    """The JUnit tests: in a checkout, tests/jvm beside codecs/ (an installed package has none)."""
    return _codecs_dir().parent / "tests" / "jvm"


def sources() -> list[Path]:
    return sorted(_codecs_dir().glob("**/jvm/*.java")) + sorted((_jobs_dir() / "transforms").glob("**/jvm/*.java"))


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


# Part of the folder's digest: raise it when the rules of which jar goes where change (the pom and sources do not
# show that), so a folder laid out by older rules is never taken for a current one.
LAYOUT_VERSION = b"2"  # 2: JUnit kept among the test jars (the HDFS minicluster calls it)


def build_dir() -> Path:
    """Where the jars of this pom, these sources and this PySpark are (or will be): ``$CDC_REPLAY_JVM_DIR``, else
    ~/.cache/cdc-replay, then ``jvm-<digest>``."""
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode() + b"\0" + LAYOUT_VERSION + b"\0" + POM.read_bytes())
    for src in sources():
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    root = Path(os.environ.get("CDC_REPLAY_JVM_DIR") or Path.home() / ".cache" / "cdc-replay")
    return root / f"jvm-{digest.hexdigest()[:16]}"


def jar_path() -> Path:
    return build_dir() / PROJECT_JAR


def built() -> bool:
    return (build_dir() / "runtime").is_dir()


def runtime_jars() -> list[Path]:
    """The jars every SparkSession gets (``spark.jars``, spark-submit ``--jars``): the project jar and the
    connectors. Empty when ``python -m cdc_jobs.jvm`` has not run for these sources (no JDK or Maven)."""
    d = build_dir()
    if not built():
        return []
    return [d / PROJECT_JAR, *sorted((d / "runtime").glob("*.jar"))]


def test_jars() -> list[Path]:
    """The test-only jars (the Kafka broker, the HDFS minicluster). They run in their own JVMs on a classpath of
    these, ``runtime_jars()`` and PySpark's jars: Maven chose one version of each library across all three."""
    d = build_dir()
    if not built():
        return []
    return sorted((d / "test").glob("*.jar"))


def _shipped_by_pyspark() -> set[str]:
    return {p.name for p in pyspark_jars_dir().glob("*.jar")}


def _ships(shipped: set[str], artifact_id: str) -> bool:
    """PySpark's jars are named artifactId-version[-classifier].jar; a version starts with a digit."""
    pattern = re.compile(re.escape(artifact_id) + r"-\d")
    return any(pattern.match(name) for name in shipped)


def parse_dependency_list(text: str) -> list[tuple[str, str, str, Path]]:
    """(groupId, artifactId, scope, jar) of each line of ``mvn dependency:list`` with absolute file names and scopes:
    ``group:artifact:type[:classifier]:version:scope:/path.jar`` (Maven may append `` -- module name``)."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(":")
        scope_at = next((i for i, p in enumerate(parts) if i >= 4 and p in _SCOPES), None)
        if scope_at is None or parts[2] != "jar":
            continue
        path = ":".join(parts[scope_at + 1:]).split(" -- ")[0].strip()
        out.append((parts[0], parts[1], parts[scope_at], Path(path)))
    return out


def _place(src: Path, folder: Path) -> None:
    """Hard-link from the Maven repository where possible (no second copy on disk), else copy."""
    target = folder / src.name
    try:
        os.link(src, target)
    except OSError:
        shutil.copy2(src, target)


def _check_pyspark_matches_pom() -> None:
    """The pom compiles against, and leaves out, the Spark and Hadoop client of the installed pyspark wheel."""
    pom = POM.read_text()
    shipped = _shipped_by_pyspark()
    for prop, jar in (("spark.version", "spark-core_2.13-{}.jar"), ("hadoop.version", "hadoop-client-api-{}.jar")):
        version = re.search(rf"<{re.escape(prop)}>([^<]+)</", pom).group(1)
        if jar.format(version) not in shipped:
            found = sorted(n for n in shipped if n.startswith(jar.split("{")[0]))
            raise JvmBuildError(f"{POM}: {prop} is {version}, but pyspark ships {', '.join(found) or 'neither'}; "
                                "set the pom to the wheel's versions")


def build(offline: bool = False, run_tests: bool = True, quiet: bool = True, runtime_only: bool = False) -> Path:
    """Run Maven on ``pom.xml`` and lay out ``build_dir()``: the project jar, ``runtime/`` and ``test/`` (empty
    with ``runtime_only``, for an image). Atomic: the folder is assembled beside its final name and renamed, so a
    concurrent build or reader never sees half of one."""
    mvn, java = shutil.which("mvn"), shutil.which("java")
    if mvn is None or java is None or shutil.which("javac") is None:
        raise JvmBuildError("the JVM side needs a JDK (17+, with javac) and Maven (mvn) on PATH at install time: "
                            f"found java={java or 'none'}, mvn={mvn or 'none'}. Without them replays decode in "
                            "Python and have no Delta Lake, Spark Kafka source or s3a.")
    _check_pyspark_matches_pom()
    final = build_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
        target = Path(tmp) / "target"
        tests = _tests_dir()
        cmd = [mvn, "-B", "-f", str(POM), "package", f"-Dcdc.codecs.dir={_codecs_dir()}",
               f"-Dcdc.jobs.dir={_jobs_dir()}", f"-Dcdc.tests.dir={tests}", f"-Dcdc.build.dir={target}"]
        if quiet:
            cmd.append("-q")
        if offline:
            cmd.append("-o")
        if runtime_only:
            cmd += ["-Dcdc.runtime-only", "-Dmaven.test.skip=true"]
        elif not run_tests or not tests.is_dir():
            cmd.append("-DskipTests")
        done = subprocess.run(cmd, capture_output=quiet, text=True)
        if done.returncode != 0:
            raise JvmBuildError(f"mvn package failed (exit {done.returncode}):\n"
                                f"{((done.stdout or '') + (done.stderr or ''))[-4000:]}")
        layout = Path(tmp) / "layout"
        (layout / "runtime").mkdir(parents=True)
        (layout / "test").mkdir()
        shutil.copy2(target / "cdc-replay-jvm-1.jar", layout / PROJECT_JAR)
        shipped = _shipped_by_pyspark()
        for group, artifact_id, scope, jar in parse_dependency_list((target / "dependencies.txt").read_text()):
            if scope in ("compile", "runtime") and not _ships(shipped, artifact_id):
                _place(jar, layout / "runtime")
            elif scope == "test":  # JUnit stays: the HDFS minicluster's classes call its assertions
                _place(jar, layout / "test")
        try:
            os.rename(layout, final)
        except OSError:
            if not built():  # another build of the same digest won the race: theirs is the same
                raise
    return final


@lru_cache(maxsize=1)
def ensure_jar() -> Optional[Path]:
    """The project jar if ``python -m cdc_jobs.jvm`` built it for these sources; None otherwise (the decode then
    runs in Python). Never builds: jobs and tests do not run Maven."""
    jar = jar_path()
    if jar.is_file():
        return jar
    print(f"cdc-replay: no JVM build for these sources ({build_dir()}); run `make install` or "
          "`python -m cdc_jobs.jvm`. Decoding in Python.", file=sys.stderr)
    return None


_REGISTERED: dict[int, bool] = {}


# ``CDC_REPLAY_JVM_DECODE``: "auto" (the default) decodes in the JVM where the archive is big enough to gain
# (``cdc_jobs.transforms.jvm_decode.MIN_BYTES``), "on" wherever it can, "off" never (the escape hatch: decode in
# Python, as without a JDK). The earlier on/off spellings still work.
MODES = ("auto", "on", "off")
_ALIASES = {"0": "off", "false": "off", "no": "off", "1": "on", "true": "on", "yes": "on"}


def mode() -> str:
    value = os.environ.get("CDC_REPLAY_JVM_DECODE", "auto").strip().lower() or "auto"
    value = _ALIASES.get(value, value)
    if value not in MODES:
        raise UsageError(f"CDC_REPLAY_JVM_DECODE={value!r}: expected one of {', '.join(MODES)}")
    return value


def available(spark) -> bool:
    """Whether the session can run the JVM decodes: the jar is added to it and the adapter registered (once per
    session). ``ADD JAR`` works both in a JVM this process launched and under spark-submit."""
    if mode() == "off":
        return False
    key = id(spark._jsparkSession)
    if key not in _REGISTERED:
        _REGISTERED[key] = _register(spark)
    return _REGISTERED[key]


def _register(spark) -> bool:
    from cdc_jobs.transforms.jvm_decode import LINE_SPARK

    if not _add_jar(spark):
        return False
    for name, adapter in _ADAPTERS.items():
        spark.udf.registerJavaFunction(name, adapter, LINE_SPARK)
    return True


def _add_jar(spark) -> bool:
    jar = ensure_jar()
    if jar is None:
        return False
    # A session from cdc_jobs.spark.session() (or spark-submit --jars) has it already; another one adds it here.
    if str(jar) not in spark.sparkContext.getConf().get("spark.jars", "").split(","):
        spark.sql(f"ADD JAR '{jar}'")
    return True


def group_tally(spark, name: str, keys) -> str:
    """``name``, registered in the session (once) as the GROUP BY aggregate ``GroupTally`` for key columns of the
    struct type ``keys``, whatever ``CDC_REPLAY_JVM_DECODE`` says (it counts, it does not decode). Without the jar
    a replay cannot count, so it stops here, as a session without Delta's jars does
    (``cdc_jobs.spark.require_delta``)."""
    if not spark.catalog.functionExists(name):
        if not _add_jar(spark):
            raise RuntimeError(f"the project jar is not built for these sources ({build_dir()}): run `make install` "
                               "or `python -m cdc_jobs.jvm` (a replay counts its rows with it)")
        spark._jvm.cdcreplay.jobs.GroupTally.register(spark._jsparkSession, name, keys.json())
    return name


