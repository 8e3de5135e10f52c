"""Maxwell and GoldenGate JSON decode derive the message with placeholder images (the images are the events
themselves, never compared to find what a re-encode must fix): their fixes must be what the fully rendered
message (``build``, every cell written) gives; on the fixtures and fuzzed messages."""

from __future__ import annotations

import pytest

from cdc_codecs import DecodeError, Position, get_codec, jsontext
from cdc_codecs.shared.json_fix import derive_fix
from fuzz import corpus, seed_messages  # beside this file


@pytest.mark.parametrize("fmt", ["maxwell-json", "ogg-json"])
def test_decode_fixes_equal_those_of_the_fully_rendered_message(fmt):
    codec = get_codec(fmt)
    checked = 0
    fuzzed = corpus(fmt, 800, ten_mb_line=False)
    for raw in [m for _, m in seed_messages(fmt)] + [f.raw for f in fuzzed]:
        try:
            events = codec.decode(raw, Position("t"))
        except DecodeError:
            continue
        msg, full = jsontext.loads(raw)[0], codec.build(events)
        assert events[0].vendor.get("fix", []) == derive_fix(msg, full, codec.fix_paths(msg, full, events)), raw
        checked += 1
    assert checked > 200
