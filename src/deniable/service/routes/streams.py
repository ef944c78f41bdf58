"""Telemetry streams: the analyst stores a stream's spec and issues device tokens; devices
read the spec and post batches of randomized reports, which are charged to the device's
budget window and appended to the stream's Parquet partitions (docs/service.md,
"Telemetry streams").

=====================================  =================================================
``PUT /api/streams/{id}`` (admin)      store a stream spec (201; 200 if the same spec is
                                       stored; 409 if another one is, or if the
                                       partitions hold another oracle)
``GET /api/streams`` (admin)           the stored streams, with their device counts
``POST /api/streams/{id}/devices``     issue device tokens (admin; ``{"count": n}``)
``GET /streams/{id}``                  the spec devices read (``makeOracle(spec.oracle)``)
``POST /streams/{id}/batches``         a device's batch (binary or JSON), with its token
=====================================  =================================================

The order of a batch: the token is checked (401), the body decoded and every report
checked against the stream's oracle (415, 422: nothing charged, nothing stored; RAPPOR's
reports: the shape and every cohort; CMS's: every row and padding bit; HCMS's: the range),
the device's window charged atomically, each report
at :func:`deniable.oracles.report_epsilon` of the oracle (429 naming the window: nothing
stored), then the reports appended durably to the partition of the UTC day the server
received them; only then is the batch acknowledged (201).  A crash or a failed write
after the charge leaves the device charged for reports that were not stored: the safe
side (the device retries within its budget; it never gets past it).
"""

from __future__ import annotations

import math
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response, Security
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from starlette.concurrency import run_in_threadpool

from deniable.accounting import BudgetWindow, WindowedLedger, charge_cost
from deniable.common import load_json
from deniable.exceptions import DataError, DeniableError, PrivacyError
from deniable.service.analysis.streams import StreamSpec, stream_spec_from
from deniable.service.core.security import ApiError, bearer_token, token_key
from deniable.service.routes.deps import ADMIN
from deniable.service.storage import SqlStreamStore, SqlWindowStore

__all__ = ["MAX_DEVICES_PER_CALL", "StreamState", "router", "store_spec"]

router = APIRouter()
#: Device tokens one ``POST /api/streams/{id}/devices`` may issue.
MAX_DEVICES_PER_CALL = 1000
_BINARY = "application/octet-stream"
_JSON = "application/json"
_device_bearer = HTTPBearer(
    scheme_name="deviceToken",
    description="A device token of the stream (POST /api/streams/{stream_id}/devices).",
    auto_error=False,
)
#: A route parameter that declares the device token to OpenAPI (unused value).
DeviceCredentials = Annotated[Any, Security(_device_bearer)]
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such stream."}}
_ANY_JSON: dict[str, Any] = {"schema": {"type": "object"}}
_SPEC_BODY = {"requestBody": {"required": True, "content": {_JSON: _ANY_JSON}}}
_DEVICES_BODY = {"requestBody": {"required": False, "content": {_JSON: _ANY_JSON}}}
_BATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            _BINARY: {"schema": {"type": "string", "format": "binary"}},
            _JSON: _ANY_JSON,
        },
    }
}


class StreamState:
    """What the stream routes use (``app.state.streams``): the stream and window stores on
    the service's database, the partitions' root, the clock, and the parsed specs."""

    def __init__(self, engine: Any, root: Path, clock: Any = None) -> None:
        self.specs = SqlStreamStore(engine)
        self.windows = SqlWindowStore(engine)
        self.root = Path(root)
        self.clock = clock or (lambda: datetime.now(UTC))
        self._parsed: dict[str, StreamSpec] = {}

    def spec(self, stream: str) -> StreamSpec | None:
        """The stored spec of ``stream`` (parsed once per text: a stored spec never
        changes), or None."""
        text = self.specs.spec(stream)
        if text is None:
            return None
        got = self._parsed.get(text)
        if got is None:
            got = stream_spec_from(load_json(text, source="a stored stream spec"))
            self._parsed[text] = got
        return got


def _state(request: Request) -> StreamState:
    state: StreamState = request.app.state.streams
    return state


def _differences(old: StreamSpec, new: StreamSpec) -> str:
    parts = []
    if old.oracle.key != new.oracle.key:
        parts.append(f"oracle {old.oracle.key} (given {new.oracle.key})")
    if old.window != new.window:
        parts.append(f"window {old.window.describe()} (given {new.window.describe()})")
    if old.period != new.period:
        parts.append(f"period {old.period!r} (given {new.period!r})")
    if old.candidates != new.candidates:
        parts.append("candidates (the strings each day is decoded against)")
    if old.settings != new.settings:  # answer side only, still never changed silently
        was = "none" if old.settings is None else old.settings.describe()
        now = "none" if new.settings is None else new.settings.describe()
        parts.append(f"answers {was} (given {now})")
    return "; ".join(parts)


