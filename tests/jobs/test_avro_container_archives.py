"""Avro container archives (``*.avro``, what an Avro topic archived to object storage looks like) are read and
decoded in one step: the codec gets the datum the container reader made (``Codec.container_decoder``) instead of
bytes written back and read again. A user must get exactly what the bytes give: the same events, the same dead
letters with the same raw bytes, and the same positions, for every fixture and the scenario of both Avro formats,
for 14- and 15-field DTS records, OMS shards, and containers of a schema the codec does not own."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from cdc_codecs import get_codec
from cdc_codecs.dts.dts_avro import RECORD14, RECORD15, writable
from cdc_codecs.oms.oms_avro import SCHEMA as OMS_SCHEMA
from cdc_codecs.shared.avro import avro_loads
from cdc_jobs.io.files import _FilePartition, raw_columns, read_avro
from cdc_jobs.schemas import RAW_ARROW
from cdc_jobs.transforms.decode import decode_batches, decode_columns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codecs"))
from fuzz import oms_with_version, seed_messages  # noqa: E402


def _datums(fmt: str, schema) -> list[dict]:
    """The format's fixture and scenario messages that are records of exactly ``schema``, as datums."""
    out = []
    for _, raw in seed_messages(fmt):
        try:
            datum, used = avro_loads(schema, raw)
        except Exception:  # noqa: BLE001 - a seed of the other DTS schema (14 vs 15 fields)
            continue
        if used == len(raw):
            out.append(datum)
    return out


def _container(path: Path, schema, datums: list, codec: str = "null") -> Path:
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, [_writable(d) for d in datums], codec=codec, sync_interval=600)  # several blocks
    return path


def _writable(datum: dict) -> dict:
    """fastavro's writer takes no tuple notation for an enum in an array's union (``dts_avro.writable``)."""
    return {k: [writable(v) for v in v] if isinstance(v, list) else v for k, v in datum.items()}


def _by_bytes(fmt: str, path: Path) -> list[dict]:
    """The reference: each record written back to bytes and decoded by ``Codec.decode``."""
    batches = [pa.RecordBatch.from_pydict(cols, schema=RAW_ARROW) for cols in read_avro(str(path))]
    return [r for b in decode_batches(fmt, batches) for r in b.to_pylist()]


def _in_one_step(fmt: str, path: Path) -> list[dict]:
    return [r for b in decode_columns(fmt, raw_columns(_FilePartition(str(path)), get_codec(fmt)))
            for r in b.to_pylist()]


@pytest.mark.parametrize("fmt,schema,codec", [("dts-avro", RECORD15, "null"), ("dts-avro", RECORD14, "deflate"),
                                              ("oms-avro", OMS_SCHEMA, "null")],
                         ids=["dts-15-fields", "dts-14-fields-deflate", "oms"])
def test_container_datums_decode_exactly_as_their_bytes(tmp_path, fmt, schema, codec):
    datums = _datums(fmt, schema) * 3
    assert len(datums) >= 3, "the fixtures hold records of this schema"
    path = _container(tmp_path / "a.avro", schema, datums, codec)
    assert get_codec(fmt).container_decoder(fastavro.reader(open(path, "rb")).writer_schema) is not None
    fused = _in_one_step(fmt, path)
    assert fused == _by_bytes(fmt, path)
    assert sorted({r["pos_offset"] for r in fused}) == list(range(1, len(datums) + 1))
    assert any(r["op"] is not None and r["dl_reason"] is None for r in fused)
    # the bytes a record is read from are the archived ones, as the codec itself writes that datum
    raws = [v for cols in read_avro(str(path)) for v in cols["value"]]
    assert raws == [_bytes_of(schema, _writable(d)) for d in datums]


def test_a_record_the_codec_rejects_is_a_dead_letter_with_the_bytes_of_that_record(tmp_path):
    good = _datums("dts-avro", RECORD15)[0]
    bad = dict(good, version=2**40)  # an Avro int past 32 bits: fastavro writes it, the codec must refuse it
    path = _container(tmp_path / "a.avro", RECORD15, [good, bad, good])
    fused = _in_one_step("dts-avro", path)
    assert fused == _by_bytes("dts-avro", path)
    dead = [r for r in fused if r["dl_reason"]]
    assert [(r["pos_offset"], r["dl_field"]) for r in dead] == [(2, "Record")]
    assert "does not fit 32 bits" in dead[0]["dl_reason"]
    assert dead[0]["dl_raw"] == _bytes_of(RECORD15, _writable(bad))


