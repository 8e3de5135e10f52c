"""The codecs are grouped in vendor families: a format module imports the shared machinery (``base``, ``event``,
``types``, ``jsontext``, ``shared/``) and, from its own family only, the base it subclasses or the family's
public wire conventions; never another family's module, never a private name of another module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cdc_codecs import FORMATS, get_codec
from cdc_codecs.base import Codec

CODECS = Path(__file__).resolve().parents[2] / "codecs"
# every package under codecs/ but the shared room is a vendor family
FAMILIES = tuple(sorted(p.name for p in CODECS.iterdir() if (p / "__init__.py").is_file() and p.name != "shared"))
SHARED = {"base", "event", "types", "jsontext", "shared"}


def _family_modules() -> list[Path]:
    return sorted(p for f in FAMILIES for p in (CODECS / f).glob("*.py") if p.name != "__init__.py")


def test_every_format_module_lives_in_a_family_package():
    for fmt, module in FORMATS.items():
        parts = module.split(".")
        assert len(parts) == 3 and parts[1] in FAMILIES, f"{fmt}: {module} is not in a family package"


@pytest.mark.parametrize("path", _family_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_imports_stay_inside_the_family_or_the_shared_room(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        head = (node.module or "").split(".")[0]
        where = f"{path.parent.name}/{path.name}:{node.lineno}"
        if node.level == 2:  # from ..x: the shared machinery only, never another family
            assert head in SHARED or (not node.module and {a.name for a in node.names} <= SHARED), \
                f"{where} imports {node.module or [a.name for a in node.names]} from outside the shared room"
        else:  # from .sibling: same family; public names only
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{where} imports private names {private} from {node.module}"


def test_variants_subclass_their_family_base():
    """A variant writes only its differences: it is a subclass of its family's base codec."""
    bases = {"drs-json-c": "drs-json", "drs-gaussdb": "drs-json", "oms-extend-column-type": "oms-default"}
    for variant, base in bases.items():
        assert isinstance(get_codec(variant), type(get_codec(base))), f"{variant} is not a {base} subclass"
    from cdc_codecs.oms.oms_json import OmsJsonCodec
    for fmt in ("oms-default", "oms-shareplex", "oms-dataworks"):
        assert isinstance(get_codec(fmt), OmsJsonCodec), fmt


def test_json_codecs_use_the_base_recipe():
    """The decode recipe lives once, in ``Codec.decode``: a JSON codec supplies hooks, not its own copy."""
    for fmt in ("canal-json", "cloudcanal-json", "oms-default", "oms-extend-column-type", "oms-shareplex",
                "oms-dataworks", "dataworks-json", "drs-mongo"):
        assert type(get_codec(fmt)).decode is Codec.decode, f"{fmt} overrides decode"
