"""A throwaway PostgreSQL server for the tests: ``initdb`` + ``postgres`` in a temp dir.

The server listens on a unix socket in its own temporary directory only (no TCP
port), trusts local connections, and is stopped and deleted by ``stop()``. It
needs the PostgreSQL server binaries (Debian: ``apt-get install postgresql``);
they are looked up on ``PATH``, then in ``/usr/lib/postgresql/<version>/bin``.
``initdb`` refuses to run as root, so as root the server runs as the ``postgres``
user (created by the Debian package).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "ServerUnavailable", "find_bindir"]


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``, or ``None`` when not installed."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    return None


class PostgresServer:
    """One PostgreSQL server in a temporary directory; ``dsn`` reaches it as superuser."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.fsync = fsync
        bindir = find_bindir()
        if bindir is None:
            raise ServerUnavailable(
                "no PostgreSQL server binaries (initdb, postgres) found: "
                "install Debian's 'postgresql' package (apt-get install postgresql)"
            )
        self.bindir = bindir
        self._user = pwd.getpwuid(os.getuid()).pw_name
        self._as: list[str] = []
        if os.getuid() == 0:  # initdb refuses root
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise ServerUnavailable("running as root and there is no 'postgres' user") from None
            self._user = "postgres"
            self._as = ["runuser", "-u", "postgres", "--"]
        self.root = Path(tempfile.mkdtemp(prefix="research-fsm-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def dsn(self) -> str:
        """A libpq connection string for the server's ``postgres`` database."""
        return f"host={self.socket_dir} port=5432 user={self._user} dbname=postgres"

    @property
    def url(self) -> str:
        """The same database as a ``postgresql://`` URL (what ``open_store`` takes)."""
        return f"postgresql://{self._user}@/postgres?host={self.socket_dir}&port=5432"

    def start(self, timeout: float = 60.0) -> None:
        """Create the cluster and start the server; raises ``ServerUnavailable`` on failure."""
        self.socket_dir.mkdir()
        if self._as:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.socket_dir, "postgres")
        init = subprocess.run(
            [
                *self._as,
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "--auth=trust",
                "-U",
                self._user,
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if init.returncode != 0:
            raise ServerUnavailable(f"initdb failed: {init.stderr.decode(errors='replace')[-500:]}")
        self._launch(timeout)

    def _launch(self, timeout: float) -> None:
        """Start ``postgres`` on the cluster (made by ``start``) and wait until it is ready."""
        settings = {
            "listen_addresses": "",
            "unix_socket_directories": str(self.socket_dir),
            "port": "5432",
            "max_connections": "400",
            # the tests kill clients, never the server; benchmarks ask for fsync
            "fsync": "on" if self.fsync else "off",
            "full_page_writes": "on" if self.fsync else "off",
            "shared_buffers": "32MB",
        }
        options = [item for key, value in settings.items() for item in ("-c", f"{key}={value}")]
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 - kept for the server's life
        self._proc = subprocess.Popen(
            [*self._as, str(self.bindir / "postgres"), "-D", str(self.data), *options],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        ready = [str(self.bindir / "pg_isready"), "-q", "-h", str(self.socket_dir), "-p", "5432"]
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                log = (self.root / "server.log").read_text(errors="replace")[-800:]
                raise ServerUnavailable(f"postgres exited at start: {log}")
            if subprocess.run(ready, check=False).returncode == 0:
                return
            time.sleep(0.05)
        self.stop()
        raise ServerUnavailable(f"postgres did not accept connections within {timeout:.0f}s")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        self.halt()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)

    def halt(self) -> None:
        """Stop the server (fast shutdown: every connection ends) and keep its cluster,
        for ``restart`` on the same socket and port."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            # SIGINT to the postmaster itself (runuser does not pass it on): fast shutdown
            try:
                pid = int((self.data / "postmaster.pid").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pid = proc.pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def restart(self, timeout: float = 60.0) -> None:
        """Start the server ``halt`` stopped again, on the same socket and port."""
        assert self._proc is None, "the server is running"
        self._launch(timeout)
