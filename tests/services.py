"""What a test does when a service it needs (a database, Kafka, a browser, an object store) is missing.

On a developer's machine it skips, saying what to start. Under ``CI=true`` it fails: CI starts every service
itself (``.ci/services.sh``, the fixtures), so a missing one there is a broken set-up, and a green CI must mean
the tests ran.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip (locally) or fail (CI) the calling test because a service it needs is missing."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing service fails the test instead of skipping it)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str):
    """``pytest.importorskip``, failing under CI."""
    try:
        return __import__(name, fromlist=["_"])
    except ImportError as exc:
        missing(f"{reason}: {exc}")