def test_oms_container_records_with_an_int_beyond_32_bits_are_refused_with_or_without_their_bytes():
    """fastavro's writer refuses such OMS records (their ints are inside unions), so the record's bytes are
    spliced: the container decoder must refuse its datum whether the reader hands it the bytes (whose look
    spares checking most datums) or not."""
    from cdc_codecs import DecodeError, Position
    from cdc_codecs.shared.avro import read_datum

    raw = _bytes_of(OMS_SCHEMA, _datums("oms-avro", OMS_SCHEMA)[0])
    bad = oms_with_version(raw, 2**40)
    datum, used = read_datum(OMS_SCHEMA, bad, named=True)
    assert used == len(bad) and datum["version"] == 2**40
    decoder = get_codec("oms-avro").container_decoder(OMS_SCHEMA)
    at = Position("a.avro", -1, 2)
    for given in (bad, None):
        with pytest.raises(DecodeError, match=f"version = {2**40} does not fit 32 bits"):
            decoder.decode(datum, at, given)
    good, _ = read_datum(OMS_SCHEMA, raw, named=True)
    assert decoder.decode(good, at, raw) == decoder.decode(good, at)


def test_a_container_of_another_schema_is_decoded_from_its_bytes(tmp_path):
    """A container whose writer schema is not the codec's (here: OMS records read as DTS) is not handed over as
    datums: each record's bytes go to ``decode``, which turns them into dead letters naming the format."""
    datums = _datums("oms-avro", OMS_SCHEMA)[:4]
    path = _container(tmp_path / "a.avro", OMS_SCHEMA, datums)
    assert get_codec("dts-avro").container_decoder(fastavro.reader(open(path, "rb")).writer_schema) is None
    fused = _in_one_step("dts-avro", path)
    assert fused == _by_bytes("dts-avro", path)
    assert len(fused) == 4 and all("dts-avro" in r["dl_reason"] for r in fused)


def test_a_cut_container_keeps_its_readable_records_and_dead_letters_the_rest(tmp_path):
    datums = _datums("dts-avro", RECORD15) * 20
    path = _container(tmp_path / "a.avro", RECORD15, datums)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])  # cut in the middle of a block
    fused = _in_one_step("dts-avro", path)
    assert fused == _by_bytes("dts-avro", path)
    last = max(r["pos_offset"] for r in fused)
    assert 0 < last - 1 < len(datums)
    assert [r["pos_offset"] for r in fused if r["dl_reason"]] == [last]


def _bytes_of(schema, datum) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


def test_a_writer_schema_with_logical_types_is_read_as_the_codec_reads_its_bytes(tmp_path):
    """The canonical form ignores logical types: a producer that annotates ``sourceTimestamp`` as
    ``timestamp-millis`` writes the same bytes, which the codec must read as its own schema does (a long), not as
    the datetime fastavro would make of the annotation."""
    import copy

    from cdc_codecs.dts.dts_avro import _PLAIN

    annotated = copy.deepcopy(_PLAIN)
    for f in annotated["fields"]:
        if f["name"] == "sourceTimestamp":
            f["type"] = {"type": "long", "logicalType": "timestamp-millis"}
    datums = _datums("dts-avro", RECORD15)
    path = tmp_path / "a.avro"
    with open(path, "wb") as fh:  # the same bytes: write the plain datums, then swap in the annotated header
        fastavro.writer(fh, fastavro.parse_schema(annotated), [
            dict(_writable(d), sourceTimestamp=_as_datetime(d["sourceTimestamp"])) for d in datums], codec="null")
    assert get_codec("dts-avro").container_decoder(fastavro.reader(open(path, "rb")).writer_schema) is not None
    fused = _in_one_step("dts-avro", path)
    assert fused == _by_bytes("dts-avro", path)
    assert all(r["dl_reason"] is None for r in fused)


def _as_datetime(millis: int):
    from datetime import datetime, timedelta, timezone

    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=millis)


