"""Oracle GoldenGate family: the JSON formatter of GoldenGate for Big Data / Distributed Applications and
Analytics, operation-modelled (``ogg_json``).

One module per format; a variant subclasses its family base and writes only its differences."""
