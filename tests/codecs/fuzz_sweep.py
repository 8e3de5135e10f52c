"""The codec fuzz tests (``test_fuzz.py``: the byte/JSON corpus and the structure-aware mutations) over many seeds,
outside CI: ``python tests/codecs/fuzz_sweep.py FIRST LAST [FORMAT ...]`` (default: every format). Prints each
failing input (seed, format, corpus, label, reason), one line per seed and the inputs per format; a failing seed is a
defect found, kept as a fixed case once fixed (``test_fuzz.FIXED_STRUCT_SEEDS``, ``FOUND_BY_SWEEP``). About 4 s per
seed on 2 idle cores (40-60 s on a loaded machine)."""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402
from test_fuzz import FORMATS, PER_FORMAT, STRUCT_PER_FORMAT, check_input  # noqa: E402


def main(first: int, last: int, formats: list[str]) -> int:
    failed = []
    per_format: collections.Counter = collections.Counter()
    for seed in range(first, last + 1):
        started, n = time.time(), 0
        for fmt in formats:
            for corpus, inputs in (("corpus", fuzz.corpus(fmt, PER_FORMAT, seed=seed, ten_mb_line=False)),
                                   ("structural", fuzz.structural(fmt, STRUCT_PER_FORMAT, seed=seed))):
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


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:] or FORMATS))
