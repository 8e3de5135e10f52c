"""HDFS for the tests: Hadoop's MiniDFSCluster (a name node and one data node in one JVM, from the
``hadoop-client-minicluster`` test jars ``make install`` resolves), on 127.0.0.1 with free ports. Clients find it
as users' clients do: ``hdfs://127.0.0.1:PORT/...`` URIs for Spark, and ``$HADOOP_CONF_DIR/hdfs-site.xml`` with
the name node's HTTP address for what Python reads and writes over WebHDFS."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from cdc_jobs import jvm

from processes import stop  # beside this file


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Hdfs:
    process: subprocess.Popen
    port: int
    conf_dir: Path
    log: Path

    @property
    def url(self) -> str:
        return f"hdfs://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop(self.process)


def _setting(conf_xml: Path, name: str) -> str:
    for prop in ET.parse(conf_xml).getroot().iter("property"):
        if prop.findtext("name") == name:
            return prop.findtext("value") or ""
    raise KeyError(f"{name} is not in {conf_xml}")


def start_hdfs(work: Path, timeout_s: float = 120.0) -> Hdfs:
    jars = jvm.test_jars()
    if not jars:
        raise RuntimeError("no test jars: `make install` resolves hadoop-client-minicluster (cdc_jobs.jvm)")
    port = _free_port()
    work.mkdir(parents=True, exist_ok=True)
    written, details, log = work / "minicluster.xml", work / "details.json", work / "minicluster.log"
    argv = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dtest.build.data={work / 'data'}",
            # the minicluster's shaded jar calls the Hadoop client PySpark ships (left out of the test folder)
            "-cp", os.pathsep.join([*map(str, jars), str(jvm.pyspark_jars_dir() / "*")]), "org.apache.hadoop.test.MiniDFSClusterManager",
            "-nnport", str(port), "-datanodes", "1", "-format", "-writeConfig", str(written),
            "-writeDetails", str(details)]
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=work,
                            start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MiniDFSCluster exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if details.exists() and details.stat().st_size and written.exists() and written.stat().st_size:
            break
        time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError(f"MiniDFSCluster did not start within {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")
    # Only what a client needs: the cluster's own file also sets fs.defaultFS, which would turn every plain path
    # of a Spark started with this HADOOP_CONF_DIR into an HDFS path.
    conf_dir = work / "conf"
    conf_dir.mkdir(exist_ok=True)
    http = _setting(written, "dfs.namenode.http-address")
    (conf_dir / "hdfs-site.xml").write_text(
        "<?xml version=\"1.0\"?>\n<configuration>\n"
        f"  <property><name>dfs.namenode.http-address</name><value>{http}</value></property>\n"
        "</configuration>\n")
    return Hdfs(proc, port, conf_dir, log)
