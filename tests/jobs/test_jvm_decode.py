"""Replay's decode in the JVM (``cdc_jobs.transforms.jvm_decode``): line files of a format with a JVM twin are read
as blocks of lines and decoded by the twin, the declined lines by the codec in Python. What a user gets must not
depend on it: the same events, dead letters, counts and re-encoded messages as the Python path
(``CDC_REPLAY_JVM_DECODE=off``), and lines numbered as the Python reader numbers them. By default (``auto``) only
an archive big enough to gain from it is decoded there."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from cdc_codecs import get_codec
from cdc_jobs import cli
from cdc_jobs.commands.sample import simulate, write_archive
from cdc_jobs.io import files
from cdc_jobs.transforms import jvm_decode

pytestmark = pytest.mark.spark

# Lines the reader must number and strip as Python's line iteration does: CRLF, a lone CR kept inside a line,
# blank and whitespace-only lines (skipped, but counted), several CRs before the newline, a last line without one.
AWKWARD = (b'x1\r\n\r\n  \t\n\x0b\x0c\nx2\rstill x2\r\r\n\n' + b"x3 " * 40 + b"\nx4\r\n" + b"\xff\xfe not utf-8\n"
           + b"x5")


def declined_lines(spark, blocks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """(line number, bytes) of every line the JVM's rows hand back declined (here: every line, none is JSON)."""
    from cdc_jobs import jvm

    assert jvm.available(spark)
    df = spark.createDataFrame([("a.jsonl", *b) for b in blocks], "pos_source string, first_line long, value binary")
    rows = jvm_decode.line_rows(df, "canal-json").select("pos_offset", "value", "op").collect()
    assert all(r["op"] is None for r in rows)
    return sorted((r["pos_offset"], r["value"]) for r in rows)


@pytest.mark.parametrize("block_bytes", [7, 64, 1 << 20])
def test_blocks_are_numbered_and_split_as_the_python_reader_does(spark, tmp_path, monkeypatch, block_bytes):
    path = tmp_path / "a.jsonl"
    path.write_bytes(AWKWARD)
    expected = list(files._numbered_lines(str(path)))
    monkeypatch.setattr(files, "BLOCK_BYTES", block_bytes)
    whole = [(b, v) for cols in files.read_blocks(str(path)) for b, v in zip(cols["first_line"], cols["value"])]
    assert declined_lines(spark, whole) == expected
    spans = files.split_lines_file(str(path), 20)
    assert len(spans) > 2
    pieces = [(b, v) for s in spans for cols in files.read_blocks(str(path), s)
              for b, v in zip(cols["first_line"], cols["value"])]
    assert declined_lines(spark, pieces) == expected


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("archive")
    w = simulate(7, "2024-01-01", rows=40, changes=200)
    write_archive(w.snapshot, "canal-json", root / "full" / "part-00000.jsonl")
    inc = root / "incremental" / "part-00000.jsonl"
    write_archive(w.changes, "canal-json", inc)
    lines = inc.read_bytes().splitlines(keepends=True)
    # what the JVM declines and the codec decodes (bare numbers, a batch id), and what nothing decodes
    lines[3] = lines[3].replace(b'"id":0', b'"id":12')
    lines[5] = b'{"database":"shop","table":"t","type":"INSERT","es":5,"data":[{"a":1.5}]}\r\n'
    lines[8] = b'{"database":"shop","table":"customers","type":"UPDATE","data":[{"id":"1"\n'
    inc.write_bytes(b"".join(lines[:10]) + b"\n  \n" + b"".join(lines[10:]))
    return root


def outputs(out: Path) -> dict:
    """What a user reads of a replay: counts, events and dead letters (rows in archive order), encoded messages."""
    got = {"counts": json.loads((out / "counts.json").read_text())}
    for sub in ("events", "dead_letters"):
        table = ds.dataset(out / sub, format="parquet", partitioning="hive").to_table()
        got[sub] = table.sort_by([(c, "ascending") for c in ("pos_source", "pos_offset", "pos_index")]).to_pylist()
    if (out / "encoded").exists():
        got["encoded"] = sorted(line for p in (out / "encoded").glob("part-*") for line in p.read_bytes().splitlines())
    return got


