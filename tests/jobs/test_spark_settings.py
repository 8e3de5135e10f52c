"""``cdc_jobs.spark.settings``: a phase's session settings (merge writes its tables without adaptive execution)
must leave the session as it found it, also when the phase fails: a notebook or test session goes on with it."""

from __future__ import annotations

import pytest

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
