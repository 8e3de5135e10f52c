"""``shared.arrow_json.escaped`` and ``strings``: each value of a string array as the JSON string literal
``orjson.dumps`` writes (its text between the quotes, and the whole literal), NULL as NULL and ``null``. The
escaping finds the strings to escape by scanning the array's bytes, so it is checked on the layouts where bytes
and values part ways: slices (offsets that do not start at 0), NULLs whose slots hold bytes, empty strings next to
escaped ones, 64-bit offsets, and every control character, alone and mixed."""

from __future__ import annotations

import random

import orjson
import pyarrow as pa
import pytest

from cdc_codecs.shared.arrow_json import escaped, strings

SPECIALS = [chr(c) for c in range(0x20)] + ['"', "\\", "\x7f", "\u2028", "\u00e9", "\u4e2d", "\U0001f600", "a", " "]


def _expected(values: list) -> list:
    return [None if v is None else orjson.dumps(v).decode() for v in values]


def _literals(array: pa.Array) -> list:
    """``strings`` of a ``string`` array, and the same from ``escaped`` of the array as given (any string type)."""
    inner = [None if v is None else f'"{v}"' for v in escaped(array).to_pylist()]
    if array.type == pa.string():
        assert [None if v == "null" else v for v in strings(array).to_pylist()] == inner
    return inner


def _corpus(seed: int, n: int = 400) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.1:
            out.append(None)
        elif roll < 0.2:
            out.append("")
        elif roll < 0.6:
            out.append(f"plain value {rng.randrange(10**6)}")
        else:
            out.append("".join(rng.choice(SPECIALS) for _ in range(rng.randrange(1, 6))))
    return out


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("seed", range(5))
def test_every_value_as_orjson_writes_it(seed, type_):
    values = _corpus(seed)
    array = pa.array(values, type_)
    assert _literals(array) == _expected(values)
    for start, length in ((1, 50), (37, 200), (len(values) - 3, 3), (5, 0)):
        assert _literals(array.slice(start, length)) == _expected(values[start:start + length]), (start, length)


@pytest.mark.parametrize("escape_in_null_slot", ["\n", '"', "\\"])
def test_a_null_whose_slot_holds_bytes_stays_null(escape_in_null_slot):
    """Arrow lets a NULL's slot span bytes (kernels leave them behind): the NULL stays NULL, and its neighbours
    are escaped as they would be without those bytes."""
    texts = ["ok", f"hidden{escape_in_null_slot}", "", "tab\there", "plain"]
    data = "".join(texts).encode()
    offsets, at = [0], 0
    for t in texts:
        at += len(t.encode())
        offsets.append(at)
    validity = pa.array([True, False, True, True, True]).buffers()[1]
    array = pa.Array.from_buffers(pa.string(), len(texts), [validity, pa.py_buffer(
        pa.array(offsets, pa.int32()).buffers()[1]), pa.py_buffer(data)], null_count=1)
    expected = ["ok", None, "", "tab\there", "plain"]
    assert _literals(array) == _expected(expected)
    assert _literals(array.slice(1, 1)) == [None]


def test_only_clean_strings_come_back_unchanged():
    values = ["a", "b", "", "\u00e9t\u00e9"]
    assert _literals(pa.array(values)) == _expected(values)
    assert _literals(pa.array([None, None], pa.string())) == [None, None]
    assert _literals(pa.array([], pa.string())) == []
