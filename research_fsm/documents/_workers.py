"""Text extraction in worker processes, one file at a time each.

Each worker is a fresh interpreter (``python -m research_fsm.documents._work``), fed
files to read (or their bytes) and answering their text and passages as length-prefixed
pickles over its pipes: nothing is forked from a process that has threads (the event
loop's), and the caller's ``__main__`` is never run again in a child (which
``multiprocessing``'s spawn does). A worker that dies or runs past ``timeout`` (seconds
of processor time on one file) is replaced, and the file it was on is skipped with the
reason; the other files go on. A new worker first says it is ready (its imports done),
within ``STARTUP`` seconds: the time limit is the file's alone."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from ._work import READY, Job, Work, read_frame, write_frame

__all__ = ["COMMAND", "STARTUP", "TIMEOUT", "Workers"]

TIMEOUT: Final = 120.0
"""Seconds of processor time a worker may spend on one file before it is stopped and
the file skipped (where the processor time cannot be read, seconds in all)."""
WALL_FACTOR: Final = 10
"""A worker on one file is stopped after ``WALL_FACTOR`` times the time limit in all,
however little processor time it used."""
STARTUP: Final = 60.0
"""Seconds a new worker may take to start (import its modules) and say it is ready."""
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])
COMMAND: Final = (sys.executable, "-m", "research_fsm.documents._work")
"""The worker process's command line."""


def _start(command: Sequence[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


class Workers:
    """``count`` worker processes taking jobs from a bounded queue; results (``(key,
    Work)``) come back in ``results`` in the order they finish. One watchdog thread
    stops a worker that has been on one file for ``timeout`` seconds. ``command``
    starts a worker (a test double speaking the same protocol, in tests)."""

    def __init__(
        self, count: int, *, timeout: float = TIMEOUT, command: Sequence[str] = COMMAND
    ) -> None:
        self.jobs: queue.Queue[tuple[object, Job] | None] = queue.Queue(maxsize=count * 4)
        self.results: queue.Queue[tuple[object, Work]] = queue.Queue()
        self.timeout = timeout
        self.command = tuple(command)
        self._busy: dict[int, tuple[float, float | None, subprocess.Popen[bytes]]] = {}
        """Each worker thread's process, when it took its file (``time.monotonic``) and
        the processor seconds it had used then (``None``: not measured: it is starting)."""
        self._stopped: set[int] = set()
        """Processes (by pid) the watchdog stopped."""
        self._closed = threading.Event()
        self.threads = [
            threading.Thread(target=self._serve, args=(n,), name=f"documents-worker-{n}")
            for n in range(count)
        ]
        for thread in self.threads:
            thread.daemon = True
            thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="documents-watchdog")
        self._watchdog.daemon = True
        self._watchdog.start()

    def submit(self, job: tuple[object, Job], drain: Callable[[], None]) -> None:
        """Queue ``(key, job)``, calling ``drain`` while the queue is full."""
        while True:
            try:
                self.jobs.put(job, timeout=0.05)
                return
            except queue.Full:
                drain()

    def close(self) -> None:
        """No more jobs: the workers stop once the queued ones are done."""
        for _ in self.threads:
            self.jobs.put(None)

    def join(self) -> None:
        """Wait for the workers (and the watchdog) to stop."""
        for thread in self.threads:
            thread.join()
        self._closed.set()
        self._watchdog.join()

    def _watch(self) -> None:
        every = min(0.5, self.timeout / 4)
        while not self._closed.wait(every):
            now = time.monotonic()
            for since, cpu, process in list(self._busy.values()):
                if self._overdue(now - since, cpu, process) and process.poll() is None:
                    self._stopped.add(process.pid)
                    process.kill()

    def _overdue(self, elapsed: float, cpu: float | None, process: subprocess.Popen[bytes]) -> bool:
        """Whether a worker has had its time: ``timeout`` seconds of processor time on
        its file (so a busy machine does not cut a large file short), or ``WALL_FACTOR``
        times that in all (one that waits on nothing); a starting worker ``STARTUP``."""
        if cpu is None:
            return elapsed > max(STARTUP, self.timeout)
        if elapsed > self.timeout * WALL_FACTOR:
            return True
        if elapsed <= self.timeout:
            return False
        used = _cpu_seconds(process.pid)
        return used is None or used - cpu > self.timeout

    def _serve(self, number: int) -> None:
        process: subprocess.Popen[bytes] | None = None
        try:
            while (job := self.jobs.get()) is not None:
                if process is None or process.poll() is not None:
                    process = self._started(number)
                    if process is None:
                        self.results.put((job[0], ("", "extractor crashed (it could not start)")))
                        continue
                self._busy[number] = (time.monotonic(), _cpu_seconds(process.pid) or 0.0, process)
                try:
                    work, alive = self._ask(process, job)
                finally:
                    del self._busy[number]
                if process.pid in self._stopped:  # stopped just as it answered
                    alive = False
                if not alive:
                    process.kill()
                    process.wait()
                    process = None
                self.results.put((job[0], work))
        finally:
            if process is not None:
                _stop(process)

    def _started(self, number: int) -> subprocess.Popen[bytes] | None:
        """A new worker process that said it is ready, or ``None``."""
        process = _start(self.command)
        assert process.stdout is not None
        self._busy[number] = (time.monotonic(), None, process)
        try:
            ready = read_frame(process.stdout) == READY
        except Exception:
            ready = False
        finally:
            del self._busy[number]
        if not ready or process.pid in self._stopped:
            process.kill()
            process.wait()
            return None
        return process

    def _ask(self, process: subprocess.Popen[bytes], job: tuple[object, Job]) -> tuple[Work, bool]:
        """The worker's answer for ``job`` and whether the worker can go on."""
        assert process.stdin is not None and process.stdout is not None
        try:
            write_frame(process.stdin, job[1])
            answer: Work = read_frame(process.stdout)
            return answer, True
        except Exception as exc:  # no answer, or one that cannot be read: a new worker
            if process.pid in self._stopped:
                return ("", f"extraction took longer than {self.timeout:g} s"), False
            if isinstance(exc, (OSError, EOFError)):
                return ("", "extractor crashed (its process died)"), False
            return (
                "",
                f"extractor failed (its answer was unreadable: {type(exc).__name__})",
            ), False


def _cpu_seconds(pid: int) -> float | None:
    """The processor seconds process ``pid`` has used (Linux's ``/proc``), or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return None


_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
