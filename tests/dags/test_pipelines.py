"""The pipelines file: every mistake is reported naming the pipeline and the field; good pipelines survive."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest
from cdc_replay_airflow import pipelines as pl

GOOD = {
    "source": {"archive": "archive/*.jsonl"},
    "format": "canal-json",
    "tables": ["shop.*"],
    "start": "2024-01-01",
    "targets": {"state_root": "state", "to_format": "oms-default"},
}


def parse_one(spec: dict, tmp_path: Path) -> pl.Pipeline:
    return pl.parse_pipeline("p1", spec, tmp_path)


def test_sample_file_is_valid_and_resolves_paths_next_to_it(sample_pipelines):
    pipes = pl.load(sample_pipelines)
    assert pipes.errors == {}
    p = pipes.valid["sample_shop"]
    repo = sample_pipelines.parent.parent
    assert p.sources == [str(repo / "var" / "sample" / "archive")]
    assert p.state_root == str(repo / "var" / "pipelines" / "sample_shop")  # from defaults + name
    assert (p.format, p.to_format, p.start, p.tables) == ("canal-json", "oms-default", dt.date(2023, 12, 31),
                                                          ("shop.*",))


def test_kafka_source(tmp_path):
    p = parse_one(GOOD | {"source": {"kafka": {"bootstrap": "k1:9092,k2:9092", "topics": ["a", "b"],
                                                "conn_id": "kafka_shop", "lookback": "2h"}}}, tmp_path)
    assert p.sources == ["kafka://k1:9092,k2:9092/a,b"]
    assert (p.kafka_conn_id, p.lookback) == ("kafka_shop", "2h")


@pytest.mark.parametrize("change, field, words", [
    ({"format": "canal-jsn"}, "format", "did you mean 'canal-json'"),
    ({"source": {"archive": "a", "kafka": {"bootstrap": "k:1", "topics": ["t"]}}}, "source", "exactly one"),
    ({"source": {}}, "source", "exactly one"),
    ({"source": {"kafka": {"bootstrap": "no-port", "topics": ["t"]}}}, "source.kafka.bootstrap", "HOST:PORT"),
    ({"source": {"kafka": {"bootstrap": "k:9092", "topics": []}}}, "source.kafka.topics", "must not be empty"),
    ({"source": {"kafka": {"bootstrap": "k:9092", "topics": ["t"], "lookback": "soon"}}},
     "source.kafka.lookback", "duration"),
    ({"source": {"files": "x"}}, "source.files", "unknown field 'files'"),
    ({"tables": ["shop.a, shop.b"]}, "tables[0]", "glob"),
    ({"start": "yesterday"}, "start", "YYYY-MM-DD"),
    ({"start": None}, "start", "first daily interval"),
    ({"targets": {"state_root": "s", "to_format": "nope"}}, "targets.to_format", "unknown format"),
    ({"targets": {"state_root": "s", "sink": "http://x"}}, "targets.sink", "kafka://HOST:PORT/TOPIC"),
    ({"targets": {"state_root": "s", "sink": "kafka://k:9092/t"}}, "targets.sink", "needs 'targets.to_format'"),
    ({"targets": {"to_format": "oms-default"}}, "targets.state_root", "non-empty string"),
    ({"merge": {"enabled": "yes"}}, "merge.enabled", "true or false"),
    ({"mrege": {}}, "mrege", "did you mean 'merge'"),
    ({"primary_key": ["shop.orders"]}, "primary_key[0]", "TABLES=COL[,COL]"),
    ({"primary_key": ["--history=x"]}, "primary_key[0]", "TABLES=COL[,COL]"),
    ({"max_records_per_split": 0}, "max_records_per_split", "positive whole number"),
    ({"max_dead_letters": "some"}, "max_dead_letters", "a count (100), a fraction (0.1%)"),
    ({"kafka_config": "not a conn id"}, "kafka_config", "neither an Airflow connection id nor"),
    ({"targets": {"state_root": "s", "sink_mode": "fast"}}, "targets.sink_mode", "transactional, idempotent"),
    ({"lookback": "2h", "source": {"kafka": {"bootstrap": "k:9092", "topics": ["t"], "lookback": "1h"}}},
     "lookback", "given twice"),
    ({"html": "yes"}, "html", "true or false"),
    ({"checkpoint": "/some/dir"}, "checkpoint", "true or false"),
    ({"max_dead_leters": "1%"}, "max_dead_leters", "did you mean 'max_dead_letters'"),
])
def test_errors_name_pipeline_and_field(tmp_path, change, field, words):
    with pytest.raises(pl.PipelineError) as err:
        parse_one(GOOD | change, tmp_path)
    assert err.value.pipeline == "p1" and err.value.field == field
    message = str(err.value)
    assert message.startswith(f"pipeline 'p1': field '{field}': ") and words in message, message


def test_one_bad_pipeline_does_not_hide_the_good_ones(tmp_path):
    f = tmp_path / "pipelines.yaml"
    f.write_text(textwrap.dedent("""
        defaults: {targets: {state_root: /data/state}}
        pipelines:
          good:
            source: {archive: /data/in}
            format: oms-default
            start: 2024-01-01
          bad:
            source: {archive: /data/in}
            format: canal-jsonn
            start: 2024-01-01
          "bad name!": {}
    """))
    pipes = pl.load(f)
    assert list(pipes.valid) == ["good"]
    assert pipes.valid["good"].state_root == "/data/state/good"
    assert pipes.errors["bad"].startswith("pipeline 'bad': field 'format': unknown format 'canal-jsonn'")
    assert "field 'name'" in pipes.errors["bad name!"]
    assert pipes.names == ["bad", "bad name!", "good"]


@pytest.mark.parametrize("text, words", [
    ("pipelines: [a, b]", "'pipelines' must be a non-empty mapping"),
    ("pipelines: {a: {}}\nextra: 1", "unknown top-level key 'extra'"),
    ("version: 2\npipelines: {a: {}}", "version 2 is not supported"),
    ("pipelines: {a: [unclosed", "not valid YAML"),
])
def test_file_level_errors(tmp_path, text, words):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(pl.PipelinesFileError, match=words.replace("[", r"\[").replace("(", r"\(")):
        pl.load(f)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(pl.PipelinesFileError, match="cannot read the pipelines file"):
        pl.load(tmp_path / "nope.yaml")


def test_configured_path_prefers_variable_then_env(monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_PIPELINES", "/from/env.yaml")
    monkeypatch.delenv("AIRFLOW_VAR_CDC_REPLAY_PIPELINES", raising=False)
    assert pl.configured_path() == "/from/env.yaml"
    monkeypatch.setenv("AIRFLOW_VAR_CDC_REPLAY_PIPELINES", "/from/variable-env.yaml")
    assert pl.configured_path() == "/from/variable-env.yaml"
    assert pl.configured_path("/from/metadata-db.yaml") == "/from/metadata-db.yaml"