# Lines of a declared format's archive that the JVM declines (a cell kind it leaves to Python, a DDL record) or
# takes with vendor fixes, and a broken line (the one dead letter), put in place of a simulated day's lines 3-8.
ODD_LINES = {
    "debezium-json": {3: b'{"before":null,"after":{"id":7,"flag":true},"source":{"db":"shop","table":"t","ts_ms":5},'
                         b'"op":"c","ts_ms":6}',
                      4: b'{"before":null,"after":null,"source":{"connector":"postgresql","db":"shop","schema":"public",'
                         b'"table":"t","ts_ms":5,"lsn":7},"op":"t","ts_ms":6}',
                      5: b'{"source":{"db":"shop","table":"t","ts_ms":5},"databaseName":"shop",'
                         b'"ddl":"ALTER TABLE t ADD c INT","tableChanges":[],"ts_ms":6}',
                      8: b'{"before":null,"after":{"id":1'},
    # a document that replaces the row, a removed field, a transaction marker, a cut document
    "debezium-bson": {3: b'{"before":"{\\"_id\\":7,\\"a\\":0}","after":"{\\"_id\\":7,\\"a\\":1}",'
                         b'"updateDescription":null,"source":{"connector":"mongodb","db":"shop","collection":"t",'
                         b'"ts_ms":5,"ord":1},"op":"u","ts_ms":6}',
                      4: b'{"before":"{\\"_id\\":7,\\"a\\":1}","after":null,"updateDescription":{"removedFields":'
                         b'["a"],"updatedFields":"{\\"b\\":2}","truncatedArrays":null},"source":{"connector":"mongodb",'
                         b'"db":"shop","collection":"t","ts_ms":5,"ord":2},"op":"u","ts_ms":6}',
                      5: b'{"status":"BEGIN","id":"571:53195832","event_count":null,"data_collections":null,"ts_ms":5}',
                      8: b'{"before":null,"after":"{\\"_id\\":1'},
    # an update with the oplog's version marker, a regular expression (kept as written), a command (DDL), a cut
    # document
    "drs-mongo": {3: b'{"id":3,"op":"UPDATE","dbType":"MongoDB","db":"shop","coll":"t","value":"{\\"$v\\": 2, '
                     b'\\"$set\\": {\\"a\\": 1}}","where":"{\\"_id\\": 7}",'
                     b'"recordType":"update","extra":"update","es":5,"ts":6,"clusterTime":null}',
                  4: b'{"id":4,"op":"INSERT","dbType":"MongoDB","db":"shop","coll":"t","value":"{\\"_id\\": 8, '
                     b'\\"a\\": /x+/i}","where":null,"recordType":"insert","extra":"insert","es":5,"ts":6}',
                  5: b'{"id":5,"op":"DDL","dbType":"MongoDB","db":"shop","coll":"t","value":"{\\"create\\": '
                     b'\\"t\\"}","recordType":"ddl","es":5}',
                  8: b'{"id":8,"op":"INSERT","db":"shop","coll":"t","value":"{\\"_id\\": 1'},
    "maxwell-json": {3: b'{"database":"shop","table":"t","type":"insert","ts":5,"data":{"a":{"b":1.50}},"commit":true}',
                     4: b'{"database":"shop","table":"t","type":"update","ts":5,"xid":7,"xoffset":0,"data":{"a":1.50}}',
                     5: b'{"database":"shop","table":"t","type":"table-create","ts":5000,'
                        b'"sql":"CREATE TABLE t (a json)"}',
                     8: b'{"database":"shop","table":"customers","type":"update","data":{"id":1'},
    "oms-default": {3: b'{"allMetaData":{"db":"shop","table_name":"t","dbType":"OB_MYSQL","checkpoint":"x"},'
                       b'"recordType":"UPDATE","prevStruct":{"a":"1"},"postStruct":{"a":1.50}}',
                    4: b'{"allMetaData":{"db":"ten.shop","table_name":"t","dbType":"OB_MYSQL","timestamp":"5",'
                       b'"uniqueId":12},"recordType":"INSERT","prevStruct":null,"postStruct":{"a":1.50,"b":null}}',
                    5: b'{"allMetaData":{"db":"shop","table_name":"t"},"recordType":"DDL","prevStruct":null,'
                       b'"postStruct":{"ddl":"CREATE TABLE t (a int)"}}',
                    8: b'{"allMetaData":{"db":"shop","table_name":"customers"},"recordType":"INSERT","postStruct":{'},
    "cloudcanal-json": {
        3: b'{"action":"UPDATE","bid":7,"db":"shop","table":"t","schema":"shop","execTs":5,"pks":["a"],'
           b'"dbValType":{"a":"decimal(9,2)"},"jdbcType":{"a":3},"data":[{"a":1.50},{"a":2}],'
           b'"before":[{"a":1},{"a":1.25}],"isDdl":false,"tableChanges":null}',
        4: b'{"action":"DELETE","db":"shop","table":"t","execTs":null,"data":[{"a":true}],"before":[]}',
        5: b'{"action":"ALTER","isDdl":true,"db":"shop","table":"t","execTs":5,"sql":"ALTER TABLE t ADD b int"}',
        8: b'{"action":"INSERT","db":"shop","table":"customers","data":[{"id":1'},
    "drs-json": {
        3: b'{"mysqlType":{"a":"int","b":"varbinary(4)"},"id":9,"es":5000,"ts":6000,"database":"shop","table":"t",'
           b'"type":"DELETE","isDdl":false,"sql":"","sqlType":{"a":4,"b":-3},"data":[{"a":"1","b":"[1, -1]"}],'
           b'"old":null,"pkNames":["a"],"jobId":"j"}',
        4: b'{"mysqlType":{"a":"int"},"id":10,"es":5000,"database":"shop","table":"t ","type":"INSERT",'
           b'"sqlType":{"a":4},"data":[{"a":"1"}]}',
        5: b'{"mysqlType":null,"id":11,"es":5000,"database":"shop","table":"t","type":"DDL","isDdl":true,'
           b'"sql":"ALTER TABLE t ADD b int","sqlType":null,"data":null,"old":null,"pkNames":null}',
        8: b'{"mysqlType":{"id":"int"},"id":12,"database":"shop","table":"customers","type":"INSERT","data":[{',
    },
    "drs-gaussdb": {
        3: b'{"columnType":{"a":"integer","b":"bytea","c":"bit(4)","z":"timestamp with time zone"},'
           b'"dbType":"GaussDB Primary/Standby","schema":"public","opType":"UPDATE","id":9,"es":5000,"ts":6000,'
           b'"database":"shop","table":"t","type":"UPDATE","isDdl":false,"sql":"","sqlType":{"a":4,"b":15,"c":20,'
           b'"z":46},"data":[{"a":"1","b":"00ff","c":"0101","z":"2010-01-01 14:30:00+05:30"}],'
           b'"old":[{"a":"1","b":"","c":"0000","z":"2010-01-01 14:30:00+08"}],"pkNames":["a"]}',
        4: b'{"columnType":{"a":"integer","z":"timestamptz"},"schema":"public","opType":"INSERT","id":10,'
           b'"es":5000,"database":"shop","table":"t","type":"INSERT","sqlType":{"a":4,"z":46},'
           b'"data":[{"a":"2","z":"2010-01-01 14:30:00+0800"}]}',
        5: b'{"columnType":null,"id":11,"es":5000,"database":"shop","schema":"public","table":"t","type":"DDL",'
           b'"isDdl":true,"sql":"ALTER TABLE t ADD b int","sqlType":null,"data":null,"old":null,"pkNames":null}',
        8: b'{"columnType":{"id":"integer"},"id":12,"database":"shop","table":"customers","type":"INSERT","data":[{',
    },
    "drs-json-c": {
        3: b'{"mysqlType":{"a":"int","t":"timestamp(3)"},"id":9,"es":5000,"ts":6000,"database":"shop","table":"t",'
           b'"type":"UPDATE","isDdl":false,"sql":"","sqlType":{"a":4,"t":93},'
           b'"data":[{"a":"1","t":"2021-06-25 17:51:53.201"}],'
           b'"old":[{"a":"1","t":"0000-00-00 00:00:00"}],"pkNames":["a"]}',
        4: b'{"mysqlType":{"a":"int","t":"timestamp"},"id":10,"es":5000,"database":"shop","table":"t","type":"INSERT",'
           b'"sqlType":{"a":4,"t":93},"data":[{"a":"1","t":"2021-06-25T17:51:53"}]}',
        5: b'{"mysqlType":null,"id":11,"es":5000,"database":"shop","table":"t","type":"DDL","isDdl":true,'
           b'"sql":"ALTER TABLE t ADD b int","sqlType":null,"data":null,"old":null,"pkNames":null}',
        8: b'{"mysqlType":{"id":"int"},"id":12,"database":"shop","table":"customers","type":"INSERT","data":[{',
    },
    "oms-dataworks": {
        3: b'{"version":"2.0","schema":{"source":{"dbType":"ob_mysql","dbName":"shop","schema":null,"table":"t"},'
           b'"column":[{"name":"a","type":"DECIMAL"}],"pk":["a"]},"payload":{"before":{"data":{"a":1}},'
           b'"after":{"data":{"a":1.50}},"op":"UPDATE","timestamp":{"eventTime":5001,"systemTime":6000},'
           b'"ddl":null,"scn":"null"},"extend":{"k":"v"}}',
        4: b'{"version":"2.0","schema":{"source":{"dbName":"shop","table":"t"},"column":[{"name":"a"}],"pk":[]},'
           b'"payload":{"after":{"data":{"a":1,"b":2}},"op":"INSERT","scn":"7"}}',
        5: b'{"version":"2.0","payload":{"timestamp":{"eventTime":5000},"op":"HEARTBEAT"}}',
        8: b'{"version":"2.0","schema":{"source":{"dbName":"shop","table":"customers"}},"payload":{"op":"INSERT"',
    },
    "oms-extend-column-type": {
        3: b'{"allMetaData":{"db":"shop","table_name":"t","dbType":"OB_MYSQL"},"recordType":"UPDATE",'
           b'"prevStruct":{"a":"1"},"postStruct":{"a":"1.50","__light_type":{"a":{"schemaType":"DECIMAL"}}}}',
        4: b'{"allMetaData":{"db":"shop","table_name":"t","timestamp":"5"},"recordType":"INSERT","prevStruct":null,'
           b'"postStruct":{"a":1,"__light_type":{"a":{"schemaType":"INT64"},"b":{"schemaType":"INT64"}}}}',
        5: b'{"allMetaData":{"db":"shop","table_name":"t"},"recordType":"DDL","prevStruct":null,'
           b'"postStruct":{"ddl":"CREATE TABLE t (a int)"}}',
        8: b'{"allMetaData":{"db":"shop","table_name":"customers"},"recordType":"INSERT","postStruct":{'},
    "ogg-json": {3: b'{"table":"SHOP.T","op_type":"I","op_ts":"2024-01-01 00:00:01.123456",'
                    b'"pos":"00000000010000001234","after":{"A":1.50,"B":true}}',
                 4: b'{"table":"SHOP.T","op_type":"U","op_ts":"2024-01-01 00:00:01.5","pos":"7","primary_keys":["A"],'
                    b'"before":{"A":1},"after":{"A":2,"C":null},"tokens":{"k":"v"}}',
                 5: b'{"table":"SHOP.T","op_type":"T","op_ts":"2024-01-01 00:00:03.000000"}',
                 8: b'{"table":"SHOP.CUSTOMERS","op_type":"I","after":{"ID":1'},
    "oms-shareplex": {3: b'{"meta":{"op":"upd","table":"SHOP.T","time":"2024-01-01T00:00:01","scn":"5","seq":2},'
                         b'"data":{"A":2,"B":"x"},"key":{"A":1}}',
                      4: b'{"meta":{"op":"ins","table":"SHOP.T","time":"2024-01-01T00:00:01","scn":"0007","trans":"t",'
                         b'"rowid":"AAA"},"data":{"A":1.50,"C":null},"extra":1}',
                      5: b'{"meta":{"op":"del","table":"SHOP.T","time":"2024-1-1T1:2:3"},"data":{"A":1}}',
                      8: b'{"meta":{"op":"ins","table":"SHOP.CUSTOMERS"},"data":{"ID":1'},
}


