"""Canal family: Alibaba Canal's flat JSON (``canal_json``, also what OMS and CloudCanal write in their Canal
JSON mode) and CloudCanal's own JSON (``cloudcanal_json``).

CloudCanal JSON is not a variant of Canal JSON: its keys differ (``action``/``data``/``before`` with full before
images, ``dbValType``/``jdbcType``, ``execTs``), so it is its own ``Codec`` beside Canal's, sharing with it only
what ``Codec`` gives every row-packing JSON format (the decode/encode recipe, rows of one source message packed
back into one message). A real Canal variant would subclass ``CanalJsonCodec`` and write only its differences."""