def store_spec(state: StreamState, spec: StreamSpec) -> bool:
    """Store ``spec`` unless the same one is; True if stored now.  Refused with
    :class:`~deniable.exceptions.DataError` when the stream is stored with another spec, or
    when its partitions hold reports of another oracle (``_stream.json``): a stream's spec
    never changes under its data."""
    from deniable.distributed import STREAM_SPEC_FILE, stream_oracle

    change = "a stream's spec cannot change under its data; use a new stream id"
    if (state.root / f"stream={spec.id}" / STREAM_SPEC_FILE).is_file():
        held = stream_oracle(state.root, spec.id)
        if held.key != spec.oracle.key:
            raise DataError(
                f"stream {spec.id!r}: its partitions hold reports of the oracle {held.key}, "
                f"not {spec.oracle.key}; {change}."
            )
    created, stored = state.specs.put_spec(spec.id, spec.canonical())
    if stored != spec.canonical():
        old = stream_spec_from(load_json(stored, source="a stored stream spec"))
        raise DataError(
            f"stream {spec.id!r} is stored with another spec: {_differences(old, spec)}; {change}."
        )
    return created


def _conflict(exc: DeniableError) -> ApiError:
    return ApiError(409, str(exc))


@router.put(
    "/api/streams/{stream_id}",
    dependencies=ADMIN,
    summary="Store a telemetry stream's spec",
    status_code=201,
    responses={
        200: {"description": "the same spec was stored"},
        409: {"description": "another spec"},
    },
)
async def put_stream(request: Request, stream_id: str) -> Response:
    """Store the stream spec of the JSON body (``id``, ``oracle``, ``period``,
    ``window``; docs/service.md); the body's ``id`` must be the path's."""
    raw = await request.body()
    try:
        data = load_json(raw, source="body")
        spec = stream_spec_from(data, source="body")
    except DeniableError as exc:
        raise ApiError(422, str(exc)) from None
    if spec.id != stream_id:
        raise ApiError(422, f"body: field `id` must be the path's {stream_id!r}, got {spec.id!r}")
    try:
        created = await run_in_threadpool(store_spec, _state(request), spec)
    except DataError as exc:
        raise _conflict(exc) from None
    return JSONResponse(spec.to_dict(), status_code=201 if created else 200)


@router.get("/api/streams", dependencies=ADMIN, summary="The telemetry streams")
def list_streams(request: Request) -> dict[str, Any]:
    """Every stored stream: its spec and how many devices it has."""
    state = _state(request)
    out = []
    for sid in state.specs.streams():
        spec = state.spec(sid)
        if spec is not None:
            out.append({**spec.to_dict(), "devices": state.specs.devices(sid)})
    return {"streams": out}


def _found(state: StreamState, stream_id: str) -> StreamSpec:
    spec = state.spec(stream_id)
    if spec is None:
        raise ApiError(404, f"no stream {stream_id!r} (store its spec: PUT /api/streams/{{id}})")
    return spec


@router.post(
    "/api/streams/{stream_id}/devices",
    dependencies=ADMIN,
    summary="Issue device tokens for a stream",
    status_code=201,
    responses=_NOT_FOUND,
    openapi_extra=_DEVICES_BODY,
)
async def add_devices(request: Request, stream_id: str) -> JSONResponse:
    """Issue ``count`` device tokens (body ``{"count": n}``, 1 by default, at most
    :data:`MAX_DEVICES_PER_CALL`); each token is shown once here, and the server keeps only
    its SHA-256."""
    raw = await request.body()
    count: Any = 1
    if raw.strip():
        try:
            doc = load_json(raw, source="body")
        except DataError as exc:
            raise ApiError(422, str(exc)) from None
        if not isinstance(doc, dict) or set(doc) - {"count"}:
            raise ApiError(422, "body must be a JSON object with at most the field `count`")
        count = doc.get("count", 1)
    if type(count) is not int or not 1 <= count <= MAX_DEVICES_PER_CALL:
        raise ApiError(
            422,
            f"body: field `count` must be an integer in [1, {MAX_DEVICES_PER_CALL}], got {count!r}",
        )
    state = _state(request)

    def work() -> list[dict[str, str]]:
        _found(state, stream_id)
        tokens = [secrets.token_urlsafe(32) for _ in range(count)]
        devices = state.specs.add_devices(stream_id, [token_key(t) for t in tokens])
        return [{"device": d, "token": t} for d, t in zip(devices, tokens, strict=True)]

    return JSONResponse({"stream": stream_id, "devices": await run_in_threadpool(work)},
                        status_code=201)  # fmt: skip


