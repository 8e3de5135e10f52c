"""``bench.run``'s session warm-up for ``--no-warmup`` runs: both sides replay a small archive first, on the decode
path the measured archives take, and the user's choice of that path is left as it was."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import run  # noqa: E402

MODE = "CDC_REPLAY_JVM_DECODE"


@pytest.mark.parametrize("chosen, during", [(None, "on"), ("auto", "on"), ("off", "off"), ("on", "on")])
def test_the_warm_up_replays_each_side_on_the_measured_path_and_restores_the_mode(tmp_path, monkeypatch, chosen,
                                                                                  during):
    if chosen is None:
        monkeypatch.delenv(MODE, raising=False)
    else:
        monkeypatch.setenv(MODE, chosen)
    seen = []

    def side(name):
        def replay(ctx):
            assert any(ctx.archive.iterdir()), "the warm-up archive is written before the replay"
            seen.append((name, ctx.fmt, ctx.messages, run.os.environ.get(MODE)))
        return replay

    monkeypatch.setitem(run.STEPS, "replay", (side("ours"), side("peer")))
    run.warm_session(None, tmp_path, "maxwell-json", messages=300)
    # a small archive stays below the JVM decode's size threshold: "auto" would warm the Python decode instead
    assert seen == [("ours", "maxwell-json", 300, during), ("peer", "maxwell-json", 300, during)]
    assert run.os.environ.get(MODE) == chosen
    assert not (tmp_path / "warm-up").exists()


def test_a_failed_warm_up_restores_the_mode(tmp_path, monkeypatch):
    monkeypatch.delenv(MODE, raising=False)

    def broken(ctx):
        raise RuntimeError("replay failed")

    monkeypatch.setitem(run.STEPS, "replay", (broken, broken))
    with pytest.raises(RuntimeError, match="replay failed"):
        run.warm_session(None, tmp_path, "maxwell-json", messages=300)
    assert MODE not in run.os.environ
