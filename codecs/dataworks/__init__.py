"""DataWorks family: DataWorks real-time sync JSON (``dataworks_json``).

One module per format; a variant subclasses its family base and writes only its differences."""
