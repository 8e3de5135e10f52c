"""The Spark tasks' arguments: exactly what the `cdc-replay` CLI accepts, derived from the form or a pipeline,
with clear errors for impossible combinations and no secrets on the command line."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from cdc_codecs.registry import FORMATS
from cdc_jobs.cli import build_parser
from cdc_replay_common import pipelines as pl
from cdc_replay_common.plan import ConfError, daily_plan, manual_plan, spark_application

UTC = dt.timezone.utc


def cli(args: list[str]):
    return build_parser().parse_args(args)  # SystemExit if the CLI would reject them


def plan(conf: dict, pipes=None, run_id="manual__2024-01-02T03:04:05+00:00"):
    return manual_plan(conf, pipes, dag_id="cdc_replay", run_id=run_id, formats=FORMATS)


def test_application_is_the_spark_entry_point():
    path = spark_application()
    assert path.endswith(os.path.join("cdc_jobs", "spark_main.py")) or path.endswith("jobs/spark_main.py")
    assert Path(path).is_file()


def test_adhoc_conf_becomes_cli_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_REPORTS_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("CDC_REPLAY_OUTPUT_ROOT", str(tmp_path / "out"))
    p = plan({"source": "/data/archive/*.jsonl", "format": "canal-json", "since": "2024-01-01T08:00:00+08:00",
              "until": "2024-01-02T00:00:00Z", "tables": ["shop.*", "crm.users"], "to_format": "oms-default",
              "merge": True, "base": "/data/state/yesterday"})
    out = tmp_path / "out" / "manual__2024-01-02T03_04_05_00_00"  # no ':' - Hadoop paths reject it
    replay = cli(p["replay_args"])
    assert (replay.command, replay.source, replay.format) == ("replay", ["/data/archive/*.jsonl"], "canal-json")
    assert (replay.since, replay.until) == ("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z")  # normalised to UTC
    assert (replay.tables, replay.to_format, replay.out) == (["shop.*", "crm.users"], "oms-default",
                                                              str(out / "replay"))
    merge = cli(p["merge_args"])
    assert (merge.replay, merge.base, merge.out) == ([str(out / "replay")], "/data/state/yesterday", str(out / "state"))
    verify = cli(p["verify_args"])
    report_dir = tmp_path / "reports" / "cdc_replay" / "manual__2024-01-02T03:04:05+00:00"
    assert (verify.state, verify.base, verify.reference) == (str(out / "state"), "/data/state/yesterday", None)
    assert (verify.report, verify.html) == (str(report_dir / "verification.json"), str(report_dir / "verification.html"))
    assert p["merge"] is True and p["reference_conn_id"] is None


def test_pipeline_supplies_defaults_and_reference_goes_by_env(sample_pipelines):
    pipes = pl.load(sample_pipelines)
    p = plan({"pipeline": "sample_shop", "reference_conn_id": "shop_db", "merge": False}, pipes)
    replay = cli(p["replay_args"])
    assert replay.source == pipes.valid["sample_shop"].sources and replay.format == "canal-json"
    assert replay.tables == ["shop.*"] and replay.to_format == "oms-default"
    assert replay.out.startswith(pipes.valid["sample_shop"].state_root + "/manual/")
    # The secret-bearing URL is looked up by the operator at execute time; the argument only names the variable.
    assert cli(p["verify_args"]).reference == "env:CDC_REPLAY_REFERENCE_URL"
    assert p["reference_conn_id"] == "shop_db" and p["merge"] is False


@pytest.mark.parametrize("conf, words", [
    ({}, "'source': choose a pipeline or give an ad-hoc source"),
    ({"source": "/a", "format": ""}, "'format': an ad-hoc source needs its vendor format"),
    ({"source": "relative/dir", "format": "canal-json"}, "must be an absolute path"),
    ({"source": "/a", "format": "canal-json", "since": "2024-01-02T00:00:00Z", "until": "2024-01-01T00:00:00Z"},
     "'until' (2024-01-01T00:00:00Z) must be after 'since'"),
    ({"source": "/a", "format": "canal-json", "since": "tomorrow"}, "'since': 'tomorrow' is not an ISO-8601"),
    ({"source": "/a", "format": "canal-json", "sink": "kafka://k:9092/t"}, "needs a target format"),
    ({"source": "/a", "format": "canal-json", "tables": ["a b"]}, "'tables'[0]"),
    ({"source": "/a", "format": "canal-json", "out_dir": "rel"}, "'out_dir'"),
    ({"pipeline": "nope"}, "no pipeline 'nope'"),
    ({"pipeline": "sample_shop", "source": "/a"}, "either a pipeline or an ad-hoc source"),
])
def test_conf_errors_name_the_field(sample_pipelines, conf, words):
    with pytest.raises(ConfError) as err:
        plan(conf, pl.load(sample_pipelines))
    assert words in str(err.value)


def test_invalid_pipeline_reports_its_validation_message(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("pipelines:\n  broken: {source: {archive: /x}, format: canal-json, start: 2024-01-01}\n")
    with pytest.raises(ConfError, match="pipeline 'broken': field 'targets.state_root'"):
        plan({"pipeline": "broken"}, pl.load(f))


def daily_pipeline(tmp_path: Path, **kw) -> pl.Pipeline:
    spec = {"source": {"archive": "/in"}, "format": "canal-json", "start": "2024-01-01",
            "targets": {"state_root": str(tmp_path)}} | kw
    return pl.parse_pipeline("shop", spec, tmp_path)


def interval(day: str):
    start = dt.datetime.fromisoformat(day).replace(tzinfo=UTC)
    return start, start + dt.timedelta(days=1)


def test_daily_first_day_has_no_base_and_later_days_continue(tmp_path, monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_REPORTS_DIR", str(tmp_path / "reports"))
    pipe = daily_pipeline(tmp_path)
    first = daily_plan(pipe, *interval("2024-01-01"), dag_id="d", run_id="r1")
    replay = cli(first["replay_args"])
    assert (replay.since, replay.until) == ("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z")
    assert replay.out == str(tmp_path / "shop" / "2024-01-01" / "replay")
    assert cli(first["merge_args"]).base is None and cli(first["verify_args"]).base is None
    assert first["report"] == str(tmp_path / "reports" / "d" / "r1" / "shop" / "verification.json")

    with pytest.raises(ConfError, match=r"previous day's state .*2024-01-01/state does not exist.*2024-01-01 first"):
        daily_plan(pipe, *interval("2024-01-02"), dag_id="d", run_id="r2")
    (tmp_path / "shop" / "2024-01-01" / "state").mkdir(parents=True)
    second = daily_plan(pipe, *interval("2024-01-02"), dag_id="d", run_id="r2")
    merge = cli(second["merge_args"])
    assert merge.base == str(tmp_path / "shop" / "2024-01-01" / "state")
    assert merge.out == str(tmp_path / "shop" / "2024-01-02" / "state")
    assert cli(second["verify_args"]).base == merge.base

    before = daily_plan(pipe, *interval("2023-12-31"), dag_id="d", run_id="r0")
    assert "starts on 2024-01-01" in before["skip"]


def test_operator_hands_secrets_over_as_env_only(monkeypatch):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import BaseHook, Connection
    from cdc_replay_common.operators import CdcSparkSubmitOperator

    conns = {
        "shop_db": Connection(conn_id="shop_db", conn_type="mysql", host="db", port=3306, login="u",
                              password="p@ss:w/rd", schema="shop"),
        "kafka_shop": Connection(conn_id="kafka_shop", conn_type="generic",
                                 extra='{"security_protocol": "SASL_SSL", "sasl_plain_password": "k-secret"}'),
    }
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, cid: conns[cid]))
    seen = {}
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, ctx: seen.update(
        env=self.env_vars, args=self.application_args, conf=self.conf, conn=self._conn_id))
    op = CdcSparkSubmitOperator(task_id="verify", application="/x/spark_main.py",
                                application_args=["verify", "--reference", "env:CDC_REPLAY_REFERENCE_URL"],
                                reference_conn_id="shop_db", kafka_conn_id="kafka_shop")
    op.execute({})
    assert seen["env"]["CDC_REPLAY_REFERENCE_URL"] == "mysql+pymysql://u:p%40ss%3Aw%2Frd@db:3306/shop"
    assert '"sasl_plain_password": "k-secret"' in seen["env"]["CDC_REPLAY_KAFKA_CONFIG_JSON"]
    assert seen["env"]["PYSPARK_PYTHON"]
    assert not any("p@ss" in a or "k-secret" in a for a in seen["args"])
    assert seen["conn"] == "spark_default" and seen["conf"]["spark.sql.session.timeZone"] == "UTC"
