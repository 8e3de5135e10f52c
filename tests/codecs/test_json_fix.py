"""The lossless re-encode fixes (``shared/json_fix.py``): what counts as the same JSON value, and which paths a
received message keeps because its derivation differs or lacks them."""

from cdc_codecs.jsontext import JsonNumber, loads
from cdc_codecs.shared.json_fix import apply_fix, derive_fix, same_json


def test_text_numbers_and_containers_are_the_same_only_as_written():
    assert same_json("7", "7") and not same_json("7", "8")
    assert not same_json("7", JsonNumber("7")) and not same_json(JsonNumber("7"), "7")  # "7" is not 7
    assert same_json(JsonNumber("1.50"), JsonNumber("1.50")) and not same_json(JsonNumber("1.50"), JsonNumber("1.5"))
    assert not same_json("", None) and not same_json(None, "") and same_json(None, None)
    assert not same_json("a", ["a"]) and not same_json({"a": "b"}, "b")
    assert same_json({"a": [JsonNumber("1"), "x"]}, {"a": [JsonNumber("1"), "x"]})
    assert not same_json({"a": [JsonNumber("1")]}, {"a": ["1"]})


def test_fixes_keep_what_differs_and_drop_what_the_message_lacks():
    received, _ = loads(b'{"db":"shop","ts":1700000000,"seq":"1","extra":{"k":[1,2]},"nested":{"a":"x","b":null}}')
    derived = {"db": "shop", "ts": JsonNumber("1700000000"), "seq": JsonNumber("1"), "gone": "y",
               "nested": {"a": "x", "b": None, "c": "z"}}
    paths = [("db",), ("ts",), ("seq",), ("extra",), ("gone",), ("nested", "a"), ("nested", "b"), ("nested", "c"),
             ("db", "deeper")]
    fixes = derive_fix(received, derived, paths)
    assert fixes == [[["seq"], '"1"'], [["extra"], '{"k":[1,2]}'], [["gone"], None], [["nested", "c"], None]]
    assert apply_fix(derived, fixes) == received
