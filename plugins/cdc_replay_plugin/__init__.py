"""Airflow plugin: verification report pages and links (filled in by the verify work)."""
