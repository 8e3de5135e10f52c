"""The codec fuzz tests (``test_fuzz.py``: the byte/JSON corpus and the structure-aware mutations) over many seeds,
outside CI: ``python tests/codecs/fuzz_sweep.py FIRST LAST [FORMAT ...] [--per-format N] [--jvm]`` (default: every
format, the tests' own corpus sizes). Prints each failing input (seed, format, corpus, label, reason), one line per
seed and the inputs per format; a failing seed is a defect found, kept as a fixed case once fixed
(``test_fuzz.FIXED_STRUCT_SEEDS``, ``FOUND_BY_SWEEP``). About 4 s per seed on 2 idle cores (40-60 s on a loaded
machine); ``--per-format 1500`` about 30 s.

``--jvm`` also decodes each seed's inputs of the formats with a JVM decode (a declaration, a container twin) in the
JVM, as ``test_jvm_fast_paths`` does with its fixed inputs: every input the JVM takes must give exactly the Python
codec's rows (one Spark session; about 25 s per seed for the fourteen declared formats at ``--per-format 1500``).

``--cross`` also encodes every event a format accepts into every other format and decodes it there (``replay
--to-format``): an encoder crash, a message the target's decoder refuses, or a value that comes back changed (as far
as both formats carry it) is a failure; ``--cross-crashes-only`` reports the first two only."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402
from test_fuzz import FORMATS, PER_FORMAT, STRUCT_PER_FORMAT, check_input, redecode  # noqa: E402


def main(first: int, last: int, formats: list[str], per: int = 0, in_jvm: bool = False,
         cross: bool = False, cross_values: bool = True) -> int:
    failed = []
    per_format: collections.Counter = collections.Counter()
    jvm_check = jvm_equivalence() if in_jvm else None
    for seed in range(first, last + 1):
        started, n = time.time(), 0
        for fmt in formats:
            inputs_of = {"corpus": fuzz.corpus(fmt, per or PER_FORMAT, seed=seed, ten_mb_line=False),
                         "structural": fuzz.structural(fmt, per or STRUCT_PER_FORMAT, seed=seed)}
            if cross:
                for reason in cross_check(fmt, [i.raw for inputs in inputs_of.values() for i in inputs], cross_values):
                    failed.append(seed)
                    print("FAIL", seed, fmt, "cross", reason, flush=True)
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


def cross_check(fmt: str, raws: list[bytes], values: bool = True) -> list[str]:
    """Each event the codec of ``fmt`` accepts from ``raws``, encoded into every format that carries its op and
    decoded there: the reasons of those whose encoder crashed (anything but ``EncodeError``, which the encode step
    dead-letters naming the field), whose message the target's decoder refuses, or (``values``) whose values came
    back other than they went in, as far as the two formats carry them (``scenario.view``, what
    ``test_format_matrix`` compares for the canonical scenario; float columns by the number they spell)."""
    from cdc_codecs import EncodeError, Position, available_formats, get_codec
    from cdc_codecs.contract import check_events
    from cdc_codecs.scenario import view

    codec, reasons = get_codec(fmt), []
    for n, raw in enumerate(raws, 1):
        try:
            events = codec.decode(raw, Position("cross", -1, n))
            check_events(fmt, events)
        except Exception:  # noqa: BLE001 - what the codec refuses is test_fuzz's matter, not this check's
            continue
        for e in (e for e in events if e.fragment_key is None):
            for target in available_formats():
                into = get_codec(target)
                caps = [codec.capabilities, into.capabilities]
                if target == fmt or not all(c.carries(e.op) for c in caps):
                    continue
                try:
                    back = redecode(into, into.encode([e]), keyed=True)
                except EncodeError:
                    continue
                except Exception as exc:  # noqa: BLE001 - the point of the check
                    reasons.append(f"-> {target}: {type(exc).__name__}: {str(exc)[:200]} (input {n}: {raw[:200]!r})")
                    continue
                if not values:
                    continue
                want, got = view(e, e, caps), [view(b, e, caps) for b in back]
                differences = _differences(want, got, floats(e))
                if differences:
                    reasons.append(f"-> {target}: other values {str(differences)[:300]} (input {n}: {raw[:200]!r})")
    return reasons


def floats(e) -> set[str]:
    """The event's float columns: their values compare as numbers (an Avro double has no spelling)."""
    from cdc_codecs.types import family

    return {c.name for c in e.columns if family(c.type_name, c.jdbc_type) == "float"}


def _same_float(a: object, b: object) -> bool:
    from decimal import Decimal, InvalidOperation

    try:
        return isinstance(a, str) and isinstance(b, str) and Decimal(a).is_finite() and Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


def _differences(want: tuple, got: list[tuple], float_columns: set[str] = frozenset()) -> dict:
    """The columns whose values differ (float columns by the number they spell; a column an UPDATE's after image
    lacks may come back with its before image's value, "not changed", as formats with whole images write it), where
    one event came back; else everything. Empty: the same event."""
    if len(got) != 1 or len(want) != 4 or want[:2] != got[0][:2]:
        return {} if got == [want] else {"want": want, "got": got}
    out = {}
    for side, a, b in zip(("before", "after"), want[2:], got[0][2:]):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in a.keys() | b.keys():
                x, y = a.get(k, "(missing)"), b.get(k, "(missing)")
                unchanged = side == "after" and x == "(missing)" and isinstance(want[2], dict) and \
                    want[0] == "UPDATE" and want[2].get(k, "(missing)") == y
                if x != y and not unchanged and not (k in float_columns and _same_float(x, y)):
                    out[f"{side}.{k}"] = (x, y)
        elif a != b:
            out[side] = (a, b)
    return out


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
    ap.add_argument("--cross", action="store_true", help="also encode each accepted event into every other format")
    ap.add_argument("--cross-crashes-only", action="store_true",
                    help="with --cross: report crashes and undecodable messages, not other values")
    args = ap.parse_args()
    sys.exit(main(args.first, args.last, args.formats or FORMATS, args.per_format, args.jvm, args.cross,
                  not args.cross_crashes_only))
