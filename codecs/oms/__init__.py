"""OceanBase OMS family: the JSON base format (``oms_default``) and its variants, plus OMS Avro.

One module per format; a variant subclasses its family base and writes only its differences."""
