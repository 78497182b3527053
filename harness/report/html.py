"""The report as one self-contained HTML file: every image inline as a ``data:`` URI (a thumbnail; plots a
little larger), its style inline and allowed by hash, no script, nothing fetched. A strict
Content-Security-Policy meta tag holds the page to that, so a string that slipped through escaping still
could not run or call out. Written beside it: the same content as JSON (:class:`ModelAudit`)."""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections.abc import Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup

from harness.disk import write_atomic
from harness.protocols.evidence import ImageRef, ProtocolEvidence
from harness.protocols.evidence_html import EVIDENCE_CSS, environment, render_evidence
from harness.protocols.evidence_html import TEMPLATES as EVIDENCE_TEMPLATES
from harness.protocols.evidence_images import THUMBNAIL, ImageStore, data_uri
from harness.report.model import ModelAudit

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: A plot's longest side in the report, in pixels (a plot's labels must stay readable).
PLOT_SIZE = 720
#: How many items of a flagged section the Flags part shows inline (the rest are under Evidence).
FLAG_ITEMS = 1

PAGE_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;line-height:1.4}
header{background:#f3f4f8;border-bottom:1px solid #dde;padding:1rem 2rem}
main{padding:0 2rem 3rem;max-width:1400px}
h1{margin:.2rem 0}
h1 .model{font-family:ui-monospace,monospace}
.meta,.small{color:#555;font-size:.85em}
.warning{background:#fff4d6;border:1px solid #e8c66b;padding:.4rem .6rem;display:inline-block}
.note{color:#8a4b00}
nav ol{margin:.4rem 0;padding-left:1.2rem}
nav a{color:#2a4fa8}
section>h2{border-bottom:2px solid #dde;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f6f9}
.num{text-align:right;font-variant-numeric:tabular-nums}
.refs caption{text-align:left;font-weight:bold}
code,pre{font-family:ui-monospace,monospace}
.commands pre,#reproduce>pre{background:#f5f5f8;padding:.4rem .6rem;white-space:pre-wrap;overflow-wrap:anywhere}
"""


PAGE_CSS_ALL = EVIDENCE_CSS + PAGE_CSS


def _policy(css: str) -> str:
    """The page's Content-Security-Policy: nothing but inline images and its own style (by hash)."""
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode("ascii")
    return f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"


#: The report page's policy: a server sends it as a header as well (the meta tag holds the same).
PAGE_POLICY = _policy(PAGE_CSS_ALL)


class InlineImages:
    """Resolves image references to ``data:`` URIs, each image read and downsized once."""

    def __init__(self, store: ImageStore | None = None) -> None:
        self.store = store or ImageStore()
        self._done: dict[tuple[str, bool], str | None] = {}
        self.missing = 0

    def __call__(self, ref: ImageRef) -> str | None:
        """The image as a ``data:`` URI, or None when its pixels cannot be found."""
        key = (ref.sha256, ref.plot)
        if key not in self._done:
            png = self.store.thumbnail_png(ref, PLOT_SIZE if ref.plot else THUMBNAIL)
            self._done[key] = data_uri(png) if png else None
            self.missing += png is None
        return self._done[key]


def _flagged(evidence: ProtocolEvidence) -> ProtocolEvidence | None:
    """The flagged sections of the evidence, each with its strongest items only."""
    sections = [
        s.model_copy(update={"items": s.items[:FLAG_ITEMS], "tables": [], "plots": [], "truncated": 0})
        for s in evidence.sections
        if s.flag
    ]
    return evidence.model_copy(update={"sections": sections, "notes": []}) if sections else None


def render_report(doc: ModelAudit, paths: Sequence[Path], out: Path, images: InlineImages | None = None) -> str:
    """The report page: what was run, headline figures, flags with their strongest evidence inline, every
    protocol's evidence and the commands that re-create it."""
    resolve = images or InlineImages()
    flags: dict[str, Markup] = {}
    evidence: dict[str, Markup] = {}
    for part in doc.protocols:
        if part.evidence is None:
            continue
        evidence[part.protocol] = render_evidence(part.evidence, resolve, prefix="ev", level=3)
        flagged = _flagged(part.evidence)
        if flagged is not None:
            flags[part.protocol] = render_evidence(
                flagged.model_copy(update={"title": f"{flagged.title}: flags"}), resolve, prefix="flag", level=4
            )
    command = shlex.join(["harness", "report", "--model", doc.model, *map(str, paths), "--out", str(out)])
    env = environment().overlay(
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(TEMPLATES), jinja2.FileSystemLoader(EVIDENCE_TEMPLATES)])
    )
    return env.get_template("report.html.j2").render(
        doc=doc,
        css=Markup(PAGE_CSS_ALL),  # the project's own style, hashed into the policy as written
        csp=PAGE_POLICY,
        smoke=any(r.smoke_test_model for r in doc.runs),
        flags=flags,
        evidence=evidence,
        report_command=command,
    )


def write_report(doc: ModelAudit, paths: Sequence[Path], out: Path) -> tuple[Path, Path, int]:
    """Write ``out`` (the HTML page) and ``out`` with ``.json`` (the same content, typed); returns both paths
    and how many images could not be found."""
    images = InlineImages()
    html = render_report(doc, paths, out, images)
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path = out.with_suffix(".json")
    write_atomic(out, html)
    write_atomic(json_path, doc.model_dump_json(indent=2) + "\n")
    return out, json_path, images.missing
