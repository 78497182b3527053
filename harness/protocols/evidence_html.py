"""Evidence as HTML: one Jinja2 template (autoescape on) turns :class:`ProtocolEvidence` into a fragment
that a page embeds (``harness report``'s self-contained file, ``harness view``'s protocol pages), with
:data:`EVIDENCE_CSS` for its style. The page decides where images come from: the resolver it passes maps
an :class:`ImageRef` to a ``src`` (a ``data:`` URI, a URL) or None ("image not available"). Every string
of the evidence (answers, prompts, dataset fields, model names) reaches the page escaped."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from harness.protocols.evidence import ImageRef, ProtocolEvidence
from harness.results.interval import Interval

TEMPLATES = Path(__file__).resolve().parent / "templates"
MISSING = "\N{EN DASH}"
NO_INTERVAL = "no interval recorded"

#: Maps an image reference to the ``src`` a page uses, or None when the image cannot be shown.
ImageResolver = Callable[[ImageRef], str | None]

EVIDENCE_CSS = """
.ev-protocol{margin:2rem 0}
.ev-model{font-weight:normal;color:#555;font-size:.8em}
.ev-section{border-left:3px solid #ccd;padding:.2rem 0 .2rem 1rem;margin:1.2rem 0}
.ev-section.ev-flagged{border-left-color:#c43}
.ev-flag{color:#a21;margin:.3rem 0}
.ev-summary,.ev-note{color:#444;margin:.3rem 0}
.ev-figures,.ev-table{border-collapse:collapse;margin:.5rem 0;font-size:.92em}
.ev-figures th,.ev-figures td,.ev-table th,.ev-table td{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
.ev-table caption{text-align:left;font-weight:bold;padding:.2rem 0}
.ev-num{text-align:right;font-variant-numeric:tabular-nums}
.ev-dir{color:#777;font-size:.85em}
.ev-fnote td{color:#666;font-size:.85em}
.ev-item{border:1px solid #e3e3ea;border-radius:6px;padding:.6rem .8rem;margin:.8rem 0;background:#fcfcfe}
.ev-item h4,.ev-item h5{margin:.1rem 0 .4rem}
.ev-fields,.ev-labels{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;margin:.3rem 0}
.ev-fields dt,.ev-labels dt{color:#666}
.ev-fields dd,.ev-labels dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.ev-panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:.8rem}
.ev-panel{margin:0;min-width:0;border:1px solid #eee;padding:.4rem;background:#fff}
.ev-panel:only-child{grid-column:1/-1;display:grid;grid-template-columns:minmax(160px,300px) 1fr;gap:0 1rem}
.ev-panel:only-child>*{grid-column:2}
.ev-panel:only-child>img,.ev-panel:only-child>.ev-noimage{grid-column:1;grid-row:1/span 20}
.ev-panel img{width:100%;max-width:360px;height:auto;display:block;border:1px solid #ddd}
.ev-panel figcaption{font-weight:bold;margin:.3rem 0}
.ev-noimage{color:#888;border:1px dashed #bbb;padding:1rem;text-align:center}
.ev-group{margin:.3rem 0}
.ev-group-label{margin:.2rem 0;color:#335;font-size:.9em;font-weight:bold}
.ev-answers{list-style:none;padding:0;margin:.2rem 0}
.ev-answers li{margin:.2rem 0}
.ev-answers pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.1rem 0;background:#f5f5f8;padding:.2rem .4rem;
 max-height:9rem;overflow:auto;font-size:.85em}
.ev-plots{display:flex;flex-wrap:wrap;gap:.8rem}
.ev-plot{margin:0;max-width:460px}
.ev-plot img{max-width:100%;height:auto;border:1px solid #ddd}
.ev-plot figcaption{color:#555;font-size:.85em}
.ev-lines{margin:.2rem 0;padding-left:1.1rem;font-size:.9em}
.ev-who{color:#555;font-size:.85em}
.ev-label{background:#eef;border-radius:3px;padding:0 .3rem;font-size:.85em}
"""


def fmt(value: Any) -> str:
    """A cell or figure value as a page prints it: three decimals for a float, a dash for None."""
    if value is None:
        return MISSING
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def interval_text(interval: Interval | None) -> str:
    """An interval as ``[0.120, 0.340] (bootstrap over 40 sentences)``, or why there is none."""
    if interval is None:
        return NO_INTERVAL
    if not interval.defined:
        return f"no interval ({interval.reason or 'not computed'})"
    how = f"{interval.method} over {interval.n} {interval.unit}s" if interval.method else f"over {interval.n}"
    return f"{interval.text()} ({how})"


@functools.cache
def environment() -> jinja2.Environment:
    """The Jinja2 environment of evidence pages: autoescape on, undefined names an error."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["interval"] = interval_text
    return env


def render_evidence(
    evidence: ProtocolEvidence, resolve: ImageResolver, prefix: str = "ev", level: int = 3, lazy: bool = False
) -> Markup:
    """One protocol's evidence as an HTML fragment (every string escaped), images through ``resolve``;
    element ids start with ``prefix`` (two renderings on one page need two), headings start at ``level``,
    and ``lazy`` images load when scrolled to (for a server; inline images gain nothing from it)."""
    html = (
        environment()
        .get_template("evidence.html.j2")
        .render(evidence=evidence, resolve=resolve, prefix=prefix, level=level, lazy=lazy)
    )
    return Markup(html)  # rendered with autoescape: every value in it is escaped
