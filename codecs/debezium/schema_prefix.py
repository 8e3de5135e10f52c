"""Kafka Connect's JsonConverter (``schemas.enable=true``) writes the table's whole Connect schema, ~2 KB, before
the payload of every message: the same text for every change of a table, and most of the message. Parsing it
again for each message was half of debezium-json's decode.

``SchemaPrefixes`` remembers, per distinct schema, the exact text a message opens with up to its payload
(``{"schema":<schema>,"payload":``), with the schema parsed once and its literal text (the vendor data keeps
it). A message that opens with a remembered text has only its payload parsed. Anything else (another
spelling, keys beside the two, broken JSON) is parsed whole as before, so errors and results do not change.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from .. import jsontext
from ..shared.json_fix import literal

OPEN = '{"schema":'
PAYLOAD = ',"payload":'
LIMIT = 32  # distinct schemas kept, most recently used first: a topic's messages cycle through its tables'
# Payloads nested this deep (brackets) are parsed with their envelope, whose one more level counts towards
# jsontext.MAX_DEPTH: the split parse must refuse exactly what the whole parse refuses.
_SHALLOW = jsontext.MAX_DEPTH // 2


class SchemaPrefixes:
    def __init__(self) -> None:
        self._known: list[tuple[str, Any, str]] = []  # (opening text, parsed schema, schema's literal text)

    def parse(self, text: str) -> Optional[dict]:
        """The message, when ``text`` opens with a remembered schema and the rest is exactly one payload and the
        closing brace; else None (the caller parses the whole text). ``text_of`` gives the schema's literal."""
        if not text.startswith(OPEN):
            return None
        for i, (opening, schema, _text) in enumerate(self._known):
            if text.startswith(opening):
                break
        else:
            return None
        if i:  # most recently used first; the list is replaced, not changed, so a concurrent reader is safe
            known = self._known
            self._known = [known[i]] + known[:i] + known[i + 1:]
        rest = text[len(opening):].rstrip()
        if not rest.endswith("}"):
            return None
        body = rest[:-1]
        if body.count("{") + body.count("[") > _SHALLOW:
            return None
        try:
            payload, _repaired = jsontext.loads(body)  # its trailing commas repaired as the whole parse would
        except json.JSONDecodeError:
            return None  # keys after the payload, a broken payload: the whole parse decides
        return {"schema": schema, "payload": payload}

    def learn(self, text: str, msg: dict) -> None:
        """After a whole parse of ``text`` into ``msg``: remember its opening when it is ``{"schema":<S>,
        "payload":`` with ``<S>`` the message's schema."""
        if not text.startswith(OPEN) or list(msg) != ["schema", "payload"]:
            return
        try:
            schema, end = jsontext.value_at(text, len(OPEN))
        except json.JSONDecodeError:
            return
        if not text.startswith(PAYLOAD, end) or schema != msg["schema"] or not isinstance(schema, dict):
            return
        opening = (text[:end + len(PAYLOAD)], msg["schema"], literal(msg["schema"]))
        self._known = [opening] + self._known[:LIMIT - 1]

    def text_of(self, schema: Any) -> str:
        """The literal text of a parsed schema: the remembered one when ``parse`` gave this very object (so the
        caches keyed by it compare one string object, not 2 KB), else written now."""
        for _, known, schema_text in self._known:
            if known is schema:
                return schema_text
        return literal(schema)
