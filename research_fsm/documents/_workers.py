"""Text extraction in worker processes, one file at a time each.

Each worker is a fresh interpreter (``python -m research_fsm.documents._work``), fed
files to read (or their bytes) and answering their text and passages as length-prefixed
pickles over its pipes: nothing is forked from a process that has threads (the event loop's), and the
caller's ``__main__`` is never run again in a child (which ``multiprocessing``'s spawn
does). A worker that dies or runs past ``timeout`` is replaced, and the file it was on
is skipped with the reason; the other files go on."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from ._work import Job, Work, read_frame, write_frame

__all__ = ["TIMEOUT", "Workers"]

TIMEOUT: Final = 120.0
"""Seconds a worker may spend on one file before it is stopped and the file skipped."""
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])


def _start() -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "research_fsm.documents._work"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


class Workers:
    """``count`` worker processes taking jobs from a bounded queue; results (``(key,
    Work)``) come back in ``results`` in the order they finish."""

    def __init__(self, count: int, *, timeout: float = TIMEOUT) -> None:
        self.jobs: queue.Queue[tuple[object, Job] | None] = queue.Queue(maxsize=count * 4)
        self.results: queue.Queue[tuple[object, Work]] = queue.Queue()
        self.timeout = timeout
        self.threads = [
            threading.Thread(target=self._serve, name=f"documents-worker-{n}", daemon=True)
            for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

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
        """Wait for the workers to stop."""
        for thread in self.threads:
            thread.join()

    def _serve(self) -> None:
        process: subprocess.Popen[bytes] | None = None
        try:
            while (job := self.jobs.get()) is not None:
                if process is None or process.poll() is not None:
                    process = _start()
                work, alive = self._ask(process, job)
                if not alive:
                    process.kill()
                    process.wait()
                    process = None
                self.results.put((job[0], work))
        finally:
            if process is not None:
                _stop(process)

    def _ask(self, process: subprocess.Popen[bytes], job: tuple[object, Job]) -> tuple[Work, bool]:
        """The worker's answer for ``job`` and whether the worker can go on."""
        assert process.stdin is not None and process.stdout is not None
        timer = threading.Timer(self.timeout, process.kill)
        timer.start()
        try:
            write_frame(process.stdin, job[1])
            answer: Work = read_frame(process.stdout)
            return answer, True
        except Exception as exc:  # no answer, or one that cannot be read: a new worker
            if not timer.is_alive():
                return ("", f"extraction took longer than {self.timeout:.0f} s"), False
            if isinstance(exc, (OSError, EOFError)):
                return ("", "extractor crashed (its process died)"), False
            return (
                "",
                f"extractor failed (its answer was unreadable: {type(exc).__name__})",
            ), False
        finally:
            timer.cancel()


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
