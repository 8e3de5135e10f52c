"""spark-submit application file: `spark-submit .../cdc_jobs/spark_main.py replay --source ...`."""

import sys

from cdc_jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