def jvm_reads(out: Path, to_format) -> list[int]:
    """The reads a replay into ``out`` decodes in the JVM: its one pass, and for its dead letters the files that
    hold them read again (unless a re-encode kept the decoded rows)."""
    dead = json.loads((out / "counts.json").read_text())["dead_letters"]
    return [1, 1] if dead and not to_format else [1]


@pytest.fixture(scope="module")
def declared_archives(tmp_path_factory) -> dict[str, Path]:
    """An archive of each format with a declared JVM decode: a simulated day with ODD_LINES in it."""
    out = {}
    for fmt, odd in ODD_LINES.items():
        root = tmp_path_factory.mktemp(fmt)
        w = simulate(7, "2024-01-01", rows=40, changes=200)
        path = root / "part-00000.jsonl"
        write_archive(w.snapshot + w.changes, fmt, path)
        lines = path.read_bytes().splitlines(keepends=True)
        for i, line in odd.items():
            lines[i] = line + b"\n"
        path.write_bytes(b"".join(lines))
        out[fmt] = root
    return out


@pytest.mark.parametrize("fmt, to_format", [("canal-json", None), ("canal-json", "oms-default"),
                                            *((f, None) for f in ODD_LINES)])
def test_replay_in_the_jvm_gives_what_the_python_path_gives(spark, request, tmp_path, monkeypatch, fmt, to_format):
    archive = request.getfixturevalue("archive") if fmt == "canal-json" else request.getfixturevalue(
        "declared_archives")[fmt]
    calls = []
    monkeypatch.setattr(jvm_decode, "decode_blocks", lambda *a, _f=jvm_decode.decode_blocks: calls.append(1) or _f(*a))
    extra = ["--to-format", to_format] if to_format else []
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "on")  # the archive is far below jvm_decode.MIN_BYTES
    assert cli.main(["replay", "--source", str(archive), "--format", fmt, "--out",
                     str(tmp_path / "jvm"), *extra]) == 0
    assert calls == jvm_reads(tmp_path / "jvm", to_format), "the replay did not decode in the JVM"
    decoded = len(calls)
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "off")
    assert cli.main(["replay", "--source", str(archive), "--format", fmt, "--out",
                     str(tmp_path / "python"), *extra]) == 0
    assert len(calls) == decoded
    jvm_out, python_out = outputs(tmp_path / "jvm"), outputs(tmp_path / "python")
    assert jvm_out["counts"]["dead_letters"] == 1 and len(jvm_out["events"]) > 200
    assert ("encoded" in jvm_out) == bool(to_format)
    assert jvm_out == python_out


