"""The batch loops pause Python's cyclic collector per batch (``cdc_jobs.transforms.gc_pause``); it must always
come back as it was, or a worker would run the rest of its life without it."""

from __future__ import annotations

import gc

import pytest

from cdc_jobs.transforms.gc_pause import paused_gc


@pytest.fixture(autouse=True)
def _restore():
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


def test_paused_inside_and_back_after_also_when_nested_or_raising():
    gc.enable()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the inner pause ended the outer one"
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with paused_gc():
            raise ValueError("a batch failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()
