"""spark-submit application file: `spark-submit .../cdc_jobs/spark_main.py replay --source ...`."""

import os
import sys


def _prefer_installed_pyspark() -> None:
    """spark-submit puts $SPARK_HOME/python/lib/pyspark.zip and py4j's zip first on sys.path. With a pip-installed
    PySpark, SPARK_HOME is that package's own directory: the zips hold the same code as the installed packages, but
    zipimport keeps no compiled bytecode, so every job recompiled about 200 modules before doing anything (2 s of
    CPU per spark-submit, i.e. per Airflow Spark task). Those zips are dropped when they belong to the PySpark that
    is installed on sys.path, next to its py4j; a separate Spark installation's zips are kept."""
    for entry in list(sys.path):
        lib = os.path.dirname(entry)
        if not entry.endswith(".zip") or os.path.basename(lib) != "lib":
            continue
        package = os.path.dirname(os.path.dirname(lib))  # <site>/pyspark from <site>/pyspark/python/lib/x.zip
        site = os.path.dirname(package)
        if (os.path.basename(package) == "pyspark" and site in sys.path
                and os.path.isfile(os.path.join(package, "__init__.py"))
                and os.path.isfile(os.path.join(site, "py4j", "__init__.py"))):
            sys.path.remove(entry)


if __name__ == "__main__":
    _prefer_installed_pyspark()
    from cdc_jobs.cli import main

    sys.exit(main(sys.argv[1:]))
