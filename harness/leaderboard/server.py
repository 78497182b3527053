"""``harness leaderboard serve``: the web service (FastAPI).

Routes mirror the static export's file layout (``index.html``, ``model/<id>.html``,
``tables/<table>.csv|json``, ``files/<id>/<name>``, ``panels/<key>.png``, ``static/``), plus the API:
``POST /api/submissions`` (multipart ``files``, ``Authorization: Bearer TOKEN``), ``GET /api/submissions``,
``GET /api/submissions/<id>``, ``GET /api/protocols/<name>`` (its panels and pending jobs) and
``GET /api/health``.
"""

from __future__ import annotations

import html
import logging
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.middleware.base import RequestResponseEndpoint
from starlette.requests import ClientDisconnect

from harness.engine.compare import CompareReport
from harness.errors import HarnessError
from harness.leaderboard.bundle import Limits, SubmissionError, is_bundle_file
from harness.leaderboard.db import Database, Submission
from harness.leaderboard.pages import STATIC, render_compare, render_index, render_model
from harness.leaderboard.pool_store import DatabasePoolStore
from harness.leaderboard.protocol_parts import board_parts
from harness.leaderboard.quota import RateLimit, release, reserve
from harness.leaderboard.ranks import compare_submissions, table_ranks
from harness.leaderboard.records import (
    file_index,
    get_file,
    get_submission,
    list_submissions,
    submission_summary,
)
from harness.leaderboard.report_link import submission_report
from harness.leaderboard.service import Outcome, Settings, due_jobs
from harness.leaderboard.tables import protocol_tables, table_csv, table_json
from harness.leaderboard.tokens import submitter_of
from harness.leaderboard.workers import RescoringPool
from harness.protocols.leaderboard_hooks import Job, Options
from harness.report.html import PAGE_POLICY
from harness.taskspec.registry import TaskRegistry

log = logging.getLogger(__name__)
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self'; script-src 'self'; style-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_MEDIA = {".png": "image/png", ".json": "application/json", ".jsonl": "application/x-ndjson"}


class _BodyTooLarge(Exception):
    pass


class JobWorker:
    """Runs one protocol's after-submission job in a background thread; requests queued while one waits
    are merged (the job recomputes from everything stored, so one run serves them all)."""

    def __init__(self, db: Database, name: str, job: Job, options: Options) -> None:
        self.db, self.name, self.job, self.options = db, name, job, options
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-job")
        self._lock = threading.Lock()
        self._queued = False
        self._running = 0

    @property
    def pending(self) -> int:
        """How many runs of the job are queued or running (the protocol API reports it)."""
        with self._lock:
            return int(self._queued) + self._running

    def request(self) -> None:
        """Queues a run of the job unless one is already queued (that run will see this submission too)."""
        with self._lock:
            if self._queued:
                return
            self._queued = True
        self._executor.submit(self._run)

    def _run(self) -> None:
        with self._lock:
            self._queued = False
            self._running += 1
        try:
            self.job.run(DatabasePoolStore(self.db, self.name), self.options)
        except Exception:
            log.exception("the %s job after a submission failed", self.name)
        finally:
            with self._lock:
                self._running -= 1

    def shutdown(self) -> None:
        """Stops the worker once its queued and running job runs have finished."""
        self._executor.shutdown(wait=True)


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


class _Refusal(Exception):
    """A request the server answers with an error; ``response`` is that answer."""

    def __init__(self, status: int, message: str, **headers: str) -> None:
        super().__init__(message)
        self.response = _error(status, message, **headers)


async def _submitter(request: Request, db: Database) -> str:
    """The submitter of the request's bearer token (a 401 refusal without a valid one)."""
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    submitter = await run_in_threadpool(submitter_of, db, token)
    if submitter is None:
        raise _Refusal(
            401,
            "a valid submitter token is required (Authorization: Bearer TOKEN; an admin "
            "creates one with `harness leaderboard token create NAME`)",
            **{"WWW-Authenticate": "Bearer"},
        )
    return submitter


