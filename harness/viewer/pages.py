"""The viewer's HTML pages: Jinja2 templates with autoescape on, so every string a run holds (model
answers, prompts, dataset fields, names) reaches the page as text. Pages use no script at all; links,
forms (GET) and ``<details>`` do the work, so the Content-Security-Policy can forbid scripts outright."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlencode

import jinja2

from harness.protocols.base import Protocol
from harness.protocols.evidence import images_of
from harness.protocols.evidence_html import environment as evidence_environment
from harness.results.interval import Interval
from harness.results.metric_key import label_of
from harness.results.schema import SampleRecord
from harness.viewer.catalog import Audit, Catalog, Run
from harness.viewer.evidence_pages import Evidence, evidence_protocols
from harness.viewer.sample_index import MetricOp, SampleQuery, SampleRef, SortOrder, TaskSummary, prompt_text

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"
MISSING = "\N{EN DASH}"
#: How many characters of one answer, prompt or field a samples page shows (the sample's own page shows all).
SHOWN_CHARS = 2_000


def _fmt(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) and abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    if isinstance(value, int | str):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _interval(value: Interval | None) -> str:
    return MISSING if value is None else value.text()


def _clip(value: Any, limit: int = SHOWN_CHARS) -> str:
    text: str = value if isinstance(value, str) else _fmt(value)
    return (
        text
        if len(text) <= limit
        else text[:limit] + f" \N{HORIZONTAL ELLIPSIS} ({len(text) - limit:,} more characters)"
    )


@functools.cache
def _environment() -> jinja2.Environment:
    """The evidence renderer's environment (autoescape on, undefined names an error) over these templates,
    with the viewer's filters (a filter dict of its own: the overlay would share the parent's)."""
    env = evidence_environment().overlay(loader=jinja2.FileSystemLoader(TEMPLATES))
    env.filters = {**env.filters, "fmt": _fmt, "interval": _interval, "clip": _clip, "label": label_of}
    return env


def render(template: str, **context: Any) -> str:
    """A page from its template; every value is escaped unless a template marks it safe (none does)."""
    return _environment().get_template(template).render(**context)


@dataclass(frozen=True)
class SampleView:
    """One sample as a page shows it (``record`` None when its line could not be read: ``problem`` says why)."""

    ref: SampleRef
    record: SampleRecord | None
    problem: str | None

    @property
    def images(self) -> list[str]:
        """The digests of the sample's images."""
        return images_of(self.record.prompt) if self.record else []

    @property
    def prompt(self) -> str:
        """The prompt's text parts."""
        return prompt_text(self.record) if self.record else ""

    @property
    def doc_fields(self) -> list[tuple[str, str]]:
        """The dataset row as recorded (images left out), each value as text."""
        return [(str(k), _fmt(v)) for k, v in self.record.doc.items()] if self.record else []


def sample_view(ref: SampleRef, record: SampleRecord | str) -> SampleView:
    """A sample read from the index: the record, or the reason its line is not one."""
    return SampleView(ref, record, None) if isinstance(record, SampleRecord) else SampleView(ref, None, record)


@dataclass(frozen=True)
class CompareView:
    """One doc side by side: each run's sample (None where a run lacks the doc) and what differs."""

    views: list[SampleView | None]
    scores_differ: bool
    answers_differ: bool

    @property
    def differs(self) -> bool:
        """Whether the runs differ on this doc at all."""
        return self.scores_differ or self.answers_differ


def page_links(query: SampleQuery, total: int) -> dict[str, Any]:
    """The pager of a samples page: the number of pages and the query string of each neighbour."""
    pages = max(1, math.ceil(total / query.per_page))

    def at(page: int) -> str:
        params = {
            "q": query.search,
            "error": query.error,
            "metric": query.metric,
            "op": query.op,
            "value": "" if query.value is None else repr(query.value),
            "sort": query.sort,
            "per_page": query.per_page,
            "page": page,
        }
        return "?" + urlencode({k: v for k, v in params.items() if v not in ("", None)})

    page = min(max(query.page, 1), pages)
    return {
        "page": page,
        "pages": pages,
        "first": at(1) if page > 1 else None,
        "prev": at(page - 1) if page > 1 else None,
        "next": at(page + 1) if page < pages else None,
        "last": at(pages) if page < pages else None,
    }


