"""``research-fsm`` run inside the test's process: ``research_fsm.cli.main`` with its own
environment, standard input and captured output, answered like ``subprocess.run``.

A command-line test spawning ``python -m research_fsm`` pays the interpreter's start and
the package's imports (about two seconds of processor time on the test machine) for each
command; in-process, only the command's own work. The streams are pipes as a child's
would be (``isatty()`` is false, ``fileno()`` unsupported), the environment is exactly
the one given for the call, and whatever the command sets process-wide (structlog's
configuration, the standard streams' settings) is put back afterwards.

What only a real process shows stays in real processes: Ctrl-C, a closed pipe, signals,
``python -m`` itself, and one smoke test per command family (the tests that spawn say
so in their docstrings).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import structlog

__all__ = ["cli_env", "run_cli", "spawn_cli"]

_KEYS = ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_DOCS", "RESEARCH_FSM_STORE")


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment with ``RESEARCH_FSM_HOME`` at ``home``, warnings-only
    logs, no API keys, documents folder or store URL, then ``extra``."""
    env = {**os.environ, "RESEARCH_FSM_HOME": str(home), "LOG_LEVEL": "WARNING"}
    for name in _KEYS:
        env.pop(name, None)
    env.update(extra)
    return env


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _pipe(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream over bytes, as a pipe reads to Python: UTF-8, strict, not a terminal."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode("utf-8", errors="replace").replace("\r\n", "\n")


def run_cli(
    *args: str, env: Mapping[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``research-fsm ARGS`` in this process with environment ``env`` and ``stdin`` as
    its standard input: its exit status, standard output and standard error."""
    from research_fsm.cli import main

    streams = (sys.stdin, sys.stdout, sys.stderr)
    config = structlog.get_config()
    stdin_pipe, out, err = _pipe(stdin.encode("utf-8")), _pipe(), _pipe()
    try:
        with _environment(env):
            sys.stdin, sys.stdout, sys.stderr = stdin_pipe, out, err
            try:
                code = main(list(args))
            except SystemExit as stop:  # argparse: --help, --version, a usage error
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
                if isinstance(stop.code, str):
                    print(stop.code, file=err)
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        structlog.configure(**config)
    return subprocess.CompletedProcess(
        ["research-fsm", *args], code, stdout=_text(out), stderr=_text(err)
    )


def spawn_cli(
    *args: str, env: Mapping[str, str], stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m research_fsm ARGS`` as a real process (the smoke tests' way)."""
    return subprocess.run(
        [sys.executable, "-m", "research_fsm", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=False,
    )