def _counted(request: Request, limit: int) -> Callable[[], Awaitable[Any]]:
    """The request's ``receive``, stopping the upload (``_BodyTooLarge``) once it is over ``limit`` bytes."""
    received = 0

    async def receive() -> Any:
        nonlocal received
        message = await request.receive()
        received += len(message.get("body", b""))
        if received > limit:
            raise _BodyTooLarge
        return message

    return receive


def _save_parts(form: FormData, folder: Path) -> dict[str, Path]:
    """The form's ``files`` parts copied (in chunks) into ``folder``, by file name (each a named file of a
    submission's kinds, each name once); starlette has already spooled each part to disk."""
    files: dict[str, Path] = {}
    for item in form.getlist("files"):
        if isinstance(item, str) or not item.filename:
            raise _Refusal(400, "each part of `files` must be a file with a name")
        name = item.filename
        if name in files:
            raise _Refusal(400, f"{name!r} was sent twice")
        if not is_bundle_file(name):
            raise _Refusal(
                400,
                f"unexpected file {name!r}: a submission carries results.json, samples_<task>.jsonl and *.png plots",
            )
        item.file.seek(0)
        with (folder / name).open("wb") as out:
            shutil.copyfileobj(item.file, out, 2**20)
        files[name] = folder / name
    return files


async def _upload(request: Request, limits: Limits, folder: Path) -> dict[str, Path]:
    """The uploaded files, received into ``folder`` by name; refused when the upload is over the size
    limit, malformed, empty or abandoned by the client."""
    limit = limits.max_total_bytes + 2**20  # multipart framing on top of the files
    try:
        form = await Request(request.scope, _counted(request, limit)).form(
            max_files=limits.max_files + 1, max_fields=10
        )
        try:
            files = await run_in_threadpool(_save_parts, form, folder)
        finally:
            await form.close()
    except _BodyTooLarge:
        raise _Refusal(413, f"the upload is over this server's limit of {limits.max_total_bytes} bytes") from None
    except ClientDisconnect:
        log.warning(
            "an upload was abandoned by its client (%s) before it was complete; nothing was stored",
            request.client.host if request.client else "unknown",
        )
        raise _Refusal(400, "the upload was abandoned before it was complete") from None
    except (MultiPartException, ValueError) as exc:
        raise _Refusal(400, f"malformed multipart upload: {exc}") from None
    except HTTPException as exc:  # starlette's own refusal of a malformed form
        raise _Refusal(exc.status_code, f"malformed multipart upload: {exc.detail}") from None
    if not files:
        raise _Refusal(400, "no files: send results.json and samples_<task>.jsonl as multipart `files`")
    return files


def _declared_size(request: Request, limits: Limits) -> int:
    """The upload's declared size (what its quota reservation holds); over the limit is a 413 now, before
    any of it is received."""
    limit = limits.max_total_bytes + 2**20
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > limit:
            raise _Refusal(
                413, f"the upload is {declared} bytes, over this server's limit of {limits.max_total_bytes} bytes"
            )
        return int(declared)
    return limits.max_total_bytes


async def _receive_and_submit(
    request: Request, db: Database, settings: Settings, rescoring: RescoringPool, submitter: str
) -> Outcome:
    """Reserve the quota, receive the files to a private folder, then have a worker re-score and store
    them; over the quota, only a resend of a stored submission is answered (with that record)."""
    size = _declared_size(request, settings.limits)
    reservation, over = await run_in_threadpool(reserve, db, submitter, size, settings.quota)
    try:
        with tempfile.TemporaryDirectory(prefix="leaderboard-upload-") as tmp:
            files = await _upload(request, settings.limits, Path(tmp))
            if reservation is None:
                existing = await run_in_threadpool(rescoring.lookup, files, settings, db.url)
                if existing is None:
                    raise _Refusal(429, str(over), **{"Retry-After": "3600"})
                return existing
            return await run_in_threadpool(rescoring.submit, files, submitter, reservation, settings, db.url)
    finally:
        if reservation is not None:
            await run_in_threadpool(release, db, reservation)