@router.get(
    "/streams/{stream_id}", summary="A telemetry stream's spec, for devices", responses=_NOT_FOUND
)
def get_stream(request: Request, stream_id: str) -> dict[str, Any]:
    """The stream's spec: its oracle's full spec (what the JS client's ``makeOracle`` and
    ``makeDevice`` read), the period, the per-device window and what a report costs."""
    return _found(_state(request), stream_id).to_dict()


def _reports(spec: StreamSpec, content_type: str, raw: bytes) -> Any:
    from deniable.distributed import decode_batch, decode_json_batch

    kind = content_type.split(";")[0].strip().lower()
    if kind not in (_BINARY, _JSON):
        raise ApiError(
            415,
            f"header `Content-Type` must be {_BINARY} (a binary batch, deniable.batch/1) or "
            f"{_JSON} (a JSON batch), got {kind or 'none'!r}",
        )
    try:
        return (
            decode_batch(spec.oracle, raw)
            if kind == _BINARY
            else decode_json_batch(spec.oracle, raw)
        )
    except DeniableError as exc:
        raise ApiError(422, f"{exc} Nothing was charged or stored.") from None


def _retry_after(window: BudgetWindow, now: datetime) -> int:
    """Seconds until the stream's window that holds ``now`` ends (a rolling window: its
    length): when a refused device may try again (a hint; every spec the window store
    enforces must have room by then)."""
    t = now.timestamp()
    end = t + float(window.length) if window.kind == "rolling" else window.window_of(t)[1]
    return max(1, math.ceil(end - t))


def _ingest(state: StreamState, stream_id: str, token: str | None, kind: str, raw: bytes) -> Any:
    from deniable.distributed import append_reports

    spec = _found(state, stream_id)
    hint = f"send `Authorization: Bearer <device token>` (POST /api/streams/{stream_id}/devices)"
    if token is None:
        raise ApiError(401, f"header `Authorization` is missing: {hint}",
                       headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    device = state.specs.device(stream_id, token_key(token))
    if device is None:
        raise ApiError(401, f"header `Authorization`: the token is not a device of stream "
                       f"{stream_id!r}", headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    reports = _reports(spec, kind, raw)
    n = len(reports)  # an array, RapporReports, SketchReports or a range LevelReports
    if n == 0:
        raise ApiError(422, "body: a batch must hold at least one report, got none")
    now = state.clock()
    ledger = WindowedLedger(spec.window, store=state.windows, clock=lambda: now)
    try:
        ledger.charge(f"stream:{stream_id}:{device}", spec.report_epsilon, reports=n)
    except PrivacyError as exc:
        wait = _retry_after(spec.window, now)
        raise ApiError(
            429, f"stream {stream_id!r}, {exc} Nothing was stored.", {"Retry-After": str(wait)}
        ) from None
    # charged: from here a failure loses the reports but never the charge (the safe side)
    day = now.astimezone(UTC).date()
    try:
        stored = append_reports(state.root, stream_id, spec.oracle, reports, day=day)
    except DeniableError as exc:
        raise ApiError(409, f"{exc} The batch was charged and not stored.") from None
    except OSError as exc:
        raise ApiError(
            503,
            f"the reports could not be written ({exc.strerror or type(exc).__name__}); "
            "the batch was charged and not stored",
        ) from None
    return {
        "stream": stream_id,
        "day": stored.day.isoformat(),
        "reports": stored.reports,
        "epsilon": charge_cost(spec.report_epsilon, n),
        "window": spec.window.describe(),
    }


@router.post(
    "/streams/{stream_id}/batches",
    summary="Post a device's batch of randomized reports",
    status_code=201,
    responses={
        401: {"description": "no device token, or not one of this stream"},
        404: {"description": "No such stream."},
        413: {"description": "a body over max_body_bytes"},
        415: {"description": "neither application/octet-stream nor application/json"},
        422: {"description": "a malformed batch, another oracle's, or a report out of range"},
        429: {"description": "the device's budget window would be exceeded"},
    },
    openapi_extra=_BATCH_BODY,
)
async def post_batch(request: Request, stream_id: str, _token: DeviceCredentials) -> JSONResponse:
    """A device's batch: the binary batch (``application/octet-stream``, format
    ``deniable.batch/1``) or the JSON batch (``application/json``, ``{"key", "reports"}``)
    of reports its own randomizer made.  Answers 201 with the UTC day, the number of
    reports stored and the epsilon charged, once they are durable."""
    raw = await request.body()
    kind = request.headers.get("content-type", "")
    out = await run_in_threadpool(
        _ingest, _state(request), stream_id, bearer_token(request), kind, raw
    )
    return JSONResponse(out, status_code=201)
