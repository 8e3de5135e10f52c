"""The driver threads merge and verify submit their per-table Spark jobs from (jobs/io/driver_threads.py)."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_jobs.io.driver_threads import run_all


def test_results_come_back_in_the_calls_order_although_later_calls_finish_first():
    def call(i):
        return lambda: (time.sleep(0.05 * (4 - i)), i, threading.current_thread().name)[1:]

    out = run_all([call(i) for i in range(4)], threads=4)
    assert [i for i, _ in out] == [0, 1, 2, 3]
    assert len({name for _, name in out}) > 1  # really ran at once


def test_the_first_error_is_raised_and_calls_not_started_do_not_run():
    started = []

    def call(i):
        def run():
            started.append(i)
            time.sleep(0.02)
            if i == 1:
                raise ValueError("table 1 failed")
            return i
        return run

    with pytest.raises(ValueError, match="table 1 failed"):
        run_all([call(i) for i in range(40)], threads=2)
    assert len(started) < 40


def test_one_thread_runs_the_calls_in_order_in_the_callers_thread(monkeypatch):
    monkeypatch.setenv("CDC_REPLAY_DRIVER_THREADS", "1")
    seen = []
    assert run_all([lambda i=i: seen.append((i, threading.current_thread())) or i for i in range(3)]) == [0, 1, 2]
    assert seen == [(i, threading.current_thread()) for i in range(3)]
