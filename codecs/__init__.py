"""cdc_codecs: the canonical change event and one pure-Python codec module per vendor format."""

from .base import Capabilities, Codec, EncodedMessage
from .event import Column, DecodeError, EncodeError, Event, Op, Position
from .registry import FORMATS, UnknownFormatError, available_formats, get_codec

__all__ = [
    "Capabilities", "Codec", "Column", "DecodeError", "EncodeError", "EncodedMessage", "Event", "FORMATS",
    "Op", "Position", "UnknownFormatError", "available_formats", "get_codec",
]
