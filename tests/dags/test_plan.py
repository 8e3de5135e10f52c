"""The Spark tasks' arguments: exactly what the `cdc-replay` CLI accepts, derived from the form or a pipeline,
with clear errors for impossible combinations and no secrets on the command line."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from cdc_codecs.registry import FORMATS
from cdc_jobs.cli import build_parser
from cdc_replay_airflow import pipelines as pl
from cdc_replay_airflow.plan import ConfError, daily_plan, manual_plan, spark_application

UTC = dt.timezone.utc


@pytest.fixture(autouse=True)
def data_roots(monkeypatch, tmp_path):
    """Form paths must lie under configured roots: /data stands for the deployment's data volume."""
    monkeypatch.setenv("CDC_REPLAY_DATA_ROOTS", os.pathsep.join(["/data", str(tmp_path)]))


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
    ({"source": "/data/a", "format": ""}, "'format': an ad-hoc source needs its vendor format"),
    ({"source": "relative/dir", "format": "canal-json"}, "must be an absolute path"),
    ({"source": "/data/a", "format": "canal-json", "since": "2024-01-02T00:00:00Z", "until": "2024-01-01T00:00:00Z"},
     "'until' (2024-01-01T00:00:00Z) must be after 'since'"),
    ({"source": "/data/a", "format": "canal-json", "since": "tomorrow"}, "'since': 'tomorrow' is not an ISO-8601"),
    ({"source": "/data/a", "format": "canal-json", "sink": "kafka://k:9092/t"}, "needs a target format"),
    ({"source": "/data/a", "format": "canal-json", "tables": ["a b"]}, "'tables'[0]"),
    ({"source": "/data/a", "format": "canal-json", "out_dir": "rel"}, "'out_dir'"),
    ({"pipeline": "nope"}, "no pipeline 'nope'"),
    ({"pipeline": "sample_shop", "source": "/data/a"}, "either a pipeline or an ad-hoc source"),
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


SECRETS = ("p@ss:w/rd", "k-secret-sasl")


def secret_operator(monkeypatch, spark_host: str = "local[2]", spark_extra: str = "{}"):
    from airflow.sdk import BaseHook, Connection
    from cdc_replay_airflow.operators.spark_submit import CdcSparkSubmitOperator

    conns = {
        "spark_default": Connection(conn_id="spark_default", conn_type="spark", host=spark_host, extra=spark_extra),
        "shop_db": Connection(conn_id="shop_db", conn_type="mysql", host="db", port=3306, login="u",
                              password=SECRETS[0], schema="shop"),
        "kafka_shop": Connection(conn_id="kafka_shop", conn_type="kafka", login="svc", password=SECRETS[1],
                                 extra='{"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"}'),
    }
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, cid: conns[cid]))
    return CdcSparkSubmitOperator(task_id="verify", application="/x/spark_main.py",
                                  application_args=["verify", "--reference=env:CDC_REPLAY_REFERENCE_URL"],
                                  reference_conn_id="shop_db", kafka_conn_id="kafka_shop")


def test_secrets_reach_spark_submit_by_its_environment_only(monkeypatch):
    op = secret_operator(monkeypatch)
    hook = op._get_hook()
    command = hook._build_spark_submit_command(op.application)
    assert not any(secret in " ".join(command) for secret in SECRETS), command
    assert not any(secret in str(op.env_vars) + str(op.application_args) for secret in SECRETS)
    assert hook._env["CDC_REPLAY_REFERENCE_URL"] == "mysql+pymysql://u:p%40ss%3Aw%2Frd@db:3306/shop"
    kafka = json.loads(hook._env["CDC_REPLAY_KAFKA_CONFIG_JSON"])
    assert kafka["sasl_plain_password"] == SECRETS[1] and kafka["security.protocol"] == "SASL_SSL"
    assert hook._mask_cmd(command).count(SECRETS[0]) == 0


