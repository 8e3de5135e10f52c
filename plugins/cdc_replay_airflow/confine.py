"""Trigger-form values cannot escape (anyone allowed to trigger a run types them).

- Paths (source, out_dir, base, checkpoint, kafka_config file) must be absolute, contain no ``..`` and lie,
  after resolving symbolic links, under a configured root: the directories in ``$CDC_REPLAY_DATA_ROOTS``
  (``os.pathsep``-separated), the output root (``$CDC_REPLAY_OUTPUT_ROOT``) and the state roots of the
  configured pipelines. A form user can therefore never point a job's ``--out`` at, say, ``/etc`` or a
  colleague's home.
- No value may start with ``-``, hold a control character or a newline: with the ``--option=value`` argument
  form (`cdc_jobs.contract.JobArgs.to_argv`) a value cannot become an extra argument anyway, and such values are
  never legitimate paths, globs, topics or ids, so they are refused with the field's name rather than
  passed on.
- Kafka sources are ``kafka://HOST:PORT[,HOST:PORT]/TOPIC[,TOPIC]`` with valid topic names only.
- Object-store and HDFS locations (``s3a://``/``s3://``, ``gs://``, ``abfs[s]://``, ``hdfs://``) are confined the
  same way: no ``.`` or ``..`` segment, and under a root an administrator listed in ``$CDC_REPLAY_DATA_ROOTS``
  (e.g. ``s3a://bucket/cdc/``): same store (``s3``, ``s3a`` and ``s3n`` name one), same bucket or name node, and
  the path at or below the root's. No remote root listed, no remote location accepted.

Every refusal is a `ConfError` whose message starts with the field name in quotes.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

ROOTS_ENV = "CDC_REPLAY_DATA_ROOTS"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
KAFKA_SOURCE_RE = re.compile(
    r"^kafka://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):\d{1,5}(,(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):\d{1,5})*"
    r"/[A-Za-z0-9._\-]{1,249}(,[A-Za-z0-9._\-]{1,249})*$")
_GLOB_CHARS = re.compile(r"[*?\[]")


class ConfError(ValueError):
    """A manual trigger's conf cannot run; the message says which field and why."""


def plain(value: Any, field: str) -> str:
    """A text value that is safe as an argument value: no leading '-', no control characters."""
    text = str(value).strip()
    if _CONTROL.search(text):
        raise ConfError(f"'{field}': control characters and line breaks are not allowed")
    if text.startswith("-"):
        raise ConfError(f"'{field}': {text!r} starts with '-': a value cannot be an option")
    return text


# One entry of $CDC_REPLAY_DATA_ROOTS that is a URI: its own ':' (scheme, port) do not separate entries.
_URI_ENTRY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/:]*(?::\d+)?(?:/[^:]*)?")
# Stores a form may name, by the family Spark and storage treat as one store.
_REMOTE_FAMILY = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfs",
                  "hdfs": "hdfs"}


def split_roots(text: str) -> list[str]:
    """``$CDC_REPLAY_DATA_ROOTS`` entries: separated by ``os.pathsep`` as paths are, where a URI entry keeps the
    colons of its scheme and port (``/data:s3a://bucket/cdc/:hdfs://nn:8020/cdc``)."""
    out, rest = [], text
    while rest:
        m = _URI_ENTRY.match(rest)
        entry = m.group(0) if m and "://" in m.group(0) else rest.split(os.pathsep, 1)[0]
        if entry.strip():
            out.append(entry.strip())
        rest = rest[len(entry):]
        rest = rest[1:] if rest.startswith(os.pathsep) else rest
    return out


def roots(extra: Iterable[str] = ()) -> list[str]:
    from .plan import output_root

    listed = split_roots(os.environ.get(ROOTS_ENV, ""))
    return [r if "://" in r else os.path.realpath(r) for r in [*listed, output_root(), *extra]]


def _store(uri: str) -> tuple[str, str, str]:
    """(store family, bucket or name node, path without the leading and trailing '/')."""
    scheme, _, rest = uri.partition("://")
    authority, _, path = rest.partition("/")
    return _REMOTE_FAMILY.get(scheme.lower(), scheme.lower()), authority, path.strip("/")


