"""Shared declared columns (``cdc_codecs.shared.columns``): the decode step converts each distinct columns tuple
once, by identity, so equal declarations must come back as the same objects, and unequal ones never."""

from cdc_codecs.event import Column
from cdc_codecs.jsontext import JsonNumber
from cdc_codecs.shared.columns import column, shared_columns


def test_equal_columns_are_one_object_and_a_number_literal_is_not_its_text():
    assert column("id", "int", 4, True) is column("id", "int", 4, True) == Column("id", "int", 4, True)
    assert column("id", "int", 4, True) is not column("id", "int", 4, False)
    # A name parsed as a JSON number literal equals the same str but is another value for the codecs.
    assert type(column(JsonNumber("1")).name) is JsonNumber and type(column("1").name) is str


def test_a_column_list_is_one_tuple_per_distinct_list():
    a = shared_columns([column("id", "int"), column("v")])
    assert shared_columns((column("id", "int"), column("v"))) is a
    assert shared_columns([column("v"), column("id", "int")]) is not a
    assert a == (Column("id", "int"), Column("v"))
