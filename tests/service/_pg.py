"""A throwaway PostgreSQL server from the system's binaries (Debian's ``postgresql``
package: ``/usr/lib/postgresql/<version>/bin``), for the tests and ``scripts/pg``.

``initdb`` in a fresh temporary directory, ``pg_ctl start`` listening on 127.0.0.1 at a
free port (and a unix socket in the same directory), trust authentication for the user
``postgres``; :meth:`PgServer.stop` stops it and removes the directory.  ``initdb`` refuses
to run as root: as root, every server command runs as the ``postgres`` system user
(``runuser``), who owns the directory.

Standard library only: ``python3 tests/service/_pg.py`` (what ``scripts/pg`` runs) starts
a server, prints its URL, and stops it on Ctrl-C, SIGTERM or when the command given after
``--`` exits (run with ``DATABASE_URL`` set to the URL).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PgServer", "PgUnavailable", "find_bindir", "start"]

INSTALL_HINT = (
    "no PostgreSQL server binaries (initdb, pg_ctl) found in /usr/lib/postgresql/*/bin or on "
    "PATH: run scripts/test, which installs Debian's `postgresql` package (or `apt-get install "
    "postgresql`)"
)


class PgUnavailable(RuntimeError):
    """There are no PostgreSQL server binaries on this machine."""


def _version(path: Path) -> tuple[int, ...]:
    m = re.search(r"postgresql/(\d+)(?:\.(\d+))?/bin", str(path))
    return tuple(int(g) for g in m.groups() if g) if m else (0,)


def find_bindir() -> Path:
    """The directory of ``initdb`` and ``pg_ctl``: the newest ``/usr/lib/postgresql/*/bin``,
    else the one on ``PATH``; :class:`PgUnavailable` if there is none."""
    found = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists()]
    if found:
        return max(found, key=_version)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    raise PgUnavailable(INSTALL_HINT)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """A running throwaway server: :attr:`url` (``postgresql://postgres@127.0.0.1:PORT/
    postgres``), :meth:`url_of` another database, :meth:`stop`."""

    def __init__(self, *, fast: bool = False) -> None:
        self.bindir = find_bindir()
        self.as_root = os.geteuid() == 0
        self.dir = Path(tempfile.mkdtemp(prefix="deniable-pg-"))
        self.data = self.dir / "data"
        self.port = 0
        self._running = False
        try:
            if self.as_root:
                shutil.chown(self.dir, "postgres", "postgres")
            self._run(
                "initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            self._start(fast)
        except BaseException:
            self.stop()
            raise

    def _cmd(self, tool: str, *args: str) -> list[str]:
        cmd = [str(self.bindir / tool), *args]
        return ["runuser", "-u", "postgres", "--", *cmd] if self.as_root else cmd

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run(
            self._cmd(tool, *args), capture_output=True, text=True, cwd=self.dir, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr or proc.stdout}")

    def _start(self, fast: bool) -> None:
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={self.dir}",
            "-c max_connections=200",
        ]
        if fast:  # throwaway test data: no fsync (a killed client is still tested)
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        for attempt in range(5):
            self.port = _free_port()
            opts = " ".join([f"-p {self.port}", *options])
            try:
                self._run(
                    "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data),
                    "-l", str(self.dir / "server.log"), "-o", opts,
                )  # fmt: skip
                self._running = True
                return
            except RuntimeError:
                if attempt == 4:
                    log = self.dir / "server.log"
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(f"PostgreSQL did not start; its log ends:\n{tail}") from None
                time.sleep(0.2)

    @property
    def url(self) -> str:
        """The URL of the ``postgres`` database."""
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def restart(self) -> None:
        """Stop the server at once (``immediate``: as a crash, its clients' connections
        cut) and start it again on the same port and data."""
        self._run("pg_ctl", "restart", "-D", str(self.data), "-m", "immediate", "-w", "-t", "60",
                  "-l", str(self.dir / "server.log"))  # fmt: skip

    def stop(self) -> None:
        """Stop the server (immediately) and remove its directory; idempotent."""
        if self._running:
            self._running = False
            subprocess.run(
                self._cmd("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w"),
                capture_output=True,
                cwd=self.dir,
                check=False,
            )
        shutil.rmtree(self.dir, ignore_errors=True)


def start(*, fast: bool = False) -> PgServer:
    """Start a throwaway server (see the module docstring)."""
    return PgServer(fast=fast)


def main(argv: list[str]) -> int:
    """``_pg.py [--fast] [-- command ...]``: see the module docstring."""
    fast = "--fast" in argv[: argv.index("--")] if "--" in argv else "--fast" in argv
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    try:
        server = start(fast=fast)
    except PgUnavailable as exc:
        print(f"scripts/pg: {exc}", file=sys.stderr)
        return 1
    try:
        if command:
            env = dict(os.environ, DATABASE_URL=server.url)
            return subprocess.call(command, env=env)
        print(server.url, flush=True)
        print("scripts/pg: running; Ctrl-C stops it and removes its data", file=sys.stderr)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
