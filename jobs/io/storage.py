"""One storage layer for every input and output path: a plain path or a filesystem URI.

Accepted forms (README "Storage by URI"):
  /data/out, relative/out, file:///data/out      the local or a mounted POSIX file system
  s3a://bucket/key, s3://bucket/key              S3 and S3-compatible stores (MinIO, Ceph, ...)
  gs://bucket/key                                Google Cloud Storage
  abfs://container@account.dfs.core.windows.net/key, abfss://...   Azure Data Lake Storage Gen2
  hdfs://namenode:8020/path                      HDFS (needs libhdfs / HADOOP_HOME on the driver)

Spark reads and writes through its Hadoop FileSystem (``spark_uri`` gives the name Spark wants: ``s3a://`` for
S3); what the driver writes itself (counts, checkpoints, state file, reports, the commit pointer) goes through
``pyarrow.fs``. Credentials and endpoints come only from the standard environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL[_S3], AWS_REGION; GOOGLE_APPLICATION_CREDENTIALS;
AZURE_STORAGE_ACCOUNT_KEY ...), which Airflow fills from its connections, never from arguments.
"""

from __future__ import annotations

import functools
import io
import os
import posixpath
import tempfile
from pathlib import Path
from typing import Iterator, Optional
from urllib.parse import urlsplit

import pyarrow.fs as pafs

LOCAL_SCHEMES = {"", "file"}
S3_SCHEMES = {"s3", "s3a", "s3n"}
REMOTE_SCHEMES = S3_SCHEMES | {"gs", "gcs", "abfs", "abfss", "hdfs", "viewfs"}


def scheme_of(uri: str) -> str:
    if len(uri) > 1 and uri[1] == ":" and uri[0].isalpha():  # a Windows drive letter is not a scheme
        return ""
    return urlsplit(uri).scheme.lower() if "://" in uri else ""


def is_local(uri: str) -> bool:
    return scheme_of(str(uri)) in LOCAL_SCHEMES


def check_uri(uri: str, option: str) -> str:
    s = scheme_of(uri)
    if s not in LOCAL_SCHEMES | REMOTE_SCHEMES:
        raise ValueError(f"{option}: unsupported storage scheme '{s}://' in '{uri}' (use a path, file://, "
                         f"s3a://, s3://, gs://, abfs://, abfss:// or hdfs://)")
    return uri


def local_path(uri: str) -> Path:
    """The absolute local path of a plain path or file:// URI."""
    uri = str(uri)
    if uri.startswith("file://"):
        uri = urlsplit(uri).path
    return Path(uri).absolute()


def join(uri: str, *parts: str) -> str:
    uri = str(uri)
    if is_local(uri):
        return str(local_path(uri).joinpath(*parts))
    return posixpath.join(uri.rstrip("/"), *parts)


def parent(uri: str) -> str:
    if is_local(uri):
        return str(local_path(uri).parent)
    s = urlsplit(uri)
    return f"{s.scheme}://{s.netloc}{posixpath.dirname(s.path.rstrip('/'))}"


def name(uri: str) -> str:
    return local_path(uri).name if is_local(uri) else posixpath.basename(urlsplit(uri).path.rstrip("/"))


def spark_uri(uri: str) -> str:
    """The same location as Spark's Hadoop FileSystem names it (S3 is ``s3a://``)."""
    uri = str(uri)
    if is_local(uri):
        return str(local_path(uri))
    s = scheme_of(uri)
    return "s3a" + uri[len(s):] if s in S3_SCHEMES else uri


def _endpoint() -> Optional[str]:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


@functools.lru_cache(maxsize=None)
def _s3(endpoint: Optional[str], region: Optional[str]) -> pafs.S3FileSystem:
    kwargs: dict = {}
    if endpoint:
        parts = urlsplit(endpoint)
        kwargs["endpoint_override"] = parts.netloc or parts.path
        kwargs["scheme"] = parts.scheme or "https"
        # S3-compatible servers (MinIO, moto) serve buckets as paths, not as host names.
        kwargs["force_virtual_addressing"] = False
    if region:
        kwargs["region"] = region
    # Keys, session token and profile come from the AWS default chain (environment, ~/.aws, instance role).
    return pafs.S3FileSystem(**kwargs)


