"""The viewer's web app (FastAPI): pages of the runs and audits a :class:`Catalog` found, and their images.

Every route names a run or an audit by its catalog id and a task by a name the run's results list, so a
request reaches only what the catalog holds. Responses carry a Content-Security-Policy that allows no
script at all and only this server's styles and images; the ``Host`` header must name the address the
viewer was started on (a web page cannot reach it through a DNS name it controls).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, cast, get_args

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.base import RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware

from harness.paths import cache_root
from harness.protocols.base import Protocol, get_protocol
from harness.protocols.evidence_html import EVIDENCE_CSS
from harness.viewer import pages
from harness.viewer.catalog import Audit, Catalog, Run, discover
from harness.viewer.evidence_pages import EvidencePages, evidence_protocols
from harness.viewer.images import ImageStore
from harness.viewer.sample_index import (
    MetricOp,
    SampleIndex,
    SampleQuery,
    SortOrder,
    compare,
)

log = logging.getLogger(__name__)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'none'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}
PER_PAGE = (25, 50, 100, 200)
MAX_SEARCH = 200
_TEXT_FILES = {".csv", ".json", ".jsonl", ".txt", ".md", ".tsv", ".log"}


class Viewer:
    """What the app serves: the catalog, one sample index per run (in ``cache``) and the image store."""

    def __init__(self, catalog: Catalog, cache: Path, data_dirs: list[Path]) -> None:
        self.catalog = catalog
        self.indexes = {rid: SampleIndex(run.path, run.tasks, cache / "index") for rid, run in catalog.runs.items()}
        self.images = ImageStore(data_dirs)
        self.evidence = EvidencePages(catalog)

    def run(self, rid: str) -> Run:
        """The run with that id, or a 404."""
        run = self.catalog.runs.get(rid)
        if run is None:
            raise HTTPException(404, "no such run in this viewer")
        return run

    def task(self, rid: str, task: str) -> tuple[Run, SampleIndex]:
        """The run and its index, checked to hold ``task`` (a 404 otherwise)."""
        run = self.run(rid)
        if task not in run.tasks:
            raise HTTPException(404, f"run {run.model} has no samples of task {task!r}")
        return run, self.indexes[rid]

    def protocol(self, name: str) -> Protocol:
        """The registered protocol of that name with an evidence extractor, or a 404."""
        found = get_protocol(name)
        if found is None or found not in evidence_protocols():
            raise HTTPException(404, f"no protocol {name!r} with evidence")
        return found

    def audit(self, aid: str) -> Audit:
        """The audit with that id, or a 404."""
        audit = self.catalog.audits.get(aid)
        if audit is None:
            raise HTTPException(404, "no such audit in this viewer")
        return audit


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def sample_query(task: str, params: dict[str, str]) -> SampleQuery:
    """The samples page's query from its URL parameters; anything out of range falls back to its default."""
    op = params.get("op", "any")
    sort = params.get("sort", "doc")
    per_page = int(params["per_page"]) if params.get("per_page", "").isdigit() else 50
    page = int(params["page"]) if params.get("page", "").isdigit() else 1
    return SampleQuery(
        task=task,
        search=params.get("q", "").strip()[:MAX_SEARCH],
        error=params.get("error", "")[:64],
        metric=params.get("metric", "")[:256],
        op=cast(MetricOp, op if op in get_args(MetricOp) else "any"),
        value=_number(params.get("value", "")),
        sort=cast(SortOrder, sort if sort in get_args(SortOrder) else "doc"),
        page=min(max(page, 1), 10**7),
        per_page=per_page if per_page in PER_PAGE else 50,
    )


def _page_routes(app: FastAPI, viewer: Viewer) -> None:
    """The runs page and one run's pages: its figures, its samples, one sample."""

    @app.get("/", response_class=HTMLResponse)
    def runs() -> str:
        return pages.runs_page(viewer.catalog)

    @app.get("/run/{rid}/", response_class=HTMLResponse)
    def run(rid: str) -> str:
        found = viewer.run(rid)
        index = viewer.indexes[rid]
        return pages.run_page(found, {task: index.summary(task) for task in found.tasks})

    @app.get("/run/{rid}/{task}/", response_class=HTMLResponse)
    def samples(rid: str, task: str, request: Request) -> str:
        found, index = viewer.task(rid, task)
        query = sample_query(task, dict(request.query_params))
        page = index.query(query)
        views = [pages.sample_view(ref, index.read(ref)) for ref in page.refs]
        return pages.samples_page(found, query, index.summary(task), views, page.total)

    @app.get("/run/{rid}/{task}/sample/{sample_id}", response_class=HTMLResponse)
    def sample(rid: str, task: str, sample_id: int) -> str:
        found, index = viewer.task(rid, task)
        ref = index.refs([sample_id]).get(sample_id)
        if ref is None or ref.task != task:
            raise HTTPException(404, "no such sample")
        return pages.sample_page(found, pages.sample_view(ref, index.read(ref)))