def _add_submission_route(
    app: FastAPI, db: Database, settings: Settings, rescoring: RescoringPool, workers: dict[str, JobWorker]
) -> None:
    """``POST /api/submissions``: token, rate, size and quota checks, then the submission received,
    re-scored and stored by a worker, and the protocols' jobs that it is due to start requested."""
    rate = RateLimit(db, settings.quota.uploads_per_minute)

    @app.post("/api/submissions")
    async def submit(request: Request) -> JSONResponse:
        try:
            submitter = await _submitter(request, db)
            wait = await run_in_threadpool(rate.admit, submitter)
            if wait is not None:
                raise _Refusal(
                    429,
                    f"{submitter!r} sent {rate.per_minute} uploads in the last minute, this "
                    f"server's rate limit (--rate-per-minute); try again in {wait:.0f} s",
                    **{"Retry-After": str(max(1, round(wait)))},
                )
            outcome = await _receive_and_submit(request, db, settings, rescoring, submitter)
        except _Refusal as refusal:
            return refusal.response
        except SubmissionError as exc:
            return _error(exc.status, str(exc))
        if not outcome.duplicate:
            for name, _, _ in due_jobs(settings, outcome.tasks):
                workers[name].request()
        return JSONResponse(outcome.as_json(), status_code=200 if outcome.duplicate else 201)


def _add_api_routes(app: FastAPI, db: Database, settings: Settings, workers: dict[str, JobWorker]) -> None:
    """The read-only API: the submissions, one submission, a protocol's state and the health check."""

    @app.get("/api/submissions")
    def submissions() -> list[dict[str, Any]]:
        return [submission_summary(r) for r in list_submissions(db)]

    @app.get("/api/submissions/{submission_id}")
    def submission(submission_id: int) -> Response:
        record = get_submission(db, submission_id)
        if record is None:
            return _error(404, f"no submission {submission_id}")
        return JSONResponse(
            {
                **submission_summary(record),
                "files": [{"name": n, "kind": k, "size": s} for n, k, s in file_index(db, record.id)],
            }
        )

    @app.get("/api/protocols/{name}")
    def protocol_state(name: str) -> Response:
        parts = board_parts(db, settings)
        found = parts.protocol(name)
        if found is None:
            return _error(404, f"no protocol {name!r} on this leaderboard")
        worker = workers.get(found.name)
        return JSONResponse(parts.state(found.name, worker.pending if worker else 0))

    @app.get("/api/compare")
    def compare(a: int, b: int) -> Response:
        try:
            return JSONResponse(_compared(db, settings, a, b)[2].model_dump(mode="json"))
        except _Refusal as refusal:
            return refusal.response

    @app.get("/api/health")
    async def health() -> dict[str, Any]:  # on the event loop: never queued behind the thread pool
        return {"ok": True, "database": db.engine.url.get_backend_name()}


def _compared(db: Database, settings: Settings, a: int, b: int) -> tuple[Submission, Submission, CompareReport]:
    """Submissions ``a`` and ``b`` and their paired comparison; refused with 404 for an unknown id, 422 for
    docs that differ between them."""
    first, second = get_submission(db, a), get_submission(db, b)
    if first is None or second is None:
        raise _Refusal(404, f"no submission {a if first is None else b}")
    try:
        return first, second, compare_submissions(db, first, second, settings.include_paths)
    except HarnessError as exc:
        raise _Refusal(422, str(exc)) from None


