"""``python -m bench.stages``: the parts of a replay, each run on the format's bench archive, must decode what the
replay decodes (a registry format's schemas found as replay finds them), or the table measures dead letters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench.run import Ctx, build_archive, ours_replay  # noqa: E402
from bench.stages import _decoded, _schemas, refuse_dead_letters, stages, stored_part, table  # noqa: E402
from cdc_jobs.transforms.accounting import summarise  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["debezium-avro-confluent", "dataworks-json"])  # schemas by id; fragments
def test_the_decode_part_decodes_what_the_replay_decoded(fmt, spark, tmp_path):
    """The parts time replay's own read and decode: the rows they decode add up to the replay's counts.json
    (records, events per table and op, dead letters, fragments), and the table's ratio is peer over replay."""
    archive = build_archive(fmt, 200, tmp_path / "archive", files=1, rows=20, changes=150)
    ctx = Ctx(fmt, archive, None, tmp_path / "out", 200, spark)
    result = stages(ctx, repeat=1)
    ours_replay(ctx)  # the peer, run last, wrote over the replay's outputs
    replayed = json.loads((ctx.out / "counts.json").read_text())
    with _schemas(ctx):
        decoded = _decoded(ctx)
        assert refuse_dead_letters(fmt, decoded) >= 200  # one row per message at least
        summary = summarise(decoded, F.lit(True), F.lit(True))
    assert json.loads(json.dumps(summary)) == {k: replayed[k] for k in summary}
    row = table([result]).splitlines()[-1].split(" | ")
    peer, ours = result["peer"]["cpu_seconds"], result["replay"]["cpu_seconds"]
    assert row[0] == f"| {fmt}" and row[6].startswith(f"{round(peer / max(0.1, ours), 2)} (")


@pytest.mark.spark
def test_a_decode_of_dead_letters_is_refused(spark, tmp_path):
    archive = build_archive("canal-json", 50, tmp_path / "archive", files=1, rows=20, changes=150)
    (archive / "broken.jsonl").write_text('{"not": "canal"}\n' * 2)  # 2 of 52: more than 1% dead letters
    with pytest.raises(RuntimeError, match="2 of 52 decoded rows are dead letters"):
        stored_part(Ctx("canal-json", archive, None, tmp_path / "out", 52, spark))


@pytest.mark.spark
def test_a_reencode_is_cut_into_the_encoders_trip_and_its_outputs(spark, tmp_path):
    """With a target, the encode part encodes what the re-encode encodes (its messages are counts.json's), and the
    table's floor is the peer over the re-encode without its decode."""
    from bench.run import ours_reencode
    from bench.stages import _encoded, reencode_table

    archive = build_archive("canal-json", 200, tmp_path / "archive", files=1, rows=20, changes=150)
    ctx = Ctx("canal-json", archive, "oms-default", tmp_path / "out", 200, spark)
    result = stages(ctx, repeat=1)
    assert set(result) >= {"read", "decode", "stored", "replay", "encode", "reencode", "peer"}
    ours_reencode(ctx)  # the peer, run last, wrote over the re-encode's outputs
    encoded = json.loads((ctx.out / "counts.json").read_text())["encoded"]
    with _schemas(ctx):
        stored = _decoded(ctx)
        rows = _encoded(ctx, stored, refuse_dead_letters("canal-json", stored))
        assert rows.where("el_reason IS NULL").count() == encoded["messages"] > 0
    cpu = {p: result[p]["cpu_seconds"] for p in result if isinstance(result[p], dict)}
    row = reencode_table([result]).splitlines()[-1].split(" | ")
    assert row[0] == "| canal-json -> oms-default"
    assert row[7] == str(round(cpu["peer"] / max(0.1, cpu["reencode"] - (cpu["decode"] - cpu["read"])), 2))
