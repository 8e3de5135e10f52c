"""The project's JVM side, one jar: the codecs' JVM twins of their decode fast paths (``codecs/*/jvm/*.java``,
pure Java and Jackson) and the decode step's Spark adapter (``jobs/transforms/jvm/*.java``).

Compiled with ``javac`` against the jars PySpark ships (Jackson, Spark's Java UDF API): no Maven, no other
download. The jar's name carries a digest of the sources and the PySpark version, so a change to either builds
a new one; ``make install`` and the Docker image build it ahead (``python -m cdc_jobs.jvm``), and a session that
finds none builds it on first use. Without a JDK there is no jar, and the decode runs in Python, which gives the
same rows (``tests/codecs/test_jvm_fast_paths.py``), only slower; ``available`` says which.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

from cdc_jobs.errors import UsageError

_HERE = Path(__file__).resolve().parent
# The Spark SQL functions the decode step calls (``cdc_jobs.transforms.jvm_decode``): blocks of lines, blocks of
# Avro container records.
LINE_BLOCK_DECODE = "cdc_line_block_decode"
AVRO_BLOCK_DECODE = "cdc_avro_block_decode"
_ADAPTERS = {LINE_BLOCK_DECODE: "cdcreplay.jobs.LineBlockDecode", AVRO_BLOCK_DECODE: "cdcreplay.jobs.AvroBlockDecode"}


def sources() -> list[Path]:
    import cdc_codecs

    codecs = Path(cdc_codecs.__file__).resolve().parent
    return sorted(codecs.glob("**/jvm/*.java")) + sorted(_HERE.glob("**/jvm/*.java"))


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def jar_path() -> Path:
    """Where the jar of these sources is (or will be built): ``$CDC_REPLAY_JVM_DIR``, else ~/.cache/cdc-replay."""
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources():
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    root = Path(os.environ.get("CDC_REPLAY_JVM_DIR") or Path.home() / ".cache" / "cdc-replay")
    return root / f"cdc-replay-jvm-{digest.hexdigest()[:16]}.jar"


def build() -> Path:
    """Compile the sources into ``jar_path()`` (atomically: a concurrent build or reader never sees half a jar)."""
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("javac not found: install a JDK (17+) to build the JVM decode fast paths")
    jar = jar_path()
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cdc-replay-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        # -proc:none: no annotation processors from Spark's jars; --release: the bytecode Java 17 runs
        subprocess.run([javac, "-proc:none", "--release", "17", "-nowarn", "-d", str(classes),
                        "-cp", str(_spark_jars() / "*"), *map(str, sources())], check=True,
                       capture_output=True, text=True)
        partial = jar.with_name(f".{jar.name}.{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: cdc-replay\n")
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        os.replace(partial, jar)
    return jar


@lru_cache(maxsize=1)
def ensure_jar() -> Optional[Path]:
    """The jar, built now if it is missing and a JDK is here; None without one (the decode then runs in Python)."""
    jar = jar_path()
    if jar.is_file():
        return jar
    if shutil.which("javac") is None:
        return None
    try:
        return build()
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        print(f"cdc-replay: the JVM decode fast paths did not build, decoding in Python: {detail[-2000:]}",
              file=sys.stderr)
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
    """Whether the session can run the JVM twins: the jar is added to it and the adapter registered (once per
    session). ``ADD JAR`` works both in a JVM this process launched and under spark-submit."""
    if mode() == "off":
        return False
    key = id(spark._jsparkSession)
    if key not in _REGISTERED:
        _REGISTERED[key] = _register(spark)
    return _REGISTERED[key]


def _register(spark) -> bool:
    from cdc_jobs.transforms.jvm_decode import LINE_SPARK

    jar = ensure_jar()
    if jar is None:
        return False
    spark.sql(f"ADD JAR '{jar}'")
    for name, adapter in _ADAPTERS.items():
        spark.udf.registerJavaFunction(name, adapter, LINE_SPARK)
    return True


if __name__ == "__main__":  # python -m cdc_jobs.jvm: build the jar now (make install, the Docker image)
    print(build())
