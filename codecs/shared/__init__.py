"""Machinery the vendor codecs share, in one place (issue 12): no codec imports another vendor's module for it.

* ``json_fix``   lossless re-encode of JSON formats: derive what the encoder would write, keep only differences
* ``value_text`` canonical text <-> JSON scalars, numbers (float32/double spellings, integer bounds), base64
* ``time_text``  canonical date/time/epoch/zoned text <-> their parts
* ``avro``       schemaless Avro I/O and the JSON-able form of Avro datums kept in ``Event.vendor``
"""
