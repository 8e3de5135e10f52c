"""OceanBase OMS "DefaultExtendColumnType" JSON: the Default format plus, inside each image, a ``__light_type``
object mapping column name -> ``{"schemaType": "<OMS type>"}`` (TINYINT, INT64, DECIMAL, DATETIME, ...).

Everything else is ``oms_default``; this module only reads the types into ``Column.type_name`` and writes them
back. The images of one record normally carry the same ``__light_type``; where one differs from what the
columns give (or is missing), it is kept verbatim in ``vendor["light_type"]``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..shared import arrow_json
from ..shared.declared_rows import ImageTypes
from ..shared.json_fix import literal, unliteral
from ..shared.value_text import is_text
from ..event import Column, Event, Position
from .oms_default import IMAGES, ImageParts, OmsDefaultCodec
from ..types import JDBC_NAME
from ..shared.memo import remember

LIGHT_TYPE = "__light_type"


class OmsExtendColumnTypeCodec(OmsDefaultCodec):
    name = "oms-extend-column-type"
    description = "OMS DefaultExtendColumnType JSON: Default JSON plus __light_type column types in each image"
    capabilities = replace(
        OmsDefaultCodec.capabilities, typed_values=True, losses=(),
        notes="column types as OMS schemaType names; event time in whole seconds; no transaction "
              "begin/commit markers; TRUNCATE travels as a DDL record.",
    )

    image_extra_keys = frozenset({LIGHT_TYPE})
    # The Default declaration, with the types each image carries (the codec's ``light_type`` vendor key)
    jvm_declaration = replace(OmsDefaultCodec.jvm_declaration,
                              image_types=ImageTypes(LIGHT_TYPE, "schemaType", "light_type", IMAGES))

    def _image_extra(self, parts: ImageParts, col: str, cell: Any, key: str, position: Position) -> bool:
        if col != LIGHT_TYPE:
            return False
        if not isinstance(cell, dict):
            raise self.error(f"{key}.{LIGHT_TYPE}", position, "expected an object of column -> {schemaType}")
        for name, spec in cell.items():
            schema_type = spec.get("schemaType") if isinstance(spec, dict) else None
            if not is_text(schema_type):
                raise self.error(f"{key}.{LIGHT_TYPE}.{name}", position,
                                 f"expected {{\"schemaType\": \"<type>\"}}, got {spec!r}")
            parts.types[name] = schema_type
        parts.extra[LIGHT_TYPE] = cell
        return True

    def _image_vendor(self, parts: dict[str, Optional[ImageParts]], columns: tuple[Column, ...]) -> dict:
        derived = _own_light_type_text(columns)
        differing = {}
        for key in IMAGES:
            part = parts[key]
            if part is None:
                continue
            original = part.extra.get(LIGHT_TYPE)
            if original is None or literal(original) != derived:
                differing[key] = None if original is None else literal(original)
        vendor: dict[str, Any] = {"light_type": differing} if differing else {}
        named = {n for p in parts.values() if p is not None for n in p.values}
        stray = [c.name for c in columns if c.type_name is not None and c.name not in named]
        if stray:
            vendor["warnings"] = [f"{LIGHT_TYPE} types columns the images do not have: {stray}"]
        return vendor

    def _image_out(self, event: Event, key: str, values: dict[str, Any]) -> dict[str, Any]:
        own = event.format == self.name
        overrides = event.vendor.get("light_type", {}) if own else {}
        if key in overrides:
            if overrides[key] is None:
                return values
            return {**values, LIGHT_TYPE: unliteral(overrides[key])}
        return {**values, LIGHT_TYPE: _light_type(event.columns, own)}

    def _image_members(self, batch: Any, entries: list, names: Any) -> Optional[tuple[Any, Any]]:
        """``_image_out`` of foreign events, column-wise: the ``"__light_type":{...}`` member each image ends with.
        Left to ``encode``: a row declaring a column twice (the dict keeps the first place and the last type) and
        an image with a column named ``__light_type`` (the types would replace its value in place)."""
        n = batch.num_rows
        columns = batch.column("columns")
        texts, at = arrow_json.declaration_texts(columns, _foreign_schema_type)
        rows = at.to_numpy()
        declared = columns.flatten().field("name")
        declined = np.zeros(n, dtype=bool)
        codes = names.at(at, declared)
        unique, counts = np.unique(codes, return_counts=True)
        declined[rows[np.isin(codes, unique[counts > 1])]] = True
        for lists in entries:
            named = pc.fill_null(pc.equal(lists.flatten().field("key"), LIGHT_TYPE), False).to_numpy(
                zero_copy_only=False)
            declined[arrow_json.entry_rows(lists).to_numpy()[named]] = True
        typed = texts.is_valid()
        members = pc.filter(arrow_json.concat(names.json(declared), ':{"schemaType":', arrow_json.strings(texts),
                                              "}"), typed)
        lengths = pa.array(np.bincount(rows[typed.to_numpy(zero_copy_only=False)], minlength=n).astype(np.int32))
        light = arrow_json.concat(f'"{LIGHT_TYPE}":{{', arrow_json.join_lists(members, lengths), "}")
        return light, pa.array(declined)


def _foreign_schema_type(type_name: Optional[str], jdbc_type: Optional[int]) -> Optional[str]:
    """The schemaType written for a foreign declaration: its whole type text, upper case like OMS's names, so
    the family survives; else the JDBC type's name."""
    return type_name.upper() if type_name else JDBC_NAME.get(jdbc_type) if jdbc_type is not None else None


_OWN_LIGHT_TYPES: dict[int, tuple[tuple[Column, ...], str]] = {}


def _own_light_type_text(columns: tuple[Column, ...]) -> str:
    """``literal(_light_type(columns, own=True))``, once per columns tuple (a table's rows share one:
    ``shared.columns.shared_columns``); keyed by identity, the entry holds the tuple so its id stays unique."""
    hit = _OWN_LIGHT_TYPES.get(id(columns))
    if hit is None or hit[0] is not columns:
        hit = remember(_OWN_LIGHT_TYPES, id(columns), (columns, literal(_light_type(columns, own=True))))
    return hit[1]


def _light_type(columns: tuple[Column, ...], own: bool) -> dict[str, Any]:
    out = {}
    for c in columns:
        name = c.type_name if own else _foreign_schema_type(c.type_name, c.jdbc_type)
        if name is not None:
            out[c.name] = {"schemaType": name}
    return out


CODEC = OmsExtendColumnTypeCodec()
