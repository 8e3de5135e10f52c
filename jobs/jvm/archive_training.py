"""The class archive's training run (``class_archive.build``): spark-submit'd with ``-XX:ArchiveClassesAtExit``,
it runs what the jobs run (sample, replay, merge, verify of a small archive) so the driver loads the classes a
job's driver loads. ``archive_training.py WORKDIR``."""

import sys
from pathlib import Path

if __name__ == "__main__":
    from cdc_jobs.cli import main

    work = Path(sys.argv[1])
    archive, replay, state = work / "archive", work / "replay", work / "state"
    steps = [["sample", "--format", "canal-json", "--out", str(archive), "--rows", "10", "--changes", "60"],
             ["replay", "--source", str(archive), "--format", "canal-json", "--out", str(replay)],
             ["merge", "--replay", str(replay), "--out", str(state)],
             ["verify", "--replay", str(replay), "--state", str(state), "--report", str(work / "verification.json")]]
    for argv in steps:
        if main(argv) != 0:
            sys.exit(f"archive training: cdc-replay {argv[0]} failed")
