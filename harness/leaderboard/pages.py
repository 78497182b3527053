"""HTML pages from Jinja2 templates with autoescape on: every submitted string (model names, task
names, messages, provenance) reaches the page escaped. Links are relative, so the same pages work
from the server and from a static host (``harness leaderboard export``)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from harness.display import visible
from harness.engine.compare import CompareReport
from harness.leaderboard.db import Submission
from harness.leaderboard.protocol_parts import BoardParts
from harness.leaderboard.public import redact
from harness.leaderboard.ranks import TableRanks
from harness.leaderboard.records import Z95
from harness.leaderboard.tables import SIZE_BUCKETS, coverage_of, protocol_tables, settings_of
from harness.metrics.bootstrap import N_RESAMPLES
from harness.secrets import redact_run

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"
_MISSING = "\N{EN DASH}"  # what a page shows for a missing value


def _fmt(value: Any) -> str:
    return _MISSING if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _params(value: int | None) -> str:
    if value is None:
        return _MISSING
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return str(value)


def _shown(value: Any) -> Any:
    """Every value a template prints: a string never shows a control or bidi character as itself."""
    return visible(value, keep_layout=True) if isinstance(value, str) else value


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["fmt"] = _fmt
    env.filters["params"] = _params
    env.filters["public"] = redact
    return env


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_index(
    records: list[Submission],
    parts: BoardParts,
    page_size: int = 25,
    ranks: dict[str, TableRanks] | None = None,
    live: bool = False,
) -> str:
    """The index: a table per protocol, shown ``page_size`` rows a page (``?rows=N`` on the page overrides),
    each with its rank intervals and, when served (``live``), a form comparing two of its submissions."""
    tables = protocol_tables(records, parts)
    families = sorted({r.family or "unknown" for r in records})
    present = {r.size for t in tables for r in t.rows}
    sizes = [label for _, label in SIZE_BUCKETS if label in present] + (["unknown"] if "unknown" in present else [])
    return (
        _environment()
        .get_template("index.html")
        .render(
            root="",
            generated=_now(),
            tables=tables,
            families=families,
            sizes=sizes,
            n_submissions=len(records),
            panels=parts.panels,
            page_size=page_size,
            ranks=ranks or {},
            n_resamples=N_RESAMPLES,
            live=live,
        )
    )


def render_compare(a: Submission, b: Submission, report: CompareReport) -> str:
    """The paired comparison of two submissions (``compare.html?a=ID&b=ID``)."""
    return (
        _environment()
        .get_template("compare.html")
        .render(
            root="",
            generated=_now(),
            a_id=a.id,
            b_id=b.id,
            a_label=report.runs[0].label,
            b_label=report.runs[1].label,
            report=report,
        )
    )


def provenance_items(record: Submission) -> list[tuple[str, Any]]:
    """What the model page lists: identity, code, data, settings and who sent it."""
    claimed = redact_run(record.claimed)  # a run stored before runs were cleared of credentials
    prov = claimed.get("provenance", {})
    model = prov.get("model", {}) if isinstance(prov.get("model"), dict) else {}
    items: list[tuple[str, Any]] = [
        ("model spec", record.model),
        ("model id", record.model_id),
        ("revision", record.revision),
        ("backend", record.backend),
        ("family", record.family),
        ("parameters", _params(record.parameters)),
        ("access", record.access),
        ("model fingerprint", model.get("fingerprint")),
        ("dtype", model.get("dtype")),
        ("device", model.get("device")),
        ("harness version", record.harness_version),
        ("harness git revision", record.git_revision),
        ("task versions", claimed.get("versions")),
        ("dataset fingerprints", prov.get("datasets")),
        ("generation settings", prov.get("generation")),
        ("seeds", prov.get("seeds")),
        ("run config", claimed.get("config")),
        ("started at", prov.get("started_at")),
        ("wall time (s)", prov.get("wall_time_s")),
        ("packages", prov.get("packages")),
        ("python", prov.get("python")),
        ("submitter", record.submitter),
        ("submitted at", record.submitted_at.isoformat()),
        ("content hash", record.content_hash),
    ]
    return [
        (k, redact(v) if isinstance(v, dict | list) else _MISSING if v is None else redact(str(v))) for k, v in items
    ]


def render_model(record: Submission, files: list[tuple[str, str, int]], parts: BoardParts) -> str:
    """The HTML page of one submission: its scores with coverage, provenance, files, plots and panel
    notes."""
    plots = [(name, kind) for name, kind, _ in files if kind in ("chart", "report", "plot")]
    return (
        _environment()
        .get_template("model.html")
        .render(
            root="../",
            generated=_now(),
            record=record,
            files=files,
            plots=plots,
            provenance=provenance_items(record),
            z=Z95,
            notes=parts.model_notes(record.id),
            scores=[(s, *coverage_of(record, s.task, s.metric)) for s in record.scores],
            settings=settings_of(record),
        )
    )