def remote(text: str, field: str, allowed: list[str], *, glob: bool = False) -> str:
    """An object-store or HDFS location, under one of the listed remote roots."""
    scheme = text.partition("://")[0].lower()
    if scheme not in _REMOTE_FAMILY:
        raise ConfError(f"'{field}': {text!r}: unsupported scheme '{scheme}://' (local paths, kafka:// sources, "
                        "s3a://, s3://, gs://, abfs://, abfss:// and hdfs:// are accepted)")
    family, authority, path = _store(text)
    if not authority:
        raise ConfError(f"'{field}': {text!r} names no bucket or name node")
    segments = path.split("/") if path else []
    if ".." in segments:
        raise ConfError(f"'{field}': {text!r} contains '..'")
    if "." in segments or "" in segments:
        raise ConfError(f"'{field}': {text!r} has an empty or '.' path segment")
    fixed = path
    if glob and (magic := _GLOB_CHARS.search(path)):  # a glob is confined by the folder before its first wildcard
        head = path[:magic.start()]
        fixed = head.rsplit("/", 1)[0] if "/" in head else ""
    for root in (r for r in allowed if "://" in r):
        r_family, r_authority, r_path = _store(root)
        if (r_family, r_authority) == (family, authority) and (
                not r_path or fixed == r_path or fixed.startswith(r_path + "/")):
            return text
    remote_roots = [r for r in allowed if "://" in r]
    raise ConfError(f"'{field}': {text!r} is outside the locations runs may use ("
                    f"{', '.join(remote_roots) or 'no object-store root is listed'}; an administrator adds more "
                    f"with ${ROOTS_ENV}, e.g. s3a://bucket/cdc/)")


def _real(path: str) -> str:
    """realpath of the longest existing prefix (a symlink inside a root pointing out of it is caught) with the
    not-yet-existing rest appended."""
    head, tail = path, []
    while head and not os.path.exists(head) and os.path.dirname(head) != head:
        head, part = os.path.dirname(head), os.path.basename(head)
        tail.append(part)
    return os.path.join(os.path.realpath(head), *reversed(tail))


def path(value: Any, field: str, allowed: list[str], *, glob: bool = False, stores: bool = True) -> str:
    """A local path (or, with ``stores``, an object-store/HDFS location) under the allowed roots."""
    text = plain(value, field)
    if "://" in text and not text.startswith("file://"):
        if not stores:
            raise ConfError(f"'{field}': {text!r}: only a local path is accepted here")
        return remote(text, field, allowed, glob=glob)
    if text.startswith("file://"):
        text = text[len("file://"):]
    if not os.path.isabs(text):
        raise ConfError(f"'{field}': {text!r} must be an absolute path (the Spark job does not run in the "
                        "directory you have in mind)")
    if ".." in text.split("/"):
        raise ConfError(f"'{field}': {text!r} contains '..'")
    fixed = text
    if glob and _GLOB_CHARS.search(text):
        fixed = text[:_GLOB_CHARS.search(text).start()].rsplit("/", 1)[0] or "/"
    real = _real(os.path.normpath(fixed))
    if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in allowed):
        raise ConfError(f"'{field}': {text!r} is outside the directories runs may use ({', '.join(allowed)}; "
                        f"an administrator adds more with ${ROOTS_ENV})")
    return os.path.normpath(text) if not glob else text


def source(value: Any, field: str, allowed: list[str]) -> str:
    text = plain(value, field)
    if text.startswith("kafka://"):
        if not KAFKA_SOURCE_RE.match(text):
            raise ConfError(f"'{field}': {text!r} is not kafka://HOST:PORT[,HOST:PORT]/TOPIC[,TOPIC] (topic names: "
                            "letters, digits, '.', '_', '-', at most 249)")
        return text
    return path(text, field, allowed, glob=True)


def pattern(value: Any, field: str, regex: str, what: str) -> str:
    text = plain(value, field)
    if not re.fullmatch(regex, text):
        raise ConfError(f"'{field}': {text!r} is not {what}")
    return text