def test_by_default_only_an_archive_big_enough_to_gain_decodes_in_the_jvm(spark, archive, tmp_path, monkeypatch,
                                                                          capsys):
    calls = []
    monkeypatch.setattr(jvm_decode, "decode_blocks", lambda *a, _f=jvm_decode.decode_blocks: calls.append(1) or _f(*a))
    monkeypatch.delenv("CDC_REPLAY_JVM_DECODE", raising=False)
    size = sum(p.stat().st_size for p in archive.rglob("*") if p.is_file())

    def replay(out: str) -> int:
        return cli.main(["replay", "--source", str(archive), "--format", "canal-json", "--out", str(tmp_path / out)])

    monkeypatch.setattr(jvm_decode, "MIN_BYTES", size + 1)
    assert replay("small") == 0 and calls == []
    monkeypatch.setattr(jvm_decode, "MIN_BYTES", size)
    assert replay("big") == 0 and calls == [1]
    assert outputs(tmp_path / "small") == outputs(tmp_path / "big")
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "fast")
    assert replay("typo") != 0 and calls == [1]
    assert "CDC_REPLAY_JVM_DECODE='fast': expected one of auto, on, off" in capsys.readouterr().err


def test_a_declared_format_decodes_in_the_jvm_from_its_own_size(spark, declared_archives, monkeypatch):
    """A format decoded in Python by the whole recipe gains from the JVM sooner (MIN_DECLARED_BYTES) than one whose
    codec has a Python fast path of its own (canal-json: MIN_BYTES)."""
    monkeypatch.delenv("CDC_REPLAY_JVM_DECODE", raising=False)
    files = [str(p) for p in declared_archives["maxwell-json"].rglob("*.jsonl")]
    size = sum(Path(f).stat().st_size for f in files)
    monkeypatch.setattr(jvm_decode, "MIN_BYTES", size + 1)
    monkeypatch.setattr(jvm_decode, "MIN_DECLARED_BYTES", size)
    assert jvm_decode.runs(spark, "maxwell-json", files) and not jvm_decode.runs(spark, "canal-json", files)
    monkeypatch.setattr(jvm_decode, "MIN_DECLARED_BYTES", size + 1)
    assert not jvm_decode.runs(spark, "maxwell-json", files)


