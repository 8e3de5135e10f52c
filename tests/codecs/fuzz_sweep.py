"""The codec fuzz tests (``test_fuzz.py``: the byte/JSON corpus and the structure-aware mutations) over many seeds,
outside CI: ``python tests/codecs/fuzz_sweep.py FIRST LAST [FORMAT ...] [--per-format N] [--jvm]`` (default: every
format, the tests' own corpus sizes). Prints each failing input (seed, format, corpus, label, reason), one line per
seed and the inputs per format; a failing seed is a defect found, kept as a fixed case once fixed
(``test_fuzz.FIXED_STRUCT_SEEDS``, ``FOUND_BY_SWEEP``). About 4 s per seed on 2 idle cores (40-60 s on a loaded
machine); ``--per-format 1500`` about 30 s.

``--jvm`` also decodes each seed's inputs of the formats with a JVM decode (a declaration, a container twin) in the
JVM, as ``test_jvm_fast_paths`` does with its fixed inputs: every input the JVM takes must give exactly the Python
codec's rows (one Spark session; about 25 s per seed for the fourteen declared formats at ``--per-format 1500``)."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402
from test_fuzz import FORMATS, PER_FORMAT, STRUCT_PER_FORMAT, check_input  # noqa: E402


def main(first: int, last: int, formats: list[str], per: int = 0, in_jvm: bool = False) -> int:
    failed = []
    per_format: collections.Counter = collections.Counter()
    jvm_check = jvm_equivalence() if in_jvm else None
    for seed in range(first, last + 1):
        started, n = time.time(), 0
        for fmt in formats:
            inputs_of = {"corpus": fuzz.corpus(fmt, per or PER_FORMAT, seed=seed, ten_mb_line=False),
                         "structural": fuzz.structural(fmt, per or STRUCT_PER_FORMAT, seed=seed)}
            if jvm_check is not None:
                for reason in jvm_check(fmt, [i.raw for inputs in inputs_of.values() for i in inputs]):
                    failed.append(seed)
                    print("FAIL", seed, fmt, "jvm", reason, flush=True)
            for corpus, inputs in inputs_of.items():
                for i, inp in enumerate(inputs, 1):
                    n += 1
                    per_format[fmt, corpus] += 1
                    try:
                        outcome = check_input(fmt, i, inp, collections.Counter())
                        if getattr(inp, "violates", False) and outcome != "dead letter":
                            raise AssertionError(f"a required field violated, decoded as {outcome}")
                    except BaseException as exc:  # noqa: BLE001 - pytest.fail raises a BaseException
                        failed.append(seed)
                        print("FAIL", seed, fmt, corpus, inp.label, str(exc)[:300], flush=True)
        print(f"seed {seed}: {n} inputs, {time.time() - started:.0f} s, failures so far {len(failed)}", flush=True)
    print(f"seeds {first}-{last}: {len(set(failed))} failed: {sorted(set(failed))}")
    for fmt in formats:
        print(f"  {fmt}: {per_format[fmt, 'corpus']} corpus inputs, "
              f"{per_format[fmt, 'structural']} structural mutations")
    return 1 if failed else 0


def jvm_equivalence():
    """A check of a format's inputs in its JVM decode, where it has one: the reasons of the inputs whose JVM rows are
    not the Python codec's (``test_jvm_fast_paths.compared``)."""
    from cdc_codecs import get_codec
    from cdc_jobs.spark import session
    from test_jvm_fast_paths import (CONTAINER_TWINS, DECLARED, WRITER_SCHEMAS, container_python_rows,
                                     container_twin_rows, jvm_rows, one_line, python_rows)

    spark = session("cdc-replay fuzz sweep")

    def twin_python_rows(decoder, raw: bytes, number: int):
        try:
            return container_python_rows(decoder, raw, number)
        except Exception:  # noqa: BLE001 - bytes Avro cannot read: the twin must hand them over too
            return None

    def check(fmt: str, raws: list[bytes]) -> list[str]:
        if fmt in DECLARED:
            raws = [r for r in raws if one_line(r)]
            got, expected = jvm_rows(spark, fmt, raws), [python_rows(fmt, r, i + 1) for i, r in enumerate(raws)]
        elif fmt in CONTAINER_TWINS:
            decoder = get_codec(fmt).container_decoder(WRITER_SCHEMAS[fmt]())
            got = container_twin_rows(spark, decoder.jvm_rows, raws, valid=False)
            expected = [twin_python_rows(decoder, r, i + 1) for i, r in enumerate(raws)]
        else:
            return []
        return [f"{'the Python side declines it' if want is None else 'other rows'}: {raw[:300]!r}"
                for raw, rows, want in zip(raws, got, expected) if rows is not None and rows != want]

    return check


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("first", type=int)
    ap.add_argument("last", type=int)
    ap.add_argument("formats", nargs="*")
    ap.add_argument("--per-format", type=int, default=0, help="inputs per format and corpus (default: the tests')")
    ap.add_argument("--jvm", action="store_true", help="also compare the JVM decodes' rows with the codecs'")
    args = ap.parse_args()
    sys.exit(main(args.first, args.last, args.formats or FORMATS, args.per_format, args.jvm))
