"""What every golden-fixture codec test needs: where a format's fixtures are, and JSON compared the way the
contract demands (number literals exactly as written, key order ignored)."""

from __future__ import annotations

from pathlib import Path

from cdc_codecs import jsontext

FIXTURES_ROOT = Path(__file__).resolve().parents[1] / "fixtures"


def fixtures(fmt: str) -> Path:
    return FIXTURES_ROOT / fmt


def as_json(value: bytes):
    """Parsed JSON with numbers kept as their literal text, so 1.0 != 1 and 300-digit decimals compare exactly."""
    return jsontext.normalise(jsontext.loads(value)[0])
