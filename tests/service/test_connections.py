"""Connections that idle or trickle are closed, and there is a cap on open ones
(``deniable.service.core.connections``), against a real ``deniable serve`` over raw sockets.

Every bound is checked as "closed within the timeout plus generous slack" (never as a
speed): the server's timeouts are set to 1 to 2 seconds, a connection must be closed
within 10 seconds more, and the sockets' own timeouts (30 s) only stop a broken test.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _server import Server

HEADER_TIMEOUT = 1.5
BODY_TIMEOUT = 2.0
MAX_CONNECTIONS = 20
SLACK = 10.0  # generous: the machine is shared


def _server(tmp_path: Path, *args: str) -> Server:
    env = {
        "DENIABLE_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "DENIABLE_BODY_TIMEOUT": str(BODY_TIMEOUT),
        "DENIABLE_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    }
    return Server(f"sqlite:///{tmp_path}/c.db", tmp_path, env=env, extra_args=list(args))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = _server(tmp_path_factory.mktemp("connections"))
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.settimeout(30)
    return sock


def _trickle_until_closed(
    sock: socket.socket, chunks: Iterator[bytes], every: float
) -> tuple[float, bytes]:
    """Send a chunk every ``every`` seconds until the server closes (at most 60 s): the
    seconds it took and what the server sent back."""
    start = time.monotonic()
    received = b""
    sock.settimeout(every)
    for chunk in chunks:
        if time.monotonic() - start > 60:
            break
        try:
            sock.sendall(chunk)
        except OSError:  # reset: closed
            break
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not data:
            break
        received += data
    return time.monotonic() - start, received


def _slow_bytes(data: bytes) -> Iterator[bytes]:
    while True:  # the head never ends: a slowloris
        yield from (bytes([b]) for b in data)


def test_slowloris_headers_are_closed_in_time(server: Server) -> None:
    sock = _connect(server)
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 10_000
    took, answer = _trickle_until_closed(sock, _slow_bytes(head), every=0.3)
    sock.close()
    assert took < HEADER_TIMEOUT + SLACK, took
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert httpx.get(f"{server.base}/healthz", timeout=10).status_code == 200


def test_an_idle_connection_is_closed(server: Server) -> None:
    sock = _connect(server)
    start = time.monotonic()
    assert sock.recv(100) == b""  # nothing sent: closed without an answer
    assert time.monotonic() - start < HEADER_TIMEOUT + SLACK
    sock.close()


def test_a_kept_alive_connection_gets_the_header_deadline_again(server: Server) -> None:
    sock = _connect(server)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    # the next request trickles: each byte would restart uvicorn's keep-alive timer
    took, _ = _trickle_until_closed(sock, _slow_bytes(b"GET /healthz HTTP/1.1\r\nX-A: "), 0.3)
    sock.close()
    assert took < HEADER_TIMEOUT + SLACK, took


def test_a_trickled_body_is_closed_in_time_and_logged_as_408(server: Server) -> None:
    sock = _connect(server)
    sock.sendall(
        b"POST /api/surveys/workplace/sessions HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    )
    took, answer = _trickle_until_closed(sock, iter(lambda: b" ", None), every=0.3)
    sock.close()
    assert took < BODY_TIMEOUT + SLACK, took
    assert answer.startswith(b"HTTP/1.1 408"), answer
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert "body" in json.loads(body)["error"]
    assert httpx.get(f"{server.base}/healthz", timeout=10).status_code == 200
    deadline = time.monotonic() + 10
    while '"status":408' not in server.logs() and time.monotonic() < deadline:
        time.sleep(0.1)
    requests = [json.loads(x) for x in server.logs().splitlines() if '"event":"request"' in x]
    assert any(r["status"] == 408 and r["method"] == "POST" for r in requests)
    assert not any(r["status"] >= 500 for r in requests), requests


def test_too_large_a_head_is_431(server: Server) -> None:
    sock = _connect(server)
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    with contextlib.suppress(OSError):
        sock.sendall(head)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except OSError:
        pass
    sock.close()
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]


def test_a_client_gone_mid_body_is_not_logged_as_a_server_error(server: Server) -> None:
    sock = _connect(server)
    sock.sendall(
        b"POST /api/surveys/workplace/reports/batch HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
        b'{"reports": [{"token": "'
    )
    time.sleep(0.3)
    sock.close()
    deadline = time.monotonic() + 10
    while '"status":499' not in server.logs() and time.monotonic() < deadline:
        time.sleep(0.1)
    requests = [json.loads(x) for x in server.logs().splitlines() if '"event":"request"' in x]
    assert any(r["status"] == 499 for r in requests), requests
    assert not any(r["status"] >= 500 for r in requests), requests
    assert '"event":"error"' not in server.logs()


def _hold(server: Server, n: int) -> list[socket.socket]:
    """``n`` connections that each sent part of a head (so they stay open until the
    header timeout)."""
    held = []
    for _ in range(n):
        sock = _connect(server)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        held.append(sock)
    return held


def _answer(sock: socket.socket) -> bytes:
    """What the server sends before it closes (b"" if it reset or closed silently)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except OSError:
        pass
    return out