def test_spark_submit_loads_the_installed_jars_as_a_cli_session_does(monkeypatch):
    from cdc_jobs import jvm

    jars = jvm.runtime_jars()
    assert jars, "no JVM build: run `python -m cdc_jobs.jvm` (make install)"
    op = secret_operator(monkeypatch)
    command = op._get_hook()._build_spark_submit_command(op.application)
    assert command[command.index("--jars") + 1] == ",".join(map(str, jars))
    assert jars[0].name == jvm.PROJECT_JAR and any(j.name.startswith("delta-spark_") for j in jars)
    confs = {c.split("=", 1)[0]: c.split("=", 1)[1] for i, c in enumerate(command) if command[i - 1] == "--conf"}
    assert confs["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def replay_operator(monkeypatch, spark_host: str, source: str):
    from airflow.sdk import BaseHook, Connection
    from cdc_replay_airflow.operators.spark_submit import CdcSparkSubmitOperator

    conn = Connection(conn_id="spark_default", conn_type="spark", host=spark_host)
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, cid: conn))
    monkeypatch.delenv("CDC_REPLAY_JIT", raising=False)
    return CdcSparkSubmitOperator(task_id="replay", application="/x/spark_main.py", application_args=[
        "replay", f"--source={source}", "--format=canal-json", "--out=/data/out"])


def java_options_of(command: list[str]) -> dict[str, list[str]]:
    confs = dict(c.split("=", 1) for i, c in enumerate(command) if command[i - 1] == "--conf")
    return {jvm: confs[f"spark.{jvm}.extraJavaOptions"].split() for jvm in ("driver", "executor")}


@pytest.mark.parametrize("spark_host, small", [("local[2]", True), ("spark://master", False)])
def test_a_replay_task_of_a_small_archive_on_local_spark_runs_its_jvm_with_c1_alone(monkeypatch, tmp_path,
                                                                                    spark_host, small):
    """A day's archive below 200 MiB on the embedded local Spark: the task's JVM skips the C2 compiler (a fresh
    job ends before it pays back: cdc_jobs.jvm.options); on a cluster the executors keep the JVM's default."""
    (tmp_path / "part-0.jsonl").write_text("{}\n")
    op = replay_operator(monkeypatch, spark_host, str(tmp_path))
    options = java_options_of(op._get_hook()._build_spark_submit_command(op.application))
    assert all(("-XX:TieredStopAtLevel=1" in o) is small for o in options.values()), options
    assert all("-Duser.timezone=UTC" in o for o in options.values())


def test_a_replay_task_of_a_large_archive_or_a_topic_keeps_the_jvms_default_jit(monkeypatch, tmp_path):
    from cdc_jobs.jvm.options import QUICK_JIT_BELOW

    with open(tmp_path / "part-0.jsonl", "wb") as f:
        f.truncate(QUICK_JIT_BELOW["replay"])  # sparse: the size counts, not the content
    # a missing archive too: the job itself fails on it, with its own error, not the task's sizing
    for source in (str(tmp_path), "kafka://127.0.0.1:9092/orders", str(tmp_path / "missing")):
        op = replay_operator(monkeypatch, "local[2]", source)
        options = java_options_of(op._get_hook()._build_spark_submit_command(op.application))
        assert not any("-XX:TieredStopAtLevel=1" in o for o in options.values()), (source, options)


def job_operator(monkeypatch, spark_host: str, argv: list[str]):
    from airflow.sdk import BaseHook, Connection
    from cdc_replay_airflow.operators.spark_submit import CdcSparkSubmitOperator

    conn = Connection(conn_id="spark_default", conn_type="spark", host=spark_host)
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, cid: conn))
    monkeypatch.delenv("CDC_REPLAY_JIT", raising=False)
    return CdcSparkSubmitOperator(task_id=argv[0], application="/x/spark_main.py", application_args=argv)


def quick_jit(op) -> bool:
    options = java_options_of(op._get_hook()._build_spark_submit_command(op.application))
    quick = {jvm: "-XX:TieredStopAtLevel=1" in o for jvm, o in options.items()}
    assert len(set(quick.values())) == 1, options  # both JVMs alike
    return quick["driver"]


