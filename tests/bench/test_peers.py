"""Every format's hand-written bench peer (``bench/peers.py``) runs on that format's bench archive
(``bench/run.py``) and writes as many rows per table as cdc-replay's ``events/`` of the same archive: a broken
peer or archive fails here rather than as a meaningless ratio in ``make bench``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench.run import Ctx, build_archive, ours_replay, peer_replay  # noqa: E402
from cdc_codecs.registry import available_formats  # noqa: E402

MESSAGES = 200


def rows_per_table(spark, out: Path) -> dict[str, int]:
    return {r["table_name"]: r["count"] for r in spark.read.parquet(str(out / "events")).groupBy("table_name")
            .count().collect()}


@pytest.mark.spark
@pytest.mark.parametrize("fmt", available_formats())
def test_the_peer_writes_the_rows_cdc_replay_writes(fmt, spark, tmp_path):
    # A small day (20 rows per table, 150 changes) so 200 messages hold both tables' snapshots and changes.
    archive = build_archive(fmt, MESSAGES, tmp_path / "archive", files=1, rows=20, changes=150)
    ours, peer = (Ctx(fmt, archive, None, tmp_path / side, MESSAGES, spark) for side in ("ours", "peer"))
    ours_replay(ours)
    peer_replay(peer)
    expected = rows_per_table(spark, ours.out)
    assert len(expected) == 2 and sum(expected.values()) >= MESSAGES * 0.7, expected
    assert rows_per_table(spark, peer.out) == expected
