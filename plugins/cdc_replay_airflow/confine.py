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


def roots(extra: Iterable[str] = ()) -> list[str]:
    from .plan import output_root

    listed = [r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r.strip()]
    return [os.path.realpath(r) for r in [*listed, output_root(), *extra]]


def _real(path: str) -> str:
    """realpath of the longest existing prefix (a symlink inside a root pointing out of it is caught) with the
    not-yet-existing rest appended."""
    head, tail = path, []
    while head and not os.path.exists(head) and os.path.dirname(head) != head:
        head, part = os.path.dirname(head), os.path.basename(head)
        tail.append(part)
    return os.path.join(os.path.realpath(head), *reversed(tail))


def path(value: Any, field: str, allowed: list[str], *, glob: bool = False) -> str:
    text = plain(value, field)
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
    if "://" in text:
        raise ConfError(f"'{field}': {text!r}: only local paths and kafka:// sources are accepted here")
    return path(text, field, allowed, glob=True)


def pattern(value: Any, field: str, regex: str, what: str) -> str:
    text = plain(value, field)
    if not re.fullmatch(regex, text):
        raise ConfError(f"'{field}': {text!r} is not {what}")
    return text