def fake_replay_output(root, event_bytes: int):
    """A replay output as merge and verify size it: its events/ (sparse Parquet-named files) and counts.json."""
    (root / "events" / "table_name=shop.orders").mkdir(parents=True)
    with open(root / "events" / "table_name=shop.orders" / "part-0.parquet", "wb") as f:
        f.truncate(event_bytes)
    (root / "encoded").mkdir()
    with open(root / "encoded" / "part-0.jsonl", "wb") as f:  # not what merge reads: not counted
        f.truncate(1 << 30)
    (root / "counts.json").write_text("{}")
    return root


def test_merge_and_verify_tasks_size_the_outputs_they_read(monkeypatch, tmp_path):
    """A daily merge and verify of a small replay on the embedded local Spark run on C1 alone (a third and a
    quarter faster fresh: cdc_jobs.jvm.options); a large replay's, a cluster's, keep the JVM's default."""
    from cdc_jobs.jvm.options import QUICK_JIT_BELOW

    small = fake_replay_output(tmp_path / "small", 3 << 20)
    large = fake_replay_output(tmp_path / "large", QUICK_JIT_BELOW["merge"])
    state = tmp_path / "state"
    state.mkdir()
    (state / "_state.json").write_text("{}")
    merge = lambda host, replay: job_operator(monkeypatch, host, [  # noqa: E731
        "merge", f"--replay={replay}", f"--out={tmp_path / 'out'}"])
    verify = lambda host, replay: job_operator(monkeypatch, host, [  # noqa: E731
        "verify", f"--replay={replay}", f"--state={state}"])
    assert quick_jit(merge("local[2]", small)) and quick_jit(verify("local[2]", small))
    assert not quick_jit(merge("local[2]", large)) and not quick_jit(verify("local[2]", large))
    assert not quick_jit(merge("spark://master", small)) and not quick_jit(verify("spark://master", small))
    # events between the two jobs' sizes: merge still gains from C1 alone, verify no longer
    middle = fake_replay_output(tmp_path / "middle", QUICK_JIT_BELOW["verify"])
    assert quick_jit(merge("local[2]", middle)) and not quick_jit(verify("local[2]", middle))


def test_secrets_are_refused_where_they_would_become_spark_conf(monkeypatch):
    from cdc_replay_airflow.hooks.spark_submit import SecretEnvError

    op = secret_operator(monkeypatch, "yarn", '{"deploy-mode": "cluster"}')
    with pytest.raises(SecretEnvError, match="CDC_REPLAY_KAFKA_CONFIG_JSON, CDC_REPLAY_REFERENCE_URL"):
        op._get_hook()._build_spark_submit_command(op.application)


@pytest.mark.parametrize("conf, words", [
    ({"source": "/data/../etc/*.jsonl"}, "'source': '/data/../etc/*.jsonl' contains '..'"),
    ({"source": "/etc/passwd"}, "'source': '/etc/passwd' is outside the directories runs may use"),
    ({"source": "/data/a", "out_dir": "/home/someone"}, "'out_dir': '/home/someone' is outside"),
    ({"source": "/data/a", "base": "/data/x/../../root"}, "'base'"),
    ({"source": "/data/a", "checkpoint": "relative"}, "'checkpoint': 'relative' must be an absolute path"),
    ({"source": "/data/a", "kafka_config": "/etc/kafka.json"}, "'kafka_config': '/etc/kafka.json' is outside"),
    ({"source": "/data/a", "kafka_config": "bad id!"}, "'kafka_config'"),
    ({"source": "--conf=spark.x=y"}, "'source': '--conf=spark.x=y' starts with '-'"),
    ({"source": "/data/a", "tables": ["--history"]}, "'tables'[0]: '--history' starts with '-'"),
    ({"source": "/data/a", "tables": ["shop.*\n--out=/"]}, "'tables'[0]: control characters"),
    ({"source": "/data/a", "primary_key": ["orders"]}, "'primary_key'[0]: 'orders' is not TABLES=COL"),
    ({"source": "/data/a", "lookback": "-1h"}, "'lookback': '-1h' starts with '-'"),
    ({"source": "/data/a", "max_dead_letters": "lots"}, "'max_dead_letters': 'lots' is not"),
    ({"source": "/data/a", "max_records_per_split": -5}, "'max_records_per_split'"),
    ({"source": "/data/a", "sink_mode": "yolo"}, "'sink_mode'"),
    ({"source": "/data/a", "reference_conn_id": "-x"}, "'reference_conn_id'"),
    ({"source": "kafka://k:9092/bad topic"}, "'source': 'kafka://k:9092/bad topic' is not kafka://"),
    ({"source": "kafka://k:9092/t/../x"}, "'source'"),
    ({"source": "s3://bucket/x"}, "'source': 's3://bucket/x' is outside the locations runs may use (no object-store"),
    ({"source": "ftp://host/x"}, "unsupported scheme 'ftp://'"),
    ({"source": "/data/a", "extra_spark_args": "--conf x"}, "'extra_spark_args': not a field of this form"),
])
def test_hostile_values_are_refused_naming_the_field(conf, words):
    with pytest.raises(ConfError) as err:
        plan({"format": "canal-json"} | conf)
    assert words in str(err.value)


