"""The DAG folder parses fast and cleanly, the trigger form is complete, and the wiring is what users rely on."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from cdc_codecs.registry import FORMATS

from .conftest import DAGS


def parse(path=DAGS):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(path))


def test_dag_folder_parses_without_errors_in_well_under_a_second_per_file(sample_pipelines):
    parse()  # warm: Airflow and the provider imported once, as in a running DAG processor
    started = time.perf_counter()
    bag = parse()
    elapsed = time.perf_counter() - started
    assert bag.import_errors == {}
    assert set(bag.dags) == {"cdc_replay", "cdc_daily_replay"}
    durations = {s.file: s.duration.total_seconds() for s in bag.dagbag_stats}
    print(f"parse durations: {durations}, whole folder {elapsed:.3f}s")
    assert set(durations) == {"cdc_replay.py", "cdc_daily_replay.py"}  # the helper package is not parsed
    assert all(d < 1.0 for d in durations.values()), durations
    assert elapsed < 2.0


def test_trigger_form(sample_pipelines):
    dag = parse().dags["cdc_replay"]
    params = {name: dag.params.get_param(name) for name in dag.params}
    schema = {name: p.schema for name, p in params.items()}
    for name, s in schema.items():  # every field is labelled, explained and placed in a section
        assert s.get("title") and params[name].description and s.get("section"), name
    assert {s["section"] for s in schema.values()} == {"Source", "Window", "Tables", "Target", "Merge", "Verify"}
    assert list(dict.fromkeys(s["section"] for s in schema.values())) == [
        "Source", "Window", "Tables", "Target", "Merge", "Verify"]  # fields grouped, sections in reading order
    assert schema["format"]["enum"] == [None, *sorted(FORMATS)]
    assert schema["to_format"]["enum"] == [None, *sorted(FORMATS)]
    assert schema["since"]["format"] == schema["until"]["format"] == "date-time"
    assert schema["pipeline"]["enum"] == [None, "sample_shop"]
    assert schema["tables"]["type"] == "array" and schema["merge"]["type"] == "boolean"
    # The UI form marks a field whose type excludes null as required (an empty text box is sent as null), and
    # labels a list entry without its own values_display entry with the None entry's label.
    for name in ("pipeline", "source", "format", "since", "until", "to_format", "sink", "out_dir", "base",
                 "reference_conn_id", "checkpoint", "kafka_config", "max_records_per_split", "max_dead_letters",
                 "sink_mode", "history", "html"):
        assert "null" in schema[name]["type"], name
    for name in ("pipeline", "format", "to_format", "sink_mode", "history", "html"):
        assert set(schema[name]["enum"]) <= set(schema[name]["values_display"]), name
    assert dag.timetable.can_be_scheduled is False  # manual only


JOBS = ["jobs.prepare", "jobs.replay", "jobs.merge_enabled", "jobs.merge", "jobs.verify"]


def test_both_dags_use_one_replay_merge_verify_group(sample_pipelines):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from cdc_replay_airflow.links import VerificationReportLink

    bag = parse()
    for dag_id, first in (("cdc_replay", "validate"), ("cdc_daily_replay", "plan")):
        dag = bag.dags[dag_id]
        order = [first, *JOBS]
        for up, down in zip(order, order[1:]):
            assert down in dag.get_task(up).downstream_task_ids, (dag_id, up, down)
        for tid in ("jobs.replay", "jobs.merge", "jobs.verify"):
            t = dag.get_task(tid)
            assert isinstance(t, SparkSubmitOperator) and t._conn_id == "spark_default"
            assert t.execution_timeout and t.execution_timeout >= dt.timedelta(hours=1)
        assert dag.get_task("jobs.replay").retries >= 1 and dag.get_task("jobs.merge").retries >= 1
        assert dag.get_task("jobs.verify").retries == 0 and dag.get_task(first).retries == 0
        # One way to attach the report link: on the verify task, and there only.
        assert [type(link) for link in dag.get_task("jobs.verify").operator_extra_links] == [VerificationReportLink]
        assert not any(isinstance(link, VerificationReportLink)
                       for link in dag.get_task("jobs.replay").operator_extra_links)


def test_daily_dag_wiring(sample_pipelines):
    from airflow.sdk.definitions.timetables.interval import CronDataIntervalTimetable

    dag = parse().dags["cdc_daily_replay"]
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.timetable.expression in ("@daily", "0 0 * * *") and str(dag.timetable.timezone) in ("UTC", "Timezone('UTC')")
    assert dag.max_active_runs == 1
    group = dag.task_group_dict["jobs"]
    assert type(group).__name__ == "MappedTaskGroup"  # one map index per pipeline
    assert {t.split(".")[-1] for t in group.children} == {"prepare", "replay", "merge_enabled", "merge", "verify",
                                                          "publish"}
    publish = dag.get_task("jobs.publish")
    assert "jobs.verify" in publish.upstream_task_ids
    assert [getattr(o, "name", None) for o in publish.outlets] == ["cdc_replay_tables"]  # the per-table AssetAlias
    check = dag.get_task("check_table")
    assert type(check).__name__ in ("MappedOperator", "_TaskDecorator") or hasattr(check, "expand_input")
    assert dag.get_task("tables").trigger_rule == "all_done"


def test_a_manual_daily_run_replays_the_last_complete_day_before_its_date(sample_pipelines):
    """"Trigger" in the UI (or `airflow dags test cdc_daily_replay D`) on day D gets [D-1, D) as its data
    interval, whatever the hour: the timetable the scheduler reads from the serialized DAG says so."""
    import pendulum
    from airflow.serialization.serialized_objects import DagSerialization

    dag = parse().dags["cdc_daily_replay"]
    timetable = DagSerialization.from_dict(DagSerialization.to_dict(dag)).timetable
    for hour in (0, 15):
        interval = timetable.infer_manual_data_interval(run_after=pendulum.datetime(2024, 1, 2, hour, tz="UTC"))
        assert (interval.start, interval.end) == (pendulum.datetime(2024, 1, 1, tz="UTC"),
                                                  pendulum.datetime(2024, 1, 2, tz="UTC")), hour


def test_dag_files_import_the_installed_provider_only():
    import cdc_replay_airflow

    assert sorted(p.name for p in DAGS.iterdir() if not p.name.startswith(".")) == [
        "cdc_daily_replay.py", "cdc_replay.py", "pipelines.sample.yaml"]
    for f in ("cdc_replay.py", "cdc_daily_replay.py"):
        text = (DAGS / f).read_text()
        assert "sys.path" not in text and "cdc_replay_airflow" in text
    info = cdc_replay_airflow.get_provider_info()
    assert info["package-name"] == "cdc-replay" and info["extra-links"]
    from importlib.metadata import entry_points

    assert any(ep.value == "cdc_replay_airflow:get_provider_info"
               for ep in entry_points(group="apache_airflow_provider"))


@pytest.mark.parametrize("content", [
    "pipelines:\n  ok: {source: {archive: /x}, format: canal-json, start: 2024-01-01, targets: {state_root: /s}}\n"
    "  broken: {source: {archive: /x}, format: nope, start: 2024-01-01, targets: {state_root: /s}}\n",
    "pipelines: [this is: not valid",
    None,  # the configured file does not exist
])
def test_bad_pipelines_never_break_parsing(tmp_path, monkeypatch, content):
    f = tmp_path / "pipelines.yaml"
    if content is not None:
        f.write_text(content)
    monkeypatch.setenv("CDC_REPLAY_PIPELINES", str(f))
    bag = parse()
    assert bag.import_errors == {} and set(bag.dags) == {"cdc_replay", "cdc_daily_replay"}
    param = bag.dags["cdc_replay"].params.get_param("pipeline")
    pipeline = param.schema
    if content and "broken" in content:
        assert pipeline["enum"] == [None, "broken", "ok"]
        assert "INVALID" in pipeline["values_display"]["broken"]
    else:
        assert pipeline["enum"] == [None]
        assert "cannot be used" in param.description