def test_connections_past_the_cap_are_refused_and_the_server_recovers(server: Server) -> None:
    held = _hold(server, MAX_CONNECTIONS)
    time.sleep(0.2)  # all accepted
    extra = []
    for _ in range(5):
        sock = _connect(server)
        with contextlib.suppress(OSError):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        extra.append(sock)
    for sock in extra:
        answer = _answer(sock)
        sock.close()
        # refused: a 503 (with Retry-After), or a connection closed before any answer
        assert answer == b"" or answer.startswith(b"HTTP/1.1 503"), answer[:200]
        if answer:
            assert b"retry-after: 1" in answer.lower()
            assert b"too many connections" in answer
    # the held connections are closed by the header deadline; then the server answers
    for sock in held:
        sock.settimeout(HEADER_TIMEOUT + SLACK)
        _answer(sock)
        sock.close()
    assert httpx.get(f"{server.base}/healthz", timeout=10).status_code == 200
    assert '"closed":"max_connections"' in server.logs()


def test_the_bounds_hold_with_several_workers(tmp_path: Path) -> None:
    server = _server(tmp_path, "--workers", "2")
    server.start()
    try:
        sock = _connect(server)
        took, _ = _trickle_until_closed(sock, _slow_bytes(b"GET /healthz HTTP/1.1\r\nX-A: "), 0.3)
        sock.close()
        assert took < HEADER_TIMEOUT + SLACK, took
        sock = _connect(server)
        sock.sendall(
            b"POST /api/surveys/workplace/sessions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        took, answer = _trickle_until_closed(sock, iter(lambda: b" ", None), every=0.3)
        sock.close()
        assert took < BODY_TIMEOUT + SLACK, took
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert httpx.get(f"{server.base}/healthz", timeout=10).status_code == 200
    finally:
        server.stop()


def test_the_open_files_limit_is_raised_or_the_cap_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    from deniable.exceptions import ParameterError
    from deniable.service.core.connections import SPARE_DESCRIPTORS, ensure_descriptors

    calls: list[tuple[int, int]] = []
    limits = [(256, 4096)]
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits[0])
    monkeypatch.setattr(resource, "setrlimit", lambda _, value: calls.append(value))
    ensure_descriptors(1000)  # the soft limit is raised, within the hard one
    assert calls == [(1000 + SPARE_DESCRIPTORS, 4096)]
    ensure_descriptors(100)  # enough already
    assert len(calls) == 1
    limits[0] = (256, 512)
    with pytest.raises(ParameterError, match=r"`max_connections` .* at most 448 .* got 1000"):
        ensure_descriptors(1000)