def test_object_store_locations_are_confined_to_listed_roots(monkeypatch, tmp_path):
    monkeypatch.setenv("CDC_REPLAY_DATA_ROOTS", os.pathsep.join(
        ["/data", "s3a://lake/cdc/", str(tmp_path), "hdfs://nn:8020/cdc"]))
    p = plan({"format": "canal-json", "source": "s3://lake/cdc/archive/*/part-*.jsonl",
              "out_dir": "s3a://lake/cdc/out/day1", "base": "hdfs://nn:8020/cdc/state"})
    replay = cli(p["replay_args"])
    assert replay.source == ["s3://lake/cdc/archive/*/part-*.jsonl"] and replay.out.startswith("s3a://lake/cdc/out/")
    assert plan({"format": "canal-json", "source": "s3n://lake/cdc"})  # the root itself; s3n names the same store
    for conf, words in [
        ({"source": "s3a://lake/cdcx/a"}, "outside the locations"),  # a sibling that shares the root's prefix
        ({"source": "s3a://other/cdc/a"}, "outside the locations"),  # another bucket
        ({"source": "gs://lake/cdc/a"}, "outside the locations"),  # another store, same names
        ({"source": "hdfs://nn:9000/cdc/a"}, "outside the locations"),  # another name node
        ({"source": "s3a://lake/cdc/../secret/a"}, "contains '..'"),
        ({"source": "s3a://lake/cdc//a"}, "empty or '.' path segment"),
        ({"source": "s3a://lake/c*/a"}, "outside the locations"),  # the glob's folder is above the root
        ({"source": "/data/a", "kafka_config": "s3a://lake/cdc/kafka.json"}, "only a local path"),
    ]:
        with pytest.raises(ConfError) as err:
            plan({"format": "canal-json"} | conf)
        assert words in str(err.value), (conf, str(err.value))


def test_data_roots_keep_the_colons_of_uris():
    from cdc_replay_airflow.confine import split_roots

    assert split_roots(os.pathsep.join(["/data", "s3a://b/cdc/", "hdfs://nn:8020/x", "/srv/a"])) == [
        "/data", "s3a://b/cdc/", "hdfs://nn:8020/x", "/srv/a"]


def test_symlink_out_of_a_root_is_refused(tmp_path):
    (tmp_path / "escape").symlink_to("/etc")
    with pytest.raises(ConfError, match="'out_dir'.*outside"):
        plan({"source": "/data/a", "format": "canal-json", "out_dir": str(tmp_path / "escape" / "x")})


def test_report_directory_cannot_be_escaped_by_run_id():
    with pytest.raises(ConfError, match="'run_id'"):
        plan({"source": "/data/a", "format": "canal-json"}, run_id="..")


def test_table_names_are_not_only_ascii():
    p = plan({"source": "/data/a", "format": "canal-json", "tables": ["商城.订单*"],
              "primary_key": ["商城.订单=订单号"]})
    replay = cli(p["replay_args"])
    assert replay.tables == ["商城.订单*"] and replay.primary_key == ["商城.订单=订单号"]
