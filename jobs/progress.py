"""Progress of a running job: stages and tasks done of total, records read and the read rate.

A daemon thread on the driver polls Spark's own bookkeeping (``SparkContext.statusTracker()`` for jobs, stages
and task counts; the JVM status store for the stages' record counts, which executors report with their
heartbeats and at task end) every ``CDC_REPLAY_PROGRESS_INTERVAL`` seconds. It only reads what Spark keeps anyway, a few
dozen py4j calls per poll, so it costs no measurable time (bench: `progress_overhead`).

Output goes to stderr:
- on a terminal, a live progress bar (rich);
- otherwise (Airflow task logs, CI, a pipe), one plain line every few seconds, e.g.
  ``cdc-replay replay: progress: stages 2/4, tasks 17/40, 1,204,331 records read (182,410/s), 0:00:07``.
  Records read are counted where Spark reads them (source stages; a shuffle's rows are not counted again). A
  command whose Spark jobs read their input more than once shows every pass: the count is Spark's reading
  work, which is what the rate and the remaining time depend on. Only the command's own jobs count: in a
  shared SparkSession (bench, tests) the jobs that ran before the command started are left out.
``CDC_REPLAY_PROGRESS=plain|bar|off`` forces a style (the Airflow operator sets ``plain``).

Nothing here is imported until a job runs; the thread waits for the job to start its SparkContext, so commands
that never start Spark print nothing.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, TextIO

ENV_STYLE = "CDC_REPLAY_PROGRESS"
ENV_INTERVAL = "CDC_REPLAY_PROGRESS_INTERVAL"


@dataclass(frozen=True)
class Snapshot:
    stages_done: int
    stages_total: int
    tasks_done: int
    tasks_total: int
    records: int
    elapsed: float
    rate: float = 0.0  # records per second since the previous snapshot

    def line(self, label: str) -> str:
        return (f"{label}: progress: stages {self.stages_done}/{self.stages_total}, tasks {self.tasks_done}/"
                f"{self.tasks_total}, {self.records:,} records read ({self.rate:,.0f}/s), "
                f"{_clock(self.elapsed)}")


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _java_ints(arrays: Any, java_array: Any) -> list[int]:
    """A Java int[] in one py4j call (``arrays``: the JVM's java.util.Arrays). pyspark's tracker returns
    list(JavaArray), which asks for the length and then each element: two round trips per job, 2,000 per poll
    once a shared session has run the 1,000 jobs Spark retains (0.2 s a poll measured on a loaded CI machine)."""
    text = str(arrays.toString(java_array))
    return [int(x) for x in text[1:-1].split(", ")] if len(text) > 2 else []


class SparkStatus:
    """Reads jobs, stages, task counts and input records of one SparkContext. Stages that finished are read
    once and cached, so a poll costs O(active stages), not O(all stages of the run)."""

    def __init__(self, sc: Any, earlier_jobs: Iterable[int] = ()):
        self.sc = sc
        self.tracker = sc.statusTracker()
        # Jobs the context ran before this command (a shared session: bench, tests, notebooks) are not its work.
        self._earlier_jobs = frozenset(earlier_jobs)
        self._jtracker = self.tracker._jtracker
        self._arrays = sc._jvm.java.util.Arrays
        self._store = sc._jsc.sc().statusStore()
        # stageAttempt(stageId, attemptId, details, taskStatus, withSummaries, quantiles): Scala defaults are
        # not visible through py4j, so the "no details" arguments are built once here.
        self._no_status = sc._jvm.java.util.ArrayList()
        self._no_quantiles = sc._gateway.new_array(sc._jvm.double, 0)
        self._done: dict[int, tuple[int, int, int]] = {}  # stage id -> (tasks, completed tasks, input records)
        self._skipped: set[int] = set()
        self._finished_jobs: dict[int, tuple[int, ...]] = {}

    def _records(self, stage_id: int, attempt: int) -> int:
        """Records a source stage has read. Stages that read a shuffle count nothing (their rows were counted
        where they were read first). A source stage whose rows come from Python (the decoders read their
        file splits themselves) reports as its input only the numbers of the splits (``files._archive``): there
        its output (rows written to a shuffle or to files) is what it read."""
        try:
            data = self._store.stageAttempt(stage_id, attempt, False, self._no_status, False,
                                            self._no_quantiles)._1()
            if int(data.shuffleReadRecords()) > 0:
                return 0
            return max(int(data.inputRecords()), int(data.shuffleWriteRecords()), int(data.outputRecords()))
        except Exception:  # the stage left the store (retention) or the JVM is going away
            return 0

    def snapshot(self, started: float) -> Snapshot:
        stage_ids: set[int] = set()
        finished: set[int] = set()  # stages of finished jobs: done, or skipped (their output was reused)
        # jobs without a group: the command's own
        for job_id in _java_ints(self._arrays, self._jtracker.getJobIdsForGroup(None)):
            if job_id in self._earlier_jobs:
                continue
            if job_id in self._finished_jobs:  # a finished job never changes: no py4j call for it
                stage_ids.update(self._finished_jobs[job_id])
                finished.update(self._finished_jobs[job_id])
                continue
            info = self.tracker.getJobInfo(job_id)
            if info is not None:
                job_stages = tuple(_java_ints(self._arrays, info.stageIds))
                stage_ids.update(job_stages)
                if info.status in ("SUCCEEDED", "FAILED"):
                    finished.update(job_stages)
                    self._finished_jobs[job_id] = job_stages
        active = set(_java_ints(self._arrays, self._jtracker.getActiveStageIds()))
        done_stages = tasks = done_tasks = records = 0
        for sid in stage_ids:
            if sid in self._done:
                n, c, r = self._done[sid]
                done_stages += 1
            elif sid in self._skipped:
                done_stages += 1
                continue
            else:
                info = self.tracker.getStageInfo(sid)
                if info is None or (sid in finished and info.numCompletedTasks == 0 and sid not in active):
                    if sid in finished:  # skipped: its output was reused
                        self._skipped.add(sid)
                        done_stages += 1
                    continue  # otherwise not submitted yet
                n, c = info.numTasks, info.numCompletedTasks
                r = self._records(sid, info.currentAttemptId)
                if sid not in active and (c >= n > 0 or sid in finished):
                    self._done[sid] = (n, c, r)
                    done_stages += 1
            tasks += n
            done_tasks += c
            records += r
        return Snapshot(done_stages, len(stage_ids), done_tasks, tasks, records, time.monotonic() - started)


def _active_context() -> Optional[Any]:
    """The job's SparkContext once it exists; never imports pyspark itself (a job that has not started Spark
    yet, or never will, costs nothing)."""
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        # The context is registered before its JVM side exists: wait until it does.
        return sc if sc is not None and getattr(sc, "_jsc", None) is not None else None
    except Exception:
        return None


def _job_ids(sc: Optional[Any]) -> frozenset[int]:
    """Jobs a context already ran (none when the command is about to start its own context)."""
    if sc is None:
        return frozenset()
    try:
        return frozenset(_java_ints(sc._jvm.java.util.Arrays, sc.statusTracker()._jtracker.getJobIdsForGroup(None)))
    except Exception:  # the context is still starting or already stopping: nothing of it to leave out
        return frozenset()


def style(stream: TextIO) -> str:
    chosen = os.environ.get(ENV_STYLE, "").strip().lower()
    if chosen in ("plain", "bar", "off"):
        return chosen
    return "bar" if getattr(stream, "isatty", lambda: False)() else "plain"


class Reporter:
    """Start with `start()`, stop with `stop()` (prints a final line); or use as a context manager."""

    def __init__(self, label: str, stream: Optional[TextIO] = None, interval: float | None = None,
                 context: Callable[[], Optional[Any]] = _active_context):
        # sys.stderr as it is now, not as it was when this module was imported: a host that swaps it per run (an
        # Airflow task's log, pytest's capture) may have closed that one since.
        stream = stream if stream is not None else sys.stderr
        self.label, self.stream, self.context = label, stream, context
        self.interval = interval if interval is not None else float(os.environ.get(ENV_INTERVAL, "5"))
        self.style = style(stream)
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdc-replay-progress", daemon=True)
        self._bar: Any = None
        self._earlier_jobs: frozenset[int] = frozenset()

    def __enter__(self) -> "Reporter":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        if self.style != "off":
            self._earlier_jobs = _job_ids(self.context())  # before the command starts any job of its own
            self._thread.start()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join(timeout=10)

    # -- the polling thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        started = time.monotonic()
        status: Optional[SparkStatus] = None
        last_records, last_time = 0, started
        wait = min(self.interval, 0.5)  # find the context soon after the job starts it
        try:
            while not self._stop.wait(wait):
                if status is None:
                    sc = self.context()
                    if sc is None:
                        continue
                    try:
                        status, wait = SparkStatus(sc, self._earlier_jobs), self.interval
                    except Exception:  # still starting (or already stopping): try again next tick
                        continue
                    self._open()
                snap = self._poll(status, started, last_records, last_time)
                if snap is not None:
                    last_records, last_time = snap.records, time.monotonic()
            if status is not None:
                self._poll(status, started, last_records, last_time, final=True)
        finally:
            self._close()

    def _poll(self, status: SparkStatus, started: float, last_records: int, last_time: float,
              final: bool = False) -> Optional[Snapshot]:
        try:
            snap = status.snapshot(started)
        except Exception:  # the context stopped under us (job end): nothing more to report
            return None
        dt = max(time.monotonic() - last_time, 1e-6)
        snap = Snapshot(**{**snap.__dict__, "rate": max(snap.records - last_records, 0) / dt})
        self.snapshots.append(snap)
        self._show(snap, final)
        return snap

    def _open(self) -> None:
        if self.style != "bar":
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn(f"[bold]{self.label}[/]"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("tasks · stages {task.fields[stages]} · {task.fields[records]} records "
                                        "({task.fields[rate]}/s)"), TimeElapsedColumn(),
                             console=_console(self.stream), transient=False)
        self._task = self._bar.add_task("tasks", total=None, stages="0/0", records="0", rate="0")
        self._bar.start()

    def _show(self, snap: Snapshot, final: bool) -> None:
        if self._bar is not None:
            self._bar.update(self._task, total=snap.tasks_total or None, completed=snap.tasks_done,
                             stages=f"{snap.stages_done}/{snap.stages_total}", records=f"{snap.records:,}",
                             rate=f"{snap.rate:,.0f}")
        elif not final or not self.snapshots[:-1] or self.snapshots[-2] != snap:
            print(snap.line(self.label), file=self.stream, flush=True)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _console(stream: TextIO) -> Any:
    from rich.console import Console

    return Console(file=stream, stderr=stream is sys.stderr)
