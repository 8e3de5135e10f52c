"""DDL text -> the column-level actions merge applies (pure Python: ADD / DROP / RENAME / CHANGE / MODIFY
COLUMN in MySQL and PostgreSQL spellings, TRUNCATE / DROP TABLE); statements that change no column give ``[]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_STOP = {"null", "not", "default", "comment", "after", "first", "auto_increment", "primary", "unique", "key",
         "character", "charset", "collate", "generated", "as", "on", "references", "check", "constraint",
         "invisible", "visible", "storage", "column_format", "srid", "using", "identity"}
_NOT_COLUMN = {"index", "key", "primary", "unique", "constraint", "foreign", "fulltext", "spatial", "partition",
               "check", "period", "system", "default", "foreign"}
_TOKEN = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\[[^\]]*\]"
                    r"|[\w$#.+-]+(?:\s*\([^)]*\))?|\([^)]*\)|\S")


@dataclass(frozen=True)
class DdlAction:
    kind: str  # add | drop | rename | modify | truncate
    column: Optional[str] = None
    new_name: Optional[str] = None
    type_name: Optional[str] = None
    default: Optional[str] = None


def _unquote(ident: str) -> str:
    ident = ident.strip()
    if len(ident) >= 2 and ident[0] == ident[-1] and ident[0] in "`\"":
        q = ident[0]
        return ident[1:-1].replace(q + q, q)
    if len(ident) >= 2 and ident[0] == "[" and ident[-1] == "]":
        return ident[1:-1]
    return ident


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _literal(token: str) -> Optional[str]:
    if token.lower() == "null":
        return None
    if len(token) >= 2 and token[0] == token[-1] == "'":
        return token[1:-1].replace("''", "'").replace("\\'", "'")
    if re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", token):
        return token
    return None  # an expression (CURRENT_TIMESTAMP, now()): value unknown here, old rows get NULL


def _column_definition(tokens: list[str]) -> tuple[Optional[str], Optional[str]]:
    """``decimal(10,2) unsigned NOT NULL DEFAULT '0.00' AFTER x`` -> (type text, default literal)."""
    type_parts: list[str] = []
    i = 0
    while i < len(tokens) and not (type_parts and tokens[i].lower() in _STOP):
        type_parts.append(tokens[i])
        i += 1
    default = None
    for j in range(i, len(tokens) - 1):
        if tokens[j].lower() == "default":
            default = _literal(tokens[j + 1])
            break
    type_name = " ".join(type_parts) or None
    return type_name, default


def _spec(spec: str) -> Optional[DdlAction]:
    tokens = _TOKEN.findall(spec)
    low = [t.lower() for t in tokens]
    if not tokens:
        return None

    def skip(i: int, *words: str) -> int:
        while i < len(low) and low[i] in words:
            i += 1
        return i

    verb = low[0]
    if verb == "add":
        i = skip(1, "column")
        if i < len(low) and low[i] == "if":
            i = skip(i, "if", "not", "exists")
        if i >= len(tokens) or low[i] in _NOT_COLUMN or tokens[i].startswith("("):
            return None
        type_name, default = _column_definition(tokens[i + 1:])
        return DdlAction("add", _unquote(tokens[i]), type_name=type_name, default=default)
    if verb == "drop":
        i = skip(1, "column")
        if i < len(low) and low[i] == "if":
            i = skip(i, "if", "exists")
        if i >= len(tokens) or low[i] in _NOT_COLUMN:
            return None
        return DdlAction("drop", _unquote(tokens[i]))
    if verb == "rename" and len(low) >= 4 and low[1] == "column" and "to" in low:
        t = low.index("to")
        return DdlAction("rename", _unquote(tokens[2]), new_name=_unquote(tokens[t + 1]))
    if verb == "change":
        i = skip(1, "column")
        if i + 1 >= len(tokens):
            return None
        type_name, _ = _column_definition(tokens[i + 2:])
        old, new = _unquote(tokens[i]), _unquote(tokens[i + 1])
        return DdlAction("rename" if old != new else "modify", old, new_name=new if old != new else None,
                         type_name=type_name)
    if verb == "modify":
        i = skip(1, "column")
        if i >= len(tokens):
            return None
        type_name, _ = _column_definition(tokens[i + 1:])
        return DdlAction("modify", _unquote(tokens[i]), type_name=type_name)
    if verb == "alter":
        i = skip(1, "column")
        if i + 1 < len(low):
            j = skip(i + 1, "set", "data")
            if j < len(low) and low[j] == "type":
                type_name, _ = _column_definition(tokens[j + 1:])
                return DdlAction("modify", _unquote(tokens[i]), type_name=type_name)
    return None


_QNAME = r"(?:`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\w$#]+)(?:\s*\.\s*(?:`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\w$#]+))*"


def parse_ddl(sql: Optional[str], op: str = "DDL") -> list[DdlAction]:
    """The column-level effects of one DDL statement; ``[]`` when it changes no column (index, comment, ...)."""
    if op == "TRUNCATE":
        return [DdlAction("truncate")]
    text = re.sub(r"/\*.*?\*/", " ", sql or "", flags=re.S).strip().rstrip(";").strip()
    if re.match(r"truncate\b", text, re.I) or re.match(r"drop\s+table\b", text, re.I):
        return [DdlAction("truncate")]
    m = re.match(rf"alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?{_QNAME}\s+(.*)$", text, re.I | re.S)
    if not m:
        return []
    return [a for a in (_spec(s) for s in _split_top(m.group(1))) if a is not None]

