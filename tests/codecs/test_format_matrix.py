"""Every format converts to every other without changing a value, up to what each declares it can carry.

The canonical scenario is encoded in format A, decoded, encoded in B, decoded, and compared with the scenario
projected onto A's and B's declared capabilities. A failure here is either a codec bug or an undeclared loss.
"""

from __future__ import annotations

import itertools

import pytest

from cdc_codecs import Op, available_formats, get_codec
from cdc_codecs.base import Capabilities
from cdc_codecs.scenario import scenario_events

FORMATS = available_formats()


def through(fmt: str, events):
    codec = get_codec(fmt)
    caps = codec.capabilities
    kept = [e for e in events if caps.carries(e.op)]
    messages = []
    for e in kept:
        messages.extend(codec.encode([e]))
    out = []
    for i, m in enumerate(messages):
        from cdc_codecs import Position

        out.extend(codec.decode(m.value, Position(f"matrix-{fmt}", -1, i + 1)))
    if any(e.fragment_key for e in out):
        groups: dict = {}
        for e in out:
            groups.setdefault(e.fragment_key, []).append(e)
        out = [g[0] if g[0].fragment_key is None else codec.assemble(g) for g in groups.values()] \
            if all(e.fragment_key for e in out) else _assemble_mixed(codec, out)
    return out


def _assemble_mixed(codec, events):
    result, pending = [], {}
    for e in events:
        if e.fragment_key is None:
            result.append(e)
            continue
        pending.setdefault(e.fragment_key, []).append(e)
        if len(pending[e.fragment_key]) == e.fragment_total:
            result.append(codec.assemble(pending.pop(e.fragment_key)))
    assert not pending, f"unassembled fragments: {list(pending)}"
    return result


def project(events, caps: list[Capabilities]):
    """What survives formats with these capabilities: (op, table, before, after, ddl)."""
    out = []
    for e in events:
        if not all(c.carries(e.op) for c in caps):
            continue
        op = e.op
        if op is Op.SNAPSHOT and not all(Op.SNAPSHOT in c.ops for c in caps):
            op = Op.INSERT
        before, after = e.before, e.after
        if op is Op.INSERT or op is Op.SNAPSHOT:
            before = None
        if any(c.before_image == "none" for c in caps) and op is Op.UPDATE:
            before = None
        if any(c.after_image == "changed" for c in caps) and op is Op.UPDATE:
            after = {k: v for k, v in after.items() if k not in (before or {}) or before[k] != v}
        if op is Op.DELETE and any(c.delete_image == "key" for c in caps):
            before = {k: v for k, v in (before or {}).items() if k in e.primary_key}
        if op.is_data:
            out.append((op.value, e.qualified_table, before, after))
        elif op in (Op.DDL, Op.TRUNCATE):
            out.append((op.value, e.qualified_table, e.ddl))
        else:
            out.append((op.value,))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_scenario_survives_each_format(fmt):
    caps = [get_codec(fmt).capabilities]
    assert project(through(fmt, scenario_events()), caps) == project(scenario_events(), caps)


@pytest.mark.parametrize("a,b", [p for p in itertools.permutations(FORMATS, 2)])
def test_every_format_converts_to_every_other(a, b):
    caps = [get_codec(a).capabilities, get_codec(b).capabilities]
    got = through(b, through(a, scenario_events()))
    assert project(got, caps) == project(scenario_events(), caps)