def runs_page(catalog: Catalog) -> str:
    """The runs page: every run with its figures and provenance, the compare form, and the audits."""
    runs = catalog.sorted_runs()
    tasks = sorted({task for run in runs for task in run.tasks})
    audits = list(catalog.audits.values())
    return render("runs.html", root="", runs=runs, audits=audits, tasks=tasks, protocols=evidence_protocols())


def run_page(run: Run, summaries: dict[str, TaskSummary]) -> str:
    """One run: its tasks' figures with intervals, sample counts, and its whole provenance."""
    return render("run.html", root="../../", run=run, summaries=summaries, provenance=provenance_items(run))


def samples_page(run: Run, query: SampleQuery, summary: TaskSummary, samples: list[SampleView], total: int) -> str:
    """A page of one task's samples under the query's filters and order."""
    return render(
        "samples.html",
        root="../../../",
        run=run,
        query=query,
        summary=summary,
        samples=samples,
        total=total,
        pager=page_links(query, total),
        ops=list(get_args(MetricOp)),  # the index's own choices, so the form offers what it can run
        sorts=list(get_args(SortOrder)),
        full=False,
    )


def sample_page(run: Run, sample: SampleView) -> str:
    """One sample in full: nothing clipped."""
    return render("sample.html", root="../../../../", run=run, sample=sample, full=True)


def compare_page(
    runs: list[Run],
    task: str,
    tasks: list[str],
    rows: list[CompareView],
    total: int,
    differing: int,
    page: int,
    per_page: int,
) -> str:
    """Several runs' samples of one task side by side, docs whose scores or answers differ first."""
    pages = max(1, math.ceil(total / per_page))
    base = [("run", run.id) for run in runs] + [("task", task)]
    links = {
        "prev": "?" + urlencode([*base, ("page", page - 1)]) if page > 1 else None,
        "next": "?" + urlencode([*base, ("page", page + 1)]) if page < pages else None,
    }
    return render(
        "compare.html",
        root="",
        runs=runs,
        task=task,
        tasks=tasks,
        rows=rows,
        total=total,
        differing=differing,
        page=page,
        pages=pages,
        links=links,
        full=False,
    )


def audit_page(audit: Audit) -> str:
    """An audit folder: its protocol, its headline fields, its plots and its files."""
    files = audit.files()
    plots = [name for name, _ in files if name.endswith(".png")]
    summary = audit_summary(audit)
    return render("audit.html", root="../", audit=audit, files=files, plots=plots, summary=summary)


def protocol_page(protocol: Protocol, evidence: Evidence, audits: list[Audit]) -> str:
    """A protocol's evidence over every run (its extractor's sections, the shared renderer), and the
    protocol's audit folders with their plots and files."""
    return render("protocol.html", root="../", protocol=protocol, evidence=evidence, audits=audits)


def audit_summary(audit: Audit) -> list[tuple[str, str]]:
    """The report's top-level fields that are single values or short lists (the rest are in its files)."""
    if audit.report is None:
        return []
    dumped = audit.report.model_dump(by_alias=True, mode="json")
    return [
        (str(key), _fmt(value))
        for key, value in dumped.items()
        if not isinstance(value, dict | list) or (isinstance(value, list) and len(value) <= 12)
    ]


def provenance_items(run: Run) -> list[tuple[str, str]]:
    """What a run page lists of its provenance: model, code, data, settings, timings, counts."""
    if run.results is None:
        return []
    prov = run.results.provenance
    items: list[tuple[str, Any]] = [
        ("model spec", run.results.config.model),
        ("model", prov.model.model_dump(exclude_none=True)),
        ("harness version", prov.harness_version),
        ("harness git revision", prov.git_revision),
        ("command", " ".join(prov.command) or None),
        ("started at", prov.started_at),
        ("wall time (s)", prov.wall_time_s),
        ("datasets", {task: d.model_dump(exclude_none=True) for task, d in prov.datasets.items()}),
        ("generation settings", {task: g.model_dump() for task, g in prov.generation.items()}),
        ("seeds", prov.seeds.model_dump()),
        ("requests", prov.requests.model_dump()),
        ("task versions", run.results.versions),
        ("run config", run.results.config.model_dump()),
        ("python", prov.python),
        ("platform", prov.platform),
        ("packages", prov.packages),
    ]
    return [(key, _fmt(value)) for key, value in items]