def _cross_run_routes(app: FastAPI, viewer: Viewer) -> None:
    """Pages over several runs: side by side, an audit folder, a protocol's evidence."""

    @app.get("/compare", response_class=HTMLResponse)
    def side_by_side(
        run: Annotated[list[str], Query()], task: str = "", page: Annotated[int, Query(ge=1, le=10**7)] = 1
    ) -> str:
        chosen = [viewer.run(rid) for rid in dict.fromkeys(run)]
        if len(chosen) < 2:
            raise HTTPException(400, "choose at least two runs to compare")
        common = [t for t in chosen[0].tasks if all(t in other.tasks for other in chosen[1:])]
        if not common:
            raise HTTPException(400, "these runs share no task")
        task = task if task in common else common[0]
        indexes = [viewer.indexes[r.id] for r in chosen]
        rows, total, differing = compare(indexes, task, page, 25)
        views = [pages.CompareView([], row.scores_differ, row.answers_differ) for row in rows]
        for i, index in enumerate(indexes):
            refs = index.refs([sid for row in rows if (sid := row.ids[i]) is not None])
            for row, view in zip(rows, views, strict=True):
                sid = row.ids[i]
                ref = None if sid is None else refs.get(sid)
                view.views.append(None if ref is None else pages.sample_view(ref, index.read(ref)))
        return pages.compare_page(chosen, task, common, views, total, differing, page, 25)

    @app.get("/audit/{aid}", response_class=HTMLResponse)
    def audit(aid: str) -> str:
        return pages.audit_page(viewer.audit(aid))

    @app.get("/protocol/{name}", response_class=HTMLResponse)
    def protocol(name: str) -> str:
        found = viewer.protocol(name)
        audits = [a for a in viewer.catalog.audits.values() if a.protocol is not None and a.protocol.name == name]
        return pages.protocol_page(found, viewer.evidence.of(found, found.name), audits)


def _file_routes(app: FastAPI, viewer: Viewer) -> None:
    @app.get("/image/{rid}/{task}/{doc_id}/{digest}.png")
    def image(rid: str, task: str, doc_id: int, digest: str, thumb: int = 0) -> Response:
        found, _ = viewer.task(rid, task)
        fingerprint = found.results.provenance.datasets.get(task) if found.results else None
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or fingerprint is None:
            raise HTTPException(404, "no such image")
        ref = viewer.images.sample_image(fingerprint, doc_id, digest)
        data = None if ref is None else viewer.images.png(ref, bool(thumb))
        if data is None:
            raise HTTPException(404, "the run's dataset is not here or does not hold this image")
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    @app.get("/protocol/{name}/image/{token}.png")
    def evidence_image(name: str, token: str) -> Response:
        found = viewer.protocol(name)
        ref = viewer.evidence.image(found, found.name, token)
        data = None if ref is None else viewer.images.png(ref, thumbnail=not ref.plot)
        if data is None:
            raise HTTPException(404, "no such image in this protocol's evidence")
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    @app.get("/evidence.css")
    def evidence_css() -> Response:
        return Response(EVIDENCE_CSS, media_type="text/css")

    @app.get("/audit/{aid}/files/{name}")
    def audit_file(aid: str, name: str) -> Response:
        path = viewer.audit(aid).file(name)
        if path is None:
            raise HTTPException(404, "no such file in this audit")
        suffix = path.suffix.lower()
        if suffix == ".png":
            with path.open("rb") as fh:
                if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                    raise HTTPException(415, "not a PNG file")
            return FileResponse(path, media_type="image/png")
        if suffix in _TEXT_FILES:
            return FileResponse(path, media_type="text/plain; charset=utf-8")
        return FileResponse(path, media_type="application/octet-stream", filename=name)


async def _security_headers(request: Request, call_next: RequestResponseEndpoint) -> Response:
    response = await call_next(request)
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


def create_app(viewer: Viewer, host: str = "127.0.0.1") -> FastAPI:
    """The viewer app over ``viewer``; requests must name ``host`` (or loopback) in their Host header, unless
    it listens on every interface."""
    app = FastAPI(title="harness view", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=pages.STATIC), name="static")
    app.middleware("http")(_security_headers)
    # every interface (0.0.0.0, ::) is reached under any of the machine's names: the user chose that
    named = ["*"] if host in ("0.0.0.0", "::") else sorted({"127.0.0.1", "localhost", "[::1]", host})
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=named)

    @app.exception_handler(HTTPException)
    async def error_page(_: Request, exc: HTTPException) -> Any:
        return PlainTextResponse(f"{exc.status_code}: {exc.detail}", status_code=exc.status_code)

    _page_routes(app, viewer)
    _cross_run_routes(app, viewer)
    _file_routes(app, viewer)
    return app


@dataclass(frozen=True)
class ViewOptions:
    """``harness view``'s options: the folders to show, where to listen, the cache of indexes, the data
    folders that hold the runs' datasets."""

    folders: list[Path]
    host: str = "127.0.0.1"
    port: int = 8765
    cache: Path | None = None
    data_dirs: tuple[Path, ...] = ()


def serve(options: ViewOptions) -> None:
    """Find the runs and audits, bring every run's sample index up to date, and serve until interrupted."""
    import uvicorn  # the [view] extra

    catalog = discover(options.folders)
    viewer = Viewer(catalog, options.cache or cache_root() / "viewer", list(options.data_dirs))
    for rid, index in viewer.indexes.items():
        started = time.perf_counter()
        if index.ensure():
            log.info("indexed %s in %.1fs", catalog.runs[rid].path, time.perf_counter() - started)
    if options.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("listening on %s: anyone who can reach it can read these runs", options.host)
    found = f"{len(catalog.runs)} run(s), {len(catalog.audits)} audit(s)"
    print(f"harness view: http://{options.host}:{options.port}/  ({found})")
    uvicorn.run(create_app(viewer, options.host), host=options.host, port=options.port, log_level="warning")
