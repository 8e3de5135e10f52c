"""Debezium family: Kafka Connect JSON with or without the schema envelope (``debezium_json``).

One module per format; a variant subclasses its family base and writes only its differences."""