@pytest.fixture(scope="module")
def avro_archive(tmp_path_factory) -> Path:
    """A DTS Avro container archive: a full sync and a day of changes, one file with records the twin declines
    (a Float column, an int past 32 bits: a dead letter) and one cut short."""
    import fastavro

    from cdc_codecs import get_codec
    from cdc_codecs.dts.dts_avro import NS, RECORD15
    from cdc_codecs.shared.avro import avro_loads

    root = tmp_path_factory.mktemp("avro_archive")
    w = simulate(11, "2024-01-01", rows=40, changes=300)
    codec = get_codec("dts-avro")

    def datums(events):
        return [avro_loads(RECORD15, m.value)[0] for e in events for m in codec.encode([e])]

    def write(path: Path, records: list[dict]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fastavro.writer(fh, RECORD15, records, codec="deflate", sync_interval=2000)
        return path

    write(root / "full" / "part-00000.avro", datums(w.snapshot))
    changes = datums(w.changes)
    odd = [dict(changes[3], version=2**40),
           dict(changes[4], afterImages=[(f"{NS}.Float", {"value": 1.5, "precision": 3, "scale": 1})]
                + changes[4]["afterImages"][1:])]
    write(root / "incremental" / "part-00000.avro", changes[:3] + odd + changes[5:150])
    cut = write(root / "incremental" / "part-00001.avro", changes[150:])
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size * 3 // 4])
    return root


@pytest.mark.parametrize("to_format", [None, "oms-default"])
def test_an_avro_replay_in_the_jvm_gives_what_the_python_path_gives(spark, avro_archive, tmp_path, monkeypatch,
                                                                     to_format):
    calls = []
    monkeypatch.setattr(jvm_decode, "decode_avro_blocks",
                        lambda *a, _f=jvm_decode.decode_avro_blocks: calls.append(1) or _f(*a))
    extra = ["--to-format", to_format] if to_format else []
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "on")  # the archive is far below jvm_decode.MIN_AVRO_BYTES
    assert cli.main(["replay", "--source", str(avro_archive), "--format", "dts-avro", "--out",
                     str(tmp_path / "jvm"), "--max-dead-letters", "10", *extra]) == 0
    assert calls == jvm_reads(tmp_path / "jvm", to_format), "the replay did not decode in the JVM"
    decoded = len(calls)
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "off")
    assert cli.main(["replay", "--source", str(avro_archive), "--format", "dts-avro", "--out",
                     str(tmp_path / "python"), "--max-dead-letters", "10", *extra]) == 0
    assert len(calls) == decoded
    jvm_out, python_out = outputs(tmp_path / "jvm"), outputs(tmp_path / "python")
    assert jvm_out["counts"]["dead_letters"] == 2 and len(jvm_out["events"]) > 300
    assert ("encoded" in jvm_out) == bool(to_format)
    assert jvm_out == python_out


