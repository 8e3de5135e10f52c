"""Reading and writing: archive files, Kafka (plan, source, sink), reference databases, reports, the atomic publish."""
