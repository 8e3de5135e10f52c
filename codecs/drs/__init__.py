"""Huawei DRS family: DRS JSON (``drs_json``), its variants ``drs_json_c`` and ``drs_gaussdb``, and MongoDB's ``drs_mongo``.

One module per format; a variant subclasses its family base and writes only its differences."""