def test_a_kafka_plan_decodes_in_the_jvm_from_as_many_records_as_a_file_from_bytes(spark, monkeypatch):
    """A Kafka plan knows its records, not their bytes: it counts BYTES_PER_RECORD a record against the same
    thresholds; a format without a declaration always decodes in Python."""
    monkeypatch.delenv("CDC_REPLAY_JVM_DECODE", raising=False)
    per = jvm_decode.BYTES_PER_RECORD
    monkeypatch.setattr(jvm_decode, "MIN_DECLARED_BYTES", 1000 * per)
    monkeypatch.setattr(jvm_decode, "MIN_BYTES", 5000 * per)
    assert jvm_decode.runs_records(spark, "maxwell-json", 1000) and not jvm_decode.runs_records(spark, "maxwell-json",
                                                                                                 999)
    assert not jvm_decode.runs_records(spark, "canal-json", 4999) and jvm_decode.runs_records(spark, "canal-json", 5000)
    assert not jvm_decode.runs_records(spark, "dataworks-json", 10**9)
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "on")
    assert jvm_decode.runs_records(spark, "maxwell-json", 1)
    monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", "off")
    assert not jvm_decode.runs_records(spark, "maxwell-json", 10**9)


# A DTS record the JVM cannot read: the dead letter of a dts-avro dump.
DUMP_ODD = {**ODD_LINES, "dts-avro": {8: b"\x02not a DTS record"}}


