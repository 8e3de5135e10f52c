"""`cdc-replay formats` lists every registered format with its capabilities, and the README carries that table."""

from __future__ import annotations

from pathlib import Path

from cdc_codecs import FORMATS
from cdc_jobs import cli
from cdc_jobs.commands.formats import capability_rows, markdown_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_registered_format_loads_and_is_listed(capsys):
    assert cli.main(["formats"]) == 0
    out = capsys.readouterr().out
    for name in FORMATS:
        assert f"| `{name}` |" in out
    assert not [r for r in capability_rows() if "error" in r]


def test_readme_carries_the_same_table():
    assert markdown_table(capability_rows()) in README.read_text(), \
        "README's format table is stale: paste the output of `cdc-replay formats`"


def test_formats_shows_the_required_fields(capsys):
    assert cli.main(["formats"]) == 0
    out = capsys.readouterr().out
    assert "Required fields" in out
    assert "| `canal-json` | INSERT | `table: non-empty string`; `database: non-empty string`" in out
    assert "| `dts-avro` | DELETE | `objectName: non-empty string`; `beforeImages: array` |" in out
    for name in FORMATS:
        assert f"| `{name}` | " in out.split("Required fields")[1], f"{name} shows no required fields"