def _add_page_routes(app: FastAPI, db: Database, settings: Settings) -> None:
    """The HTML pages: the index and each submission's model page."""

    @app.get("/", response_class=HTMLResponse)
    @app.get("/index.html", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        records = list_submissions(db)
        ranks = table_ranks(db, records, settings.include_paths)
        return HTMLResponse(render_index(records, board_parts(db, settings), settings.page_size, ranks, live=True))

    @app.get("/compare.html", response_class=HTMLResponse)
    def compare_page(a: int, b: int) -> Response:
        try:
            return HTMLResponse(render_compare(*_compared(db, settings, a, b)))
        except _Refusal as refusal:
            return HTMLResponse(f"<h1>{html.escape(str(refusal))}</h1>", status_code=refusal.response.status_code)

    @app.get("/model/{submission_id}.html", response_class=HTMLResponse)
    def model_page(submission_id: int) -> Response:
        record = get_submission(db, submission_id)
        if record is None:
            return HTMLResponse("<h1>No such submission</h1>", status_code=404)
        return HTMLResponse(render_model(record, file_index(db, record.id), board_parts(db, settings)))

    @app.get("/report/{submission_id}.html", response_class=HTMLResponse)
    def report_page(submission_id: int) -> Response:
        record = get_submission(db, submission_id)
        if record is None:
            return HTMLResponse("<h1>No such submission</h1>", status_code=404)
        html = submission_report(db, record, settings.data_dir)
        return HTMLResponse(html, headers={"Content-Security-Policy": PAGE_POLICY})


def _table_content(db: Database, settings: Settings, protocol: str, fmt: str) -> Any:
    """A panel's or a protocol table's content as JSON data (``fmt`` json) or CSV text; None when there is
    no such table."""
    parts = board_parts(db, settings)
    panel = parts.panel(protocol)
    if panel is not None:
        return dict(panel.data) if fmt == "json" else panel.csv
    found = next((t for t in protocol_tables(list_submissions(db), parts) if t.protocol == protocol), None)
    return None if found is None else table_json(found) if fmt == "json" else table_csv(found)


def _add_file_routes(app: FastAPI, db: Database, settings: Settings) -> None:
    """The downloads: tables as CSV or JSON, a submission's stored files and the panels' images."""

    @app.get("/tables/{protocol}.{fmt}")
    def table(protocol: str, fmt: str) -> Response:
        content = _table_content(db, settings, protocol, fmt)
        if content is None or fmt not in ("csv", "json"):
            return _error(404, f"no table {protocol}.{fmt}")
        if fmt == "json":
            return JSONResponse(content)
        return PlainTextResponse(
            content,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{protocol}.csv"'},
        )

    @app.get("/files/{submission_id}/{name}")
    def stored_file(submission_id: int, name: str) -> Response:
        content = get_file(db, submission_id, name)
        if content is None:
            return _error(404, f"no file {name!r} in submission {submission_id}")
        suffix = "." + name.rsplit(".", 1)[-1]
        headers = {} if suffix == ".png" else {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(content, media_type=_MEDIA.get(suffix, "application/octet-stream"), headers=headers)

    @app.get("/panels/{key}.png")
    def panel_image(key: str) -> Response:
        panel = board_parts(db, settings).panel(key)
        if panel is None or panel.image is None:
            return _error(404, f"no image for panel {key!r} yet")
        return Response(panel.image, media_type="image/png")


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answer in the documented ``{"error": ...}`` shape: unknown routes (404), wrong methods
    (405), path parameters of the wrong type (422) and anything unforeseen (500, logged in one line)."""

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), **(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(Exception)
    async def unforeseen(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return _error(500, "internal error; the server log names it")


async def _security_headers(request: Request, call_next: RequestResponseEndpoint) -> Response:
    """Every response with the security headers (CSP, nosniff, no referrer) a route did not set itself."""
    response = await call_next(request)
    for key, value in _SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


def create_app(settings: Settings, db: Database | None = None) -> FastAPI:
    """The leaderboard app over ``settings.db_url`` (migrated on open)."""
    db = db or Database(settings.db_url)
    # Refuses to start on an include path that shadows a bundled task (workers discover it again).
    TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    workers = {name: JobWorker(db, name, job, options) for name, job, options in due_jobs(settings, None)}
    rescoring = RescoringPool(settings.rescore_workers, settings.rescore_timeout_s)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for worker in workers.values():
            worker.shutdown()

    app = FastAPI(
        title="VLM audit leaderboard", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json", lifespan=lifespan
    )
    app.state.db, app.state.settings, app.state.job_workers = db, settings, workers
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.middleware("http")(_security_headers)
    _add_submission_route(app, db, settings, rescoring, workers)
    _add_error_handlers(app)
    _add_api_routes(app, db, settings, workers)
    _add_page_routes(app, db, settings)
    _add_file_routes(app, db, settings)
    return app


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serves the leaderboard app with uvicorn until interrupted."""
    import uvicorn  # the [leaderboard] extra

    app = create_app(settings)
    print(f"leaderboard: http://{host}:{port}/  (database {app.state.db.engine.url!r})")
    uvicorn.run(app, host=host, port=port, log_level="warning")
