"""Aliyun DTS family: the DTS Avro record (``dts_avro``).

One module per format; a variant subclasses its family base and writes only its differences."""
