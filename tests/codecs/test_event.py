"""The canonical event's own behaviour that codecs rely on."""

import dataclasses
from decimal import Decimal

import pytest

from cdc_codecs.event import Column, Event, Op, Position


def _event() -> Event:
    return Event("canal-json", Op.UPDATE, "shop", "orders", Position("a.jsonl", offset=7), before={"id": "1"},
                 after={"id": "1", "qty": None}, columns=(Column("id", "int", 4),), primary_key=("id",),
                 event_time_ms=5, sequence=(Decimal(3),), vendor={"es": 1})


def test_with_gives_what_dataclasses_replace_gives_and_leaves_the_event_as_it_was():
    """``Event.with_`` copies fields instead of running ``__init__`` (speed): the result must be the event
    ``dataclasses.replace`` makes, for a change of any field, and the original must not change."""
    event = _event()
    for f in dataclasses.fields(Event):
        value = {"op": Op.DELETE, "position": Position("b.jsonl")}.get(f.name, ("changed", f.name))
        got = event.with_(**{f.name: value})
        assert got == dataclasses.replace(event, **{f.name: value}), f.name
        assert getattr(got, f.name) == value and type(got) is Event
    assert event == _event()
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.with_(vendor={}).op = Op.INSERT


def test_with_refuses_a_field_the_event_does_not_have():
    with pytest.raises(TypeError, match="optime"):
        _event().with_(optime=1)
