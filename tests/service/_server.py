"""A real ``deniable serve`` in a subprocess on 127.0.0.1 (owner: api): for the crash test
and the benchmark.  Its stdout and stderr go to files (a full pipe would block it)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ADMIN = "server-admin-token-0123456789abcdef012345678"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``deniable serve --db URL`` on a free loopback port, started by :meth:`start`."""

    def __init__(
        self,
        db_url: str,
        workdir: Path,
        *,
        rate_limit: int = 10**9,
        admin: str | None = ADMIN,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.db_url = db_url
        self.workdir = workdir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.rate_limit = rate_limit
        self.admin = admin
        self.extra_args = list(extra_args or [])
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def start(self, timeout: float = 60.0) -> None:
        self.runs += 1
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("DENIABLE_") or key == "DATABASE_URL":
                del env[key]
        env.update(
            DENIABLE_RATE_LIMIT_PER_MINUTE=str(self.rate_limit), DENIABLE_DATA=str(self.workdir)
        )
        # loads come from one address: no limit on new sessions unless a test sets one
        env.update(DENIABLE_SESSION_LIMIT_PER_ADDRESS="0", DENIABLE_SESSION_LIMIT_PER_SURVEY="0")
        env.update(self.env)
        if self.admin is not None:
            env["DENIABLE_ADMIN_TOKEN"] = self.admin
        env.update(self.env)
        out = open(self.workdir / f"server{self.runs}.out", "wb")  # noqa: SIM115
        err = open(self.workdir / f"server{self.runs}.err", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deniable.cli", "serve", "--db", self.db_url,
             "--host", "127.0.0.1", "--port", str(self.port), *self.extra_args],
            stdout=out, stderr=err, cwd=self.workdir, env=env,
        )  # fmt: skip
        out.close()
        err.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{self.logs()}")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the server did not answer /healthz in {timeout} s:\n{self.logs()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, no goodbye."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.proc = None

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("server*.err"))
        )

    def stdout(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("server*.out"))
        )
