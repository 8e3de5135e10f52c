"""`cdc-replay formats`: every registered format with its capabilities (the README carries the same table)."""

from __future__ import annotations

import argparse

from cdc_codecs.base import jvm_container_twins, jvm_declaration_text, jvm_message_text
from cdc_codecs.registry import FORMATS, get_codec


def capability_rows() -> list[dict]:
    rows = []
    for name in sorted(FORMATS):
        try:
            codec = get_codec(name)
        except ImportError as exc:
            rows.append({"format": name, "vendor": "?", "error": f"not available: {exc}"})
            continue
        rows.append({"format": name, "vendor": codec.vendor, **codec.capabilities.as_dict(), "jvm": _jvm(codec)})
    return rows


def _jvm(codec) -> str:
    """Where a replay decodes the format in Spark's JVM (``cdc_jobs.transforms.jvm_decode``; its plain messages, the
    rest in Python): by a declaration of its keys' roles (line archives, Kafka topics and dumps), or by a twin of its
    container fast path."""
    kinds = ["declared, line archives, Kafka topics and dumps"] if jvm_declaration_text(codec) else []
    twin_kafka = not jvm_declaration_text(codec) and jvm_message_text(codec)
    kinds += [f"twin, Avro container archives{', Kafka topics and dumps' if twin_kafka else ''}"] \
        if jvm_container_twins(codec) else []
    return "; ".join(kinds) or "no"


# How `replay --to-format` splits the work (see ``Capabilities.order_scope``).
_ORDER = {"key": "per key, in source order (encoded where decoded; shuffled by key and sorted for multi-message "
                 "sources and --sink)",
          "table": "per table (message/transaction groups kept: one sorted, streamed task per table)"}


# Whether a format names a schema between database and table (``Capabilities.schema_level``).
_SCHEMA_LEVEL = {True: "yes", False: "no: a schema is written as the database"}


def markdown_table(rows: list[dict]) -> str:
    head = "| format | vendor | binary | typed values | update before image | update after image | delete image | key names | schema level | transactions | messages per update | re-encode order | JVM decode | declared losses | notes |"
    lines = [head, "|" + "---|" * 15]
    for r in rows:
        if "error" in r:
            lines.append(f"| `{r['format']}` | {r['vendor']} | | | | | | | | | | | | | {r['error']} |")
            continue
        lines.append(
            f"| `{r['format']}` | {r['vendor']} | {'yes' if r['binary'] else 'no'} | "
            f"{'yes' if r['typed_values'] else 'no'} | {r['before_image']} | {r['after_image']} | {r['delete_image']} | "
            f"{'yes' if r['primary_key'] else 'no'} | {_SCHEMA_LEVEL[r['schema_level']]} | "
            f"{'yes' if r['transactions'] else 'no'} | {r['messages_per_update']} | "
            f"{_ORDER[r['order_scope']]} | {r['jvm']} | {_losses(r['losses'])} | {r['notes']} |")
    return "\n".join(lines)


def _losses(losses: dict) -> str:
    """``family: loss`` pairs; "exact" when the format carries every type family exactly."""
    return ", ".join(f"{fam}: {loss}" for fam, loss in sorted(losses.items())) or "exact"


def required_rows() -> list[dict]:
    """Per format and message kind, the fields a message must carry (``Codec.required``): a message without one,
    or with one of another JSON type, is a dead letter naming the field."""
    rows = []
    for name in sorted(FORMATS):
        try:
            required = get_codec(name).required
        except ImportError:
            continue
        for kind, fields in required.describe().items():
            rows.append({"format": name, "kind": kind, "fields": fields, "table": required.table})
    return rows


def required_table(rows: list[dict]) -> str:
    lines = ["| format | message kind | required fields (path: JSON type) |", "|---|---|---|"]
    lines += [f"| `{r['format']}` | {r['kind']} | {'; '.join(f'`{f}`' for f in r['fields'])} |" for r in rows]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    print(markdown_table(capability_rows()))
    print("\nRequired fields (a message missing one, or carrying it with another JSON type, is a dead letter naming "
          "the field; every data event also needs its table):\n")
    print(required_table(required_rows()))
    return 0
