"""``python -m cdc_jobs.jvm``: build the JVM side for these sources unless it is built (make install, the Docker
image). ``--offline``: Maven uses only its local repository; ``--skip-tests``: no JUnit run; ``--runtime-only``: no JUnit run and no test jars (an image); ``--force``:
build even when the folder exists (it is replaced only if absent, so this is for checking the build)."""

from __future__ import annotations

import argparse
import sys
import time

from cdc_jobs import jvm
from cdc_jobs.jvm import class_archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdc_jobs.jvm", description=__doc__)
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--runtime-only", action="store_true")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="show Maven's output")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.force or not jvm.built():
        try:
            jvm.build(offline=args.offline, run_tests=not args.skip_tests, quiet=not args.verbose,
                      runtime_only=args.runtime_only)
        except jvm.JvmBuildError as exc:
            print(f"cdc-replay: {exc}", file=sys.stderr)
            return 1
    runtime, test = jvm.runtime_jars(), jvm.test_jars()
    shared = ""
    if runtime:  # an optimisation: without it the jobs start a few seconds slower, nothing else
        archive = class_archive.archive_path()
        why_not = class_archive.build(runtime, archive)
        if why_not:
            print(f"cdc-replay: no driver class archive ({archive.name}): {why_not}", file=sys.stderr)
        else:
            shared = f", class archive {archive.stat().st_size / 1e6:.0f} MB"
    mb = lambda jars: sum(j.stat().st_size for j in jars) / 1e6  # noqa: E731
    print(f"{jvm.build_dir()}: {len(runtime)} runtime jars ({mb(runtime):.1f} MB), {len(test)} test jars "
          f"({mb(test):.1f} MB){shared} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
