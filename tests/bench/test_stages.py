"""``python -m bench.stages``: the parts of a replay, each run on the format's bench archive, must decode what the
replay decodes (a registry format's schemas found as replay finds them), or the table measures dead letters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench.run import Ctx, build_archive  # noqa: E402
from bench.stages import PARTS, stages, stored_part, table  # noqa: E402


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["debezium-avro-confluent", "dataworks-json"])  # schemas by id; fragments
def test_every_part_runs_on_the_archive_and_the_table_shows_it(fmt, spark, tmp_path):
    archive = build_archive(fmt, 200, tmp_path / "archive", files=1, rows=20, changes=150)
    result = stages(Ctx(fmt, archive, None, tmp_path / "out", 200, spark), repeat=1)
    assert set(PARTS) <= set(result) and all(result[p]["seconds"] > 0 for p in PARTS)
    assert table([result]).splitlines()[-1].startswith(f"| {fmt} | 200 | ")


@pytest.mark.spark
def test_a_decode_of_dead_letters_is_refused(spark, tmp_path):
    archive = build_archive("canal-json", 50, tmp_path / "archive", files=1, rows=20, changes=150)
    (archive / "broken.jsonl").write_text('{"not": "canal"}\n' * 2)  # 2 of 52: more than 1% dead letters
    with pytest.raises(RuntimeError, match="2 of 52 decoded rows are dead letters"):
        stored_part(Ctx("canal-json", archive, None, tmp_path / "out", 52, spark))
