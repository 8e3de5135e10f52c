"""Format name -> codec module. One line per format; modules load on first use, so a Spark executor only
imports the codecs it needs and a broken optional codec cannot break the others."""

from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from .base import Codec

FORMATS: dict[str, str] = {
    "canal-json": "cdc_codecs.canal.canal_json",
    "oms-default": "cdc_codecs.oms.oms_default",
    "oms-extend-column-type": "cdc_codecs.oms.oms_extend_column_type",
    "oms-dataworks": "cdc_codecs.oms.oms_dataworks",
    "oms-shareplex": "cdc_codecs.oms.oms_shareplex",
    "oms-avro": "cdc_codecs.oms.oms_avro",
    "drs-json": "cdc_codecs.drs.drs_json",
    "drs-json-c": "cdc_codecs.drs.drs_json_c",
    "drs-mongo": "cdc_codecs.drs.drs_mongo",
    "drs-gaussdb": "cdc_codecs.drs.drs_gaussdb",
    "cloudcanal-json": "cdc_codecs.canal.cloudcanal_json",
    "debezium-json": "cdc_codecs.debezium.debezium_json",
    "debezium-bson": "cdc_codecs.debezium.debezium_bson",
    "debezium-avro-confluent": "cdc_codecs.debezium.debezium_avro_confluent",
    "dts-avro": "cdc_codecs.dts.dts_avro",
    "dataworks-json": "cdc_codecs.dataworks.dataworks_json",
    "maxwell-json": "cdc_codecs.maxwell.maxwell_json",
    "ogg-json": "cdc_codecs.ogg.ogg_json",
}


class UnknownFormatError(KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, FORMATS, n=1, cutoff=0.5)
    hint = f", did you mean '{close[0]}'?" if close else "."
    return f"unknown format '{name}'{hint} Known formats: {', '.join(sorted(FORMATS))}"


@lru_cache(maxsize=None)
def get_codec(name: str) -> Codec:
    module = FORMATS.get(name)
    if module is None:
        raise UnknownFormatError(_suggest(name))
    codec = importlib.import_module(module).CODEC
    assert codec.name == name, f"{module} registers '{codec.name}', expected '{name}'"
    return codec


def available_formats() -> list[str]:
    """Registered formats whose module imports (a format still being written is listed as unavailable)."""
    ok = []
    for name in sorted(FORMATS):
        try:
            get_codec(name)
        except ImportError:
            continue
        ok.append(name)
    return ok
