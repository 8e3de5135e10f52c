"""``cdc_jobs.spark.settings``: a phase's session settings (merge writes its tables without adaptive execution)
must leave the session as it found it, also when the phase fails: a notebook or test session goes on with it. And
the JVM options of a session the CLI starts (``java_options``): its JIT follows the size of the job's input."""

from __future__ import annotations

import pytest

from cdc_jobs.errors import UsageError
from cdc_jobs.jvm.options import QUICK_JIT, QUICK_JIT_BELOW, java_options, jit_options, with_jit
from cdc_jobs.spark import settings

KEY = "spark.sql.adaptive.enabled"
UNSET = "spark.cdc-replay.test.never-set"


def test_settings_hold_inside_the_block_and_are_restored_after_it(spark):
    before = spark.conf.get(KEY)
    with settings(spark, {KEY: "false" if before == "true" else "true", UNSET: "x"}):
        assert spark.conf.get(KEY) != before
        assert spark.conf.get(UNSET) == "x"
    assert spark.conf.get(KEY) == before
    assert spark.conf.get(UNSET, None) is None  # unset again, not left as ""


def test_settings_are_restored_when_the_block_fails(spark):
    before = spark.conf.get(KEY)
    with pytest.raises(RuntimeError):
        with settings(spark, {KEY: "false" if before == "true" else "true"}):
            raise RuntimeError("a table write failed")
    assert spark.conf.get(KEY) == before


# -- the JIT of a job's JVMs (``cdc_jobs.jvm.options``) -----------------------------------------------------------

SMALL, LARGE = 50 * 2**20, QUICK_JIT_BELOW["replay"]  # a day's archive of 100k messages; the first size keeping C2


@pytest.mark.parametrize("master, input_bytes, expected", [
    ("local[2]", SMALL, QUICK_JIT),  # a small local job ends before C2's work pays back
    ("local[*]", 0, QUICK_JIT),
    ("local[2]", LARGE, ""),  # a large one gains from C2 (1M messages: 25% faster)
    ("local[2]", None, ""),  # a Kafka topic's size is not known before Spark starts
    ("spark://10.0.0.1:7077", SMALL, ""),  # a cluster's executors have JVMs of their own
    (None, SMALL, ""),  # the Airflow operator: its connection chooses the master
])
def test_the_jit_follows_the_size_of_a_local_jobs_input(monkeypatch, master, input_bytes, expected):
    monkeypatch.delenv("CDC_REPLAY_JIT", raising=False)
    assert jit_options(master, input_bytes) == expected


@pytest.mark.parametrize("job, input_bytes, expected", [
    ("merge", 3 * 2**20, QUICK_JIT),  # the events of a day of 100k messages: merge a third faster on C1 alone
    ("verify", 3 * 2**20, QUICK_JIT),  # verify a quarter faster
    ("verify", 27 * 2**20, ""),  # the events of 1M messages: verify no faster on C1 alone
    ("merge", QUICK_JIT_BELOW["merge"], ""),
    ("replay", 27 * 2**20, QUICK_JIT),  # the same bytes as an archive are a small replay
    ("archive", 1, ""),  # a job whose gain was not measured keeps the JVM's default
])
def test_each_job_has_its_own_size_below_which_c1_alone_is_faster(monkeypatch, job, input_bytes, expected):
    monkeypatch.delenv("CDC_REPLAY_JIT", raising=False)
    assert jit_options("local[2]", input_bytes, job) == expected


def test_cdc_replay_jit_forces_either_tier_and_refuses_other_values(monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_JIT", "quick")
    assert jit_options("spark://10.0.0.1:7077", None) == QUICK_JIT
    monkeypatch.setenv("CDC_REPLAY_JIT", "peak")
    assert jit_options("local[2]", SMALL) == ""
    monkeypatch.setenv("CDC_REPLAY_JIT", "fast")
    with pytest.raises(UsageError, match="CDC_REPLAY_JIT='fast': expected one of auto, quick, peak"):
        jit_options("local[2]", SMALL)


def test_the_jit_option_reaches_both_jvms_beside_utc_and_the_class_archive():
    quick, peak = java_options(QUICK_JIT), java_options()
    for options in (quick, peak):
        assert "-Duser.timezone=UTC" in options["spark.driver.extraJavaOptions"].split()
        assert "-Duser.timezone=UTC" in options["spark.executor.extraJavaOptions"].split()
    assert all(set(QUICK_JIT.split()) <= set(value.split()) for value in quick.values())
    assert not any(QUICK_JIT in value for value in peak.values())
    assert quick["spark.driver.extraJavaOptions"].replace(QUICK_JIT, "").split() == \
        peak["spark.driver.extraJavaOptions"].split()  # the class archive stays
    own = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC", "spark.sql.shuffle.partitions": "8"}
    assert with_jit(own, QUICK_JIT) == {**own, "spark.driver.extraJavaOptions": f"-XX:+UseG1GC {QUICK_JIT}",
                                        "spark.executor.extraJavaOptions": QUICK_JIT}  # a deployment's own kept
    assert with_jit(own, "") is own


def test_an_archives_size_is_added_up_only_until_it_is_known_to_be_large(tmp_path, monkeypatch):
    from cdc_jobs.io import storage

    files = []
    for i, size in enumerate((300, 500, 700)):
        files.append(str(tmp_path / f"part-{i}.jsonl"))
        (tmp_path / f"part-{i}.jsonl").write_bytes(b"x" * size)
    assert storage.total_size(files, 10_000) == 1500
    asked = []
    monkeypatch.setattr(storage, "size", lambda uri: asked.append(uri) or 600)
    assert storage.total_size(files, 1000) == 1200 and asked == files[:2]  # the third size is never requested
