"""Scripts run each in a fresh process forked from an interpreter that has already
imported research_fsm: the docs' Python blocks and the examples.

Starting ``python`` and importing the assistant costs more than a second of processor
time, which forty such scripts paid again each. A *zygote*, one per test process
started the first time it is needed, imports the package once (from a fresh interpreter:
no thread, no test's state) and forks a child per script; the child takes the script's
working folder, environment and ``sys.argv``, its standard streams are files, and it
runs the script as ``__main__``, as ``python SCRIPT`` would. The result reads like
``subprocess.run``'s. Each script still runs in a process of its own, which nothing ran
in before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["run_script"]

ROOT = Path(__file__).resolve().parents[1]

ZYGOTE = r"""
import json, os, runpy, sys, traceback
import research_fsm, research_fsm.assistant  # noqa: F401  (what every script imports)
requests, replies = sys.stdin.buffer, sys.stdout.buffer
for line in iter(requests.readline, b""):
    job = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            os.chdir(job["cwd"])
            os.environ.clear()
            os.environ.update(job["env"])
            stdin = os.open(os.devnull, os.O_RDONLY)
            out = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for fd, target in ((stdin, 0), (out, 1), (err, 2)):
                os.dup2(fd, target)
                os.close(fd)
            sys.argv = list(job["argv"])
            sys.path[0] = job["path0"]
            try:
                if job["code"] is not None:
                    exec(compile(job["code"], "<string>", "exec"), {"__name__": "__main__"})
                else:
                    runpy.run_path(job["argv"][0], run_name="__main__")
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
                if isinstance(stop.code, str):
                    print(stop.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(code)
    replies.write(json.dumps({"pid": pid}).encode() + b"\n"); replies.flush()
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    replies.flush()
"""

_lock = threading.Lock()
_zygote: subprocess.Popen[bytes] | None = None


def _started() -> subprocess.Popen[bytes]:
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        _zygote = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        atexit.register(_stop, _zygote)
    return _zygote


def _stop(zygote: subprocess.Popen[bytes]) -> None:
    if zygote.poll() is None:
        assert zygote.stdin is not None
        zygote.stdin.close()
        zygote.wait(timeout=30)


def _kill(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def run_script(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    code: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` (a script and its arguments), or ``python -c CODE ARGV[1:]`` when
    ``code`` is given, in ``cwd`` with environment ``env``: a process forked from the
    zygote; its exit status, standard output and standard error (files, read as UTF-8).
    Past ``timeout`` seconds the process group is killed and ``TimeoutExpired`` raised."""
    with _lock, tempfile.TemporaryDirectory() as folder:
        zygote = _started()
        assert zygote.stdin is not None and zygote.stdout is not None
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        job = {
            "argv": list(argv),
            "code": code,
            "cwd": str(cwd),
            "env": dict(env),
            "stdout": str(out),
            "stderr": str(err),
            "path0": "" if code is not None else str(Path(argv[0]).resolve().parent),
        }
        zygote.stdin.write(json.dumps(job).encode() + b"\n")
        zygote.stdin.flush()
        pid = json.loads(zygote.stdout.readline())["pid"]
        timer = threading.Timer(timeout, _kill, (pid,))
        timer.start()
        try:
            status = json.loads(zygote.stdout.readline())["status"]
        finally:
            timer.cancel()
        if status == -signal.SIGKILL:
            raise subprocess.TimeoutExpired(list(argv), timeout)
        read = {
            name: path.read_bytes().decode("utf-8", errors="replace")
            for name, path in (("stdout", out), ("stderr", err))
        }
        return subprocess.CompletedProcess(list(argv), status, read["stdout"], read["stderr"])
