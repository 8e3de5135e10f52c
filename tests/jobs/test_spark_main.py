"""The spark-submit entry point imports the installed PySpark rather than spark-submit's zipped copy of it (no
bytecode cache in a zip: every Spark task recompiled ~200 modules), and keeps a separate Spark installation's."""

import os
import sys

import pyspark

from cdc_jobs import spark_main


def test_the_installed_pyspark_s_own_zips_leave_the_path_a_separate_spark_s_stay(monkeypatch):
    package = os.path.dirname(pyspark.__file__)
    site = os.path.dirname(package)
    own = [os.path.join(package, "python", "lib", z) for z in os.listdir(os.path.join(package, "python", "lib"))]
    other = ["/opt/spark/python/lib/pyspark.zip", "/opt/spark/python/lib/py4j-0.10.9.9-src.zip"]
    assert own, "the installed PySpark ships its zips (what spark-submit puts first)"
    monkeypatch.setattr(sys, "path", [*own, *other, site, "/elsewhere"])
    spark_main._prefer_installed_pyspark()
    assert sys.path == [*other, site, "/elsewhere"]


def test_without_the_installed_package_on_the_path_the_zips_stay(monkeypatch):
    package = os.path.dirname(pyspark.__file__)
    zipped = os.path.join(package, "python", "lib", "pyspark.zip")
    monkeypatch.setattr(sys, "path", [zipped, "/elsewhere"])  # the zip is then the only PySpark there is
    spark_main._prefer_installed_pyspark()
    assert sys.path == [zipped, "/elsewhere"]