# -- read in the JVM --------------------------------------------------------------------------------------------
# Where the replay decodes a container archive in the JVM (``cdc_jobs.transforms.jvm_decode``: the file read as
# framed blocks, the records decoded by the codec's twin, declined ones by the codec, unreadable ones from there on
# by ``read_avro``), a user must get exactly what the Python reader gives.

def _containers(tmp_path: Path) -> dict[str, tuple[str, Path]]:
    good = _datums("dts-avro", RECORD15)
    day = _day_datums()
    out = {
        "dts-15-fields": ("dts-avro", _container(tmp_path / "a.avro", RECORD15, (good + day) * 3)),
        "dts-14-fields-deflate": ("dts-avro", _container(tmp_path / "b.avro", RECORD14,
                                                         _datums("dts-avro", RECORD14) * 3, "deflate")),
        "oms (no twin)": ("oms-avro", _container(tmp_path / "c.avro", OMS_SCHEMA, _datums("oms-avro", OMS_SCHEMA))),
        "another schema": ("dts-avro", _container(tmp_path / "d.avro", OMS_SCHEMA, _datums("oms-avro", OMS_SCHEMA))),
        "a record the codec rejects": ("dts-avro", _container(tmp_path / "e.avro", RECORD15,
                                                              day[:5] + [dict(day[0], version=2**40)] + day[5:9])),
    }
    cut = _container(tmp_path / "f.avro", RECORD15, day * 3)
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size * 2 // 3])
    out["a cut container"] = ("dts-avro", cut)
    # a string that is not UTF-8 inside a block: fastavro cannot read that record, so neither may the twin
    broken = _container(tmp_path / "g.avro", RECORD15, day * 2)
    data = broken.read_bytes()
    at = data.index(b"shop.", len(data) // 2)
    broken.write_bytes(data[:at] + b"\xff" + data[at + 1:])
    out["a record fastavro cannot read"] = ("dts-avro", broken)
    return out


def _day_datums() -> list[dict]:
    """A simulated day of two plain MySQL tables as DTS records: what the twin decodes itself."""
    from cdc_jobs.commands.sample import simulate

    w = simulate(5, "2024-01-01", rows=30, changes=300)
    return [avro_loads(RECORD15, m.value)[0] for e in w.snapshot + w.changes for m in get_codec("dts-avro").encode([e])]


def _in_the_jvm(spark, fmt: str, path: Path) -> list[dict]:
    """What the replay's decode step gives where it reads the container in the JVM."""
    from pyspark.sql import functions as F

    from cdc_jobs import jvm
    from cdc_jobs.io.files import AVRO_BLOCK_ARROW, AVRO_BLOCK_SPARK, read_avro_blocks
    from cdc_jobs.transforms.jvm_decode import avro_decoded

    assert jvm.available(spark), "the JVM side did not build (javac missing?)"
    rows = [r for cols in read_avro_blocks(str(path), get_codec(fmt))
            for r in pa.RecordBatch.from_pydict(cols, schema=AVRO_BLOCK_ARROW).to_pylist()]
    streams = spark.createDataFrame(rows, schema=AVRO_BLOCK_SPARK).coalesce(1).select(
        "pos_source", "first_line", "writer_schema",
        F.call_function(jvm.AVRO_BLOCK_DECODE, F.col("twin"), F.col("first_line"), F.col("value")).alias("lines"),
    ).toArrow()
    return [r for b in avro_decoded(fmt, iter(streams.to_batches())) for r in b.to_pylist()]


@pytest.mark.spark
@pytest.mark.parametrize("block_bytes", [1, 1 << 20], ids=["a block a row", "blocks together"])
def test_a_container_read_in_the_jvm_gives_what_the_python_reader_gives(spark, tmp_path, monkeypatch, block_bytes):
    from cdc_jobs.io import files

    monkeypatch.setattr(files, "BLOCK_BYTES", block_bytes)
    taken = 0
    for case, (fmt, path) in _containers(tmp_path).items():
        python = _in_one_step(fmt, path)
        jvm = _in_the_jvm(spark, fmt, path)
        assert jvm == python, case
        taken += sum(r["dl_reason"] is None for r in jvm)
    assert taken > 1000
