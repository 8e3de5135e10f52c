"""The shape of a Kafka Connect schema as JsonConverter writes it (``schemas.enable=true``), checked once before a
codec reads types from it: a schema is an object whose ``type``, ``name`` and ``doc`` are strings, ``optional`` a
boolean, ``version`` an integer, ``parameters`` an object of string values, ``fields`` a list of field schemas
(schemas with a string ``field`` name) and ``items``/``keys``/``values`` schemas. The codec then reads names and
parameters without guarding every lookup, and a schema of another shape is a dead letter naming where it breaks.
"""

from __future__ import annotations

from typing import Any, Optional

from ..jsontext import JsonNumber

_STRINGS = ("type", "name", "doc", "field")
_SCHEMAS = ("items", "keys", "values")


def schema_problem(node: Any, path: str, depth: int = 0) -> Optional[tuple[str, str]]:
    """(field path, what is wrong) for the first part of ``node`` that is not a Connect schema, else None."""
    if not isinstance(node, dict):
        return path, f"expected a Kafka Connect schema object, got {_json_kind(node)}"
    if depth > 64:  # the JSON reader bounds nesting already; a schema this deep is no table's
        return path, "schema nested more than 64 levels deep"
    for key in _STRINGS:
        if key in node and (not isinstance(node[key], str) or isinstance(node[key], JsonNumber)):
            return f"{path}.{key}", f"expected a string, got {_json_kind(node[key])}"
    if "optional" in node and not isinstance(node["optional"], bool):
        return f"{path}.optional", f"expected true or false, got {_json_kind(node['optional'])}"
    version = node.get("version")
    if version is not None and not (isinstance(version, JsonNumber) and version.lstrip("-").isdigit()):
        return f"{path}.version", f"expected an integer, got {_json_kind(version)}"
    params = node.get("parameters")
    if params is not None:
        if not isinstance(params, dict):
            return f"{path}.parameters", f"expected an object of strings, got {_json_kind(params)}"
        for key, value in params.items():
            if not isinstance(value, str) or isinstance(value, JsonNumber):
                return f"{path}.parameters.{key}", f"expected a string, got {_json_kind(value)}"
    fields = node.get("fields")
    if fields is not None:
        if not isinstance(fields, list):
            return f"{path}.fields", f"expected a list of field schemas, got {_json_kind(fields)}"
        for i, field in enumerate(fields):
            if isinstance(field, dict) and not isinstance(field.get("field"), str):
                return f"{path}.fields[{i}].field", "a struct's field schema needs its name as a string"
            problem = schema_problem(field, f"{path}.fields[{i}]", depth + 1)
            if problem:
                return problem
    for key in _SCHEMAS:
        if node.get(key) is not None:
            problem = schema_problem(node[key], f"{path}.{key}", depth + 1)
            if problem:
                return problem
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, JsonNumber):
        return f"the number {value[:40]}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"
