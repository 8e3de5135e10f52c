"""Every format converts to every other without changing a value, up to what each declares it can carry.

The canonical scenario is encoded in format A, decoded, encoded in B, decoded, and each resulting event is compared
with the scenario event it came from, restricted to what A and B declare (key-only or changed-only images, ops
written as others). A failure here is either a codec bug or an undeclared loss.
"""

from __future__ import annotations

import itertools

import pytest

from cdc_codecs import EncodeError, Position, available_formats, get_codec
from cdc_codecs.event import Event
from cdc_codecs.scenario import assert_same_as_scenario as assert_same
from cdc_codecs.scenario import scenario_events

FORMATS = available_formats()
# Pairs that cannot work, and must say so instead of writing something wrong.
IMPOSSIBLE = {
    ("drs-mongo", "oms-avro"): "images are positional",  # a key-only update before image has no OMS Avro form
}


def through(fmt: str, events: list[Event]) -> list[Event]:
    codec = get_codec(fmt)
    out: list[Event] = []
    pending: dict[str, list[Event]] = {}
    n = 0
    for e in events:
        if not codec.capabilities.carries(e.op):
            continue
        for m in codec.encode([e]):
            n += 1
            for d in codec.decode(m.value, Position(f"matrix-{fmt}", -1, n)):
                if d.fragment_key is None:
                    out.append(d)
                    continue
                pending.setdefault(d.fragment_key, []).append(d)
                if len(pending[d.fragment_key]) == d.fragment_total:
                    out.append(codec.assemble(pending.pop(d.fragment_key)))
    assert not pending, f"{fmt}: unassembled fragments {list(pending)}"
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_scenario_survives_each_format(fmt):
    assert_same(through(fmt, scenario_events()), [get_codec(fmt).capabilities])


@pytest.mark.parametrize("a,b", list(itertools.permutations(FORMATS, 2)))
def test_every_format_converts_to_every_other(a, b):
    caps = [get_codec(a).capabilities, get_codec(b).capabilities]
    if (a, b) in IMPOSSIBLE:
        with pytest.raises(EncodeError, match=IMPOSSIBLE[(a, b)]):
            through(b, through(a, scenario_events()))
        return
    assert_same(through(b, through(a, scenario_events())), caps)
