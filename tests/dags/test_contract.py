"""The job contract (cdc_jobs.contract) is the one definition of replay/merge/verify options: the CLI parser is
built from it, and every option is reachable from the `cdc_replay` trigger form, from a pipeline in the
pipelines file and from the daily DAG. Adding an option to the contract without a way to set it from Airflow,
or an argument to the CLI outside the contract, fails here."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from cdc_codecs.registry import FORMATS
from cdc_jobs import contract
from cdc_jobs.cli import build_parser
from cdc_jobs.contract import JOBS, MergeArgs, ReplayArgs, VerifyArgs
from cdc_replay_airflow import pipelines as pl
from cdc_replay_airflow.plan import daily_plan, manual_plan

from .conftest import DAGS


def sample_form(root: str) -> dict:
    """One valid, non-default value for every form key of the contract."""
    return {
        "source": f"{root}/archive/*.jsonl", "format": "oms-shareplex", "since": "2024-01-01T00:00:00Z",
        "until": "2024-01-02T00:00:00Z", "tables": ["shop.*"], "primary_key": ["shop.order_items=order_id,line_no"],
        "to_format": "oms-default", "sink": "kafka://k1:9092/shop.oms", "sink_mode": "idempotent",
        "checkpoint": f"{root}/previous/replay", "lookback": "2h", "kafka_config": f"{root}/kafka.json",
        "schema_registry": "http://registry:8081", "schemas": f"{root}/archive/_schemas",
        "max_records_per_split": 1000, "max_dead_letters": "0.5%", "base": f"{root}/base", "history": True,
        "reference_conn_id": "shop_db", "html": True,
    }


def sample_pipeline(root: str) -> dict:
    """One pipeline setting every pipelines-file key of the contract."""
    return {
        "source": {"archive": f"{root}/archive"}, "format": "oms-shareplex", "tables": ["shop.*"],
        "primary_key": ["shop.order_items=order_id,line_no"], "start": "2024-01-01",
        "targets": {"state_root": f"{root}/state", "to_format": "oms-default", "sink": "kafka://k1:9092/shop.oms",
                    "sink_mode": "idempotent"},
        "merge": {"history": True}, "checkpoint": True, "lookback": "2h", "kafka_config": f"{root}/kafka.json",
        "schema_registry": "http://registry:8081", "schemas": f"{root}/archive/_schemas",
        "max_records_per_split": 1000, "max_dead_letters": "0.5%", "reference_conn_id": "shop_db", "html": True,
    }


def parsed(plan: dict) -> dict[str, contract.JobArgs]:
    return {job: contract.parse(plan[f"{job}_args"]) for job in ("replay", "merge", "verify")}


def unreached(jobs: dict[str, contract.JobArgs]) -> list[str]:
    """Options still at their CLI default after a plan that set everything."""
    missing = []
    for command, cls in JOBS.items():
        for name, _, default in cls.options():
            if getattr(jobs[command], name) in (default, None, (), False):
                missing.append(f"{command} {cls.flag(name)}")
    return missing


def test_the_cli_parser_is_the_contract():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command, cls in JOBS.items():
        parser = sub.choices[command]
        dests = {a.dest for a in parser._actions if a.dest != "help"}
        assert dests == {f.name for f in contract.dataclasses.fields(cls)}, command


def test_argv_round_trips_and_no_value_becomes_an_option():
    args = ReplayArgs(source=("/a b/x*.jsonl", "--out=/etc"), format="canal-json", tables=("-x",),
                      primary_key=("t=id",), max_records_per_split=5, sink_mode="idempotent", out="/o")
    argv = args.to_argv()
    assert all(a.startswith("--") and "=" in a for a in argv[1:])  # every value glued to its own flag
    assert contract.parse(argv) == args
    for cls in (MergeArgs, VerifyArgs):
        a = cls(replay=("/r",), out="/s") if cls is MergeArgs else cls(replay=("/r",), state="/s", html="/h")
        assert contract.parse(a.to_argv()) == a


def test_every_option_is_reachable_from_the_form(tmp_path, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    root = str(tmp_path)
    monkeypatch.setenv("CDC_REPLAY_DATA_ROOTS", root)
    monkeypatch.setenv("CDC_REPLAY_REPORTS_DIR", str(tmp_path / "reports"))
    monkeypatch.delenv("CDC_REPLAY_PIPELINES", raising=False)
    conf = sample_form(root)
    assert set(conf) == set(contract.form_keys()), "give the new form key a sample value here"
    dag = DagBag(dag_folder=str(DAGS)).dags["cdc_replay"]
    for key, value in conf.items():  # a field for every key, and the form accepts the value
        dag.params.get_param(key).resolve(value)
    jobs = parsed(manual_plan(conf, None, dag_id="cdc_replay", run_id="r1", formats=FORMATS))
    assert unreached(jobs) == []
    assert jobs["replay"].primary_key == ("shop.order_items=order_id,line_no",)
    assert jobs["replay"].kafka_config == f"{root}/kafka.json" and jobs["verify"].reference.startswith("env:")
    # A Kafka connection id instead of a file: no argument, the operator's hook supplies the settings.
    plan = manual_plan(conf | {"kafka_config": "kafka_shop"}, None, dag_id="cdc_replay", run_id="r1",
                       formats=FORMATS)
    assert parsed(plan)["replay"].kafka_config is None and plan["kafka_conn_id"] == "kafka_shop"


def test_every_option_is_reachable_from_a_pipeline_and_the_daily_dag(tmp_path, monkeypatch):
    root = str(tmp_path)
    monkeypatch.setenv("CDC_REPLAY_REPORTS_DIR", str(tmp_path / "reports"))
    spec = sample_pipeline(root)
    set_keys = {f"{k}.{kk}" for k, v in spec.items() if isinstance(v, dict) for kk in v} | set(spec)
    assert set(contract.pipeline_keys()) <= set_keys, "set the new pipelines-file key in sample_pipeline"
    pipe = pl.parse_pipeline("shop", spec, tmp_path)
    (tmp_path / "state" / "shop" / "2024-01-01" / "state").mkdir(parents=True)
    start = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)
    item = daily_plan(pipe, start, start + dt.timedelta(days=1), dag_id="cdc_daily_replay", run_id="r2")
    jobs = parsed(item)
    assert unreached(jobs) == []
    assert jobs["replay"].checkpoint == os.path.join(root, "state", "shop", "2024-01-01", "replay")
    # The same pipeline from the form: the pipeline supplies every option it sets.
    pipes = pl.Pipelines(path="p.yaml", valid={"shop": pipe})
    monkeypatch.setenv("CDC_REPLAY_DATA_ROOTS", root)
    manual = parsed(manual_plan({"pipeline": "shop", "base": f"{root}/base", "checkpoint": f"{root}/c",
                                 "since": "2024-01-01T00:00:00Z", "until": "2024-01-02T00:00:00Z"},
                                pipes, dag_id="cdc_replay", run_id="r3", formats=FORMATS))
    assert unreached(manual) == []


def test_sample_pipelines_file_documents_every_pipeline_key():
    text = (DAGS / "pipelines.sample.yaml").read_text()
    for key in contract.pipeline_keys():
        assert key.split(".")[-1] + ":" in text, key