@pytest.mark.parametrize("fmt", ["oms-default", "dts-avro", "debezium-json", "debezium-bson", "drs-mongo"])
def test_a_kafka_dump_decoded_in_the_jvm_replays_as_the_python_path_does(spark, tmp_path, monkeypatch, fmt):
    """A Kafka dump archive (`cdc-replay archive`'s lines: topic, partition, offset, timestamp, base64 key and value,
    headers) of a format with a JVM decode: its records are decoded there as a topic's are (RecordBlockDecode), with
    the same events, dead letters and counts as in Python, a tombstone and headers included."""
    import base64

    b64 = lambda v: None if v is None else base64.b64encode(v).decode()  # noqa: E731
    w = simulate(7, "2024-01-01", rows=40, changes=200)
    messages = [m for e in w.snapshot + w.changes for m in get_codec(fmt).encode([e])]
    values = [m.value for m in messages]
    for i, odd in DUMP_ODD[fmt].items():
        values[i] = odd
    keys = [m.key for m in messages]
    values.insert(10, None)  # a tombstone
    keys.insert(10, b"gone")
    folder = tmp_path / "archive" / "topic=cdc" / "partition=0"
    folder.mkdir(parents=True)
    with open(folder / "part-00000.dump.jsonl", "w") as fh:
        for offset, (key, value) in enumerate(zip(keys, values)):
            headers = [{"key": "trace", "value": b64(str(offset).encode())}] if offset % 3 == 0 else []
            fh.write(json.dumps({"topic": "cdc", "partition": 0, "offset": offset, "timestamp": 1704067200000 + offset,
                                 "key": b64(key), "value": b64(value), "headers": headers}) + "\n")
    calls = []
    monkeypatch.setattr(jvm_decode, "decode_records",
                        lambda *a, _f=jvm_decode.decode_records: calls.append(1) or _f(*a))
    monkeypatch.setattr(jvm_decode, "RECORDS_PER_BLOCK", 64)

    def replay(mode: str) -> dict:
        monkeypatch.setenv("CDC_REPLAY_JVM_DECODE", mode)
        assert cli.main(["replay", "--source", str(tmp_path / "archive"), "--format", fmt, "--out",
                         str(tmp_path / mode)]) == 0
        return outputs(tmp_path / mode)

    jvm, python = replay("on"), replay("off")
    assert calls == [1, 1], "the replay did not decode the dump in the JVM (its one pass, then the dead letter's)"
    assert jvm["counts"]["tombstones"] == 1 and jvm["counts"]["dead_letters"] == 1 and len(jvm["events"]) > 200
    assert any(e["pos_headers"] for e in jvm["events"]) and all(e["pos_key"] for e in jvm["events"])
    assert jvm == python
