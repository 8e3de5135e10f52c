"""A directory on an object store or HDFS, with the few ``pathlib.Path`` operations the jobs use on their
staging and input directories (``/``, ``str`` for Spark, read/write text, glob, is_dir ...), so a job body works
unchanged whether its output is local or remote."""

from __future__ import annotations

import fnmatch
import re
from typing import Iterator

from cdc_jobs.io import storage


class RemoteDir:
    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")

    def __truediv__(self, part: str) -> "RemoteDir":
        return RemoteDir(storage.join(self.uri, str(part)))

    def __str__(self) -> str:
        return storage.spark_uri(self.uri)  # what Spark's reader/writer is given

    def __repr__(self) -> str:
        return f"RemoteDir({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteDir) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    def __lt__(self, other: "RemoteDir") -> bool:  # sorted(), as Paths sort
        return self.uri < other.uri

    @property
    def name(self) -> str:
        return storage.name(self.uri)

    @property
    def suffix(self) -> str:
        n = self.name
        return n[n.rindex("."):] if "." in n.lstrip(".") else ""

    @property
    def parent(self) -> "RemoteDir":
        return RemoteDir(storage.parent(self.uri))

    def exists(self) -> bool:
        return storage.exists(self.uri) or storage.is_dir(self.uri)

    def is_dir(self) -> bool:
        return storage.is_dir(self.uri)

    def is_file(self) -> bool:
        return storage.is_file(self.uri)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        fs, path = storage.filesystem(self.uri)
        fs.create_dir(path, recursive=True)  # object stores have no directories: nothing to create

    def read_text(self, encoding: str = "utf-8") -> str:
        return storage.read_bytes(self.uri).decode(encoding)

    def read_bytes(self) -> bytes:
        return storage.read_bytes(self.uri)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        storage.write_bytes(self.uri, text.encode(encoding))
        return len(text)

    def write_bytes(self, data: bytes) -> int:
        storage.write_bytes(self.uri, data)
        return len(data)

    def unlink(self, missing_ok: bool = False) -> None:
        storage.delete(self.uri)

    def rename(self, target: "RemoteDir") -> "RemoteDir":
        fs, src = storage.filesystem(self.uri)
        _, dst = storage.filesystem(target.uri)
        fs.move(src, dst)  # a copy on object stores: used only inside an uncommitted attempt
        return target

    def iterdir(self) -> Iterator["RemoteDir"]:
        for n in storage.listdir(self.uri):
            yield self / n

    def glob(self, pattern: str) -> Iterator["RemoteDir"]:
        if "/" in pattern:
            raise ValueError(f"RemoteDir.glob: one level only, got {pattern!r}")
        for n in storage.listdir(self.uri):
            if fnmatch.fnmatchcase(n, pattern):
                yield self / n

    def rglob(self, pattern: str) -> Iterator["RemoteDir"]:
        for rel, _ in storage.walk_files(self.uri):
            if fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern):
                yield RemoteDir(storage.join(self.uri, rel))

    def normalise_part_names(self, spark_part: re.Pattern, table_log: str) -> None:
        """Renames Spark's part files as ``cdc_jobs.io.atomic.normalise_part_names`` does, except inside a
        table whose log (a ``table_log`` directory) names its files."""
        files = [rel for rel, _ in storage.walk_files(self.uri)]
        parts = [rel.split("/") for rel in files]
        tables = {tuple(p[:p.index(table_log)]) for p in parts if table_log in p[:-1]}
        by_dir: dict[str, list[str]] = {}
        for rel, p in zip(files, parts):
            if any(tuple(p[:len(t)]) == t for t in tables):
                continue
            d, _, f = rel.rpartition("/")
            if f.endswith(".crc"):
                (self / rel).unlink()
            elif spark_part.match(f):
                by_dir.setdefault(d, []).append(f)
        for d, files in by_dir.items():
            base = self / d if d else self
            for i, f in enumerate(sorted(files)):
                (base / f).rename(base / f"part-{i:05d}{spark_part.match(f).group(2)}")
