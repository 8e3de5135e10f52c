"""Where replay finds archived Avro schemas, and how the codec settings reach a task process (no Spark)."""

from __future__ import annotations

import json
import os

from cdc_codecs.shared import schema_registry
from cdc_jobs.io import codec_env


def test_schemas_archived_beside_the_files_are_found_from_any_source_spelling(tmp_path):
    root = tmp_path / "archive"
    part = root / "shop.cdc" / "partition=0"
    part.mkdir(parents=True)
    (part / "part-00000.jsonl").write_text("")
    (root / "_schemas").mkdir()
    want = [str(root / "_schemas")]
    assert codec_env.schema_folders([str(root)]) == want
    assert codec_env.schema_folders([str(part / "part-00000.jsonl")]) == want
    assert codec_env.schema_folders([str(root / "shop.cdc" / "*" / "*.jsonl")]) == want
    assert codec_env.schema_folders([f"file://{part}", "kafka://k:9092/t"]) == want
    assert codec_env.schema_folders([str(tmp_path / "elsewhere")]) == []


def test_a_task_takes_the_drivers_settings_and_drops_stale_ones(monkeypatch, tmp_path):
    monkeypatch.setenv(schema_registry.ENV_FOLDER, "/stale/from/an/earlier/job")
    monkeypatch.delenv(schema_registry.ENV_URL, raising=False)
    codec_env.apply(json.dumps({schema_registry.ENV_URL: "http://registry:8081"}))
    assert os.environ[schema_registry.ENV_URL] == "http://registry:8081"
    assert schema_registry.ENV_FOLDER not in os.environ
    assert schema_registry.store().describe() == "registry http://registry:8081"
    codec_env.apply(None)
    assert schema_registry.ENV_URL not in os.environ


def test_a_task_function_carries_the_settings_of_when_it_was_made(monkeypatch):
    """The settings (credentials among them) travel in the task function's closure, never in a plan or an option,
    and a task applies the ones of the job that made the function, not what its process has from another job."""
    monkeypatch.setenv("CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO", "svc:s3cret")
    monkeypatch.delenv(schema_registry.ENV_URL, raising=False)
    task = codec_env.carried(lambda batches: iter([os.environ.get("CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO")]))
    monkeypatch.setenv("CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO", "other:job")
    assert list(task(iter([]))) == ["svc:s3cret"]