def configure_spark(spark) -> None:
    """Point Spark's s3a connector at the same store the driver's pyarrow writes reach, from the standard AWS
    variables of this process as they are now: endpoint (path-style access), region, and the keys. They go into
    the job's Hadoop configuration, which Spark ships with every task: a cluster's executors do not inherit the
    driver's environment, and Spark itself copies the AWS_* keys only when its context starts, so a session
    shared by several jobs (tests, notebooks) must follow the environment each job runs with. In memory only,
    never on a command line or in a log. Explicit spark.hadoop.fs.s3a.* settings (spark-defaults, the Airflow
    connection's conf) win."""
    try:
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        explicit = spark.sparkContext.getConf()
    except Exception:  # noqa: BLE001 - Spark Connect: the server's own configuration applies
        return
    endpoint = _endpoint()
    settings = {"fs.s3a.endpoint": endpoint, "fs.s3a.path.style.access": "true" if endpoint else None,
                "fs.s3a.endpoint.region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
                "fs.s3a.access.key": os.environ.get("AWS_ACCESS_KEY_ID"),
                "fs.s3a.secret.key": os.environ.get("AWS_SECRET_ACCESS_KEY"),
                "fs.s3a.session.token": os.environ.get("AWS_SESSION_TOKEN")}
    for key, value in settings.items():
        if value and not explicit.contains(f"spark.hadoop.{key}"):
            conf.set(key, value)


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow file system, path inside it) for a path or URI."""
    uri = str(uri)
    s = scheme_of(uri)
    if s in LOCAL_SCHEMES:
        return pafs.LocalFileSystem(), str(local_path(uri))
    if s in S3_SCHEMES:
        parts = urlsplit(uri)
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        return _s3(_endpoint(), region), f"{parts.netloc}{parts.path}".rstrip("/")
    if s == "hdfs":
        parts = urlsplit(uri)
        return _hdfs(parts.netloc), parts.path.rstrip("/") or "/"
    if s == "gcs":
        uri = "gs" + uri[len(s):]
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path.rstrip("/")


def _hadoop_setting(name: str) -> Optional[str]:
    """A property of the Hadoop client configuration in ``$HADOOP_CONF_DIR`` (hdfs-site.xml, core-site.xml)."""
    import xml.etree.ElementTree as ET

    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    for file in ("hdfs-site.xml", "core-site.xml"):
        path = Path(conf_dir or "", file)
        if not conf_dir or not path.is_file():
            continue
        for prop in ET.parse(path).getroot().iter("property"):
            if (prop.findtext("name") or "").strip() == name:
                return (prop.findtext("value") or "").strip()
    return None


@functools.lru_cache(maxsize=None)
def _hdfs(namenode: str) -> pafs.FileSystem:
    """HDFS for what Python reads and writes (Spark has its own client): pyarrow's libhdfs binding where the
    machine has a Hadoop installation, else WebHDFS, the name node's HTTP API (no native library), at the
    address the standard client configuration gives (``dfs.namenode.http-address`` in $HADOOP_CONF_DIR)."""
    host, _, port = namenode.partition(":")
    try:
        return pafs.HadoopFileSystem(host, int(port or 8020), user=os.environ.get("HADOOP_USER_NAME"))
    except (OSError, ImportError):
        pass
    address = (_hadoop_setting(f"dfs.namenode.http-address.{host}") or _hadoop_setting("dfs.namenode.http-address"))
    if not address:
        raise OSError(f"hdfs://{namenode}: no libhdfs here, and no dfs.namenode.http-address for WebHDFS in "
                      f"$HADOOP_CONF_DIR/hdfs-site.xml ({os.environ.get('HADOOP_CONF_DIR') or 'not set'})")
    from fsspec.implementations.webhdfs import WebHDFS

    http_host, _, http_port = address.rpartition(":")
    if http_host in ("", "0.0.0.0"):
        http_host = host
    import getpass

    web = WebHDFS(http_host, port=int(http_port), user=os.environ.get("HADOOP_USER_NAME") or getpass.getuser())
    return pafs.PyFileSystem(pafs.FSSpecHandler(web))


def info(uri: str) -> pafs.FileInfo:
    fs, path = filesystem(uri)
    return fs.get_file_info(path)


def exists(uri: str) -> bool:
    return info(uri).type != pafs.FileType.NotFound


def is_file(uri: str) -> bool:
    return info(uri).type == pafs.FileType.File


def is_dir(uri: str) -> bool:
    """A directory; on object stores, a prefix with at least one object under it."""
    fs, path = filesystem(uri)
    t = fs.get_file_info(path).type
    if t == pafs.FileType.Directory:
        return True
    if t == pafs.FileType.NotFound and not is_local(uri):
        return bool(fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False)))
    return False


def listdir(uri: str) -> list[str]:
    """Names of the entries directly under ``uri`` (empty when it does not exist)."""
    fs, path = filesystem(uri)
    return sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))


def walk_files(uri: str) -> Iterator[tuple[str, int]]:
    """(path relative to ``uri``, size) of every file under it, sorted."""
    fs, path = filesystem(uri)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
    for i in sorted(infos, key=lambda i: i.path):
        if i.type == pafs.FileType.File:
            yield posixpath.relpath(i.path, path), i.size


def read_bytes(uri: str) -> bytes:
    fs, path = filesystem(uri)
    with fs.open_input_stream(path) as f:
        return f.read()


def read_text(uri: str) -> str:
    return read_bytes(uri).decode("utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    """Readers never see half a file: a local file is written beside and renamed into place; an object store
    makes an object visible only when its upload completes (one PUT for the small files written here)."""
    if is_local(uri):
        path = local_path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    fs, path = filesystem(uri)
    with fs.open_output_stream(path) as f:
        f.write(data)


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode("utf-8"))


def delete(uri: str) -> None:
    """Remove a file or a whole directory tree; nothing happens when it is not there."""
    fs, path = filesystem(uri)
    t = fs.get_file_info(path).type
    if t == pafs.FileType.File:
        fs.delete_file(path)
    elif t == pafs.FileType.Directory or not is_local(uri):
        try:
            fs.delete_dir(path)
        except (FileNotFoundError, OSError):
            if is_dir(uri):
                raise


def upload_tree(local: Path, uri: str) -> None:
    """Copy a local directory tree to ``uri`` (e.g. a local archive into a bucket)."""
    fs, path = filesystem(uri)
    pafs.copy_files(str(local), path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs,
                    use_threads=True)


class _ArrowRaw(io.RawIOBase):
    """A pyarrow input file as a raw Python stream, so BufferedReader/gzip give it lines, seek and tell."""

    def __init__(self, f):
        self.f = f

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.f.read(len(b))
        b[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def close(self) -> None:
        self.f.close()
        super().close()


def open_input(uri: str) -> io.BufferedReader:
    """A seekable binary reader of a local file or an object (ranged GETs on object stores)."""
    if is_local(uri):
        return open(local_path(uri), "rb")  # noqa: SIM115
    fs, path = filesystem(uri)
    return io.BufferedReader(_ArrowRaw(fs.open_input_file(path)), buffer_size=1 << 20)


def size(uri: str) -> int:
    return os.path.getsize(local_path(uri)) if is_local(uri) else info(uri).size


def total_size(uris: list[str], enough: int) -> int:
    """The files' bytes added up, or the first sum that reaches ``enough``: the callers only ask whether an input
    is that big, and each size of an object store's file is a request."""
    total = 0
    for uri in uris:
        total += size(uri)
        if total >= enough:
            break
    return total


def list_files(source: str) -> list[str]:
    """Files of a remote source: the object itself, everything under a prefix, or a glob's matches. Names
    starting with '.' or '_' (Spark markers, hidden files), and everything under such folders, are skipped."""
    import fnmatch

    s = urlsplit(source)
    head = f"{s.scheme}://{s.netloc}"
    magic = any(c in s.path for c in "*?[")
    if not magic and is_file(source):
        return [source]
    root = source if not magic else head + s.path[: s.path.rfind("/", 0, min(
        i for i in (s.path.find(c) for c in "*?[") if i >= 0))]
    out = []
    for rel, _ in walk_files(root):
        if any(part.startswith((".", "_")) for part in rel.split("/")):
            continue
        uri = join(root, rel)
        if not magic or fnmatch.fnmatchcase(uri, source):
            out.append(uri)
    return out
