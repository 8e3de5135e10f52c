"""Maxwell family: Zendesk Maxwell's daemon JSON (``maxwell_json``).

One module per format; a variant subclasses its family base and writes only its differences."""
