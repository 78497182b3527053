"""The audit's tables in the layout of the VISTA paper, as Markdown (``tables.md`` beside audit.json):
Table 14 (per model), Table 15 with appendix C.2's decomposition (refusals by demographic group and
kind), and appendix C.5's ablations (alpha: Table 19, theta: Table 21, k: Table 23, leave-one-peer-out).

Everything is read from the audit report, so the tables of a saved audit can be re-rendered from its
audit.json alone (``VistaAuditReport.read``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.protocols.audit_report import interval_note, with_interval
from harness.protocols.vista.audit_report import VistaAuditReport
from harness.protocols.vista.refusal import TABLE15_KINDS

_KIND_HEADERS = {"empty": "Empty", "disclaimer": "Safety disclaimer", "decline": "Explicit decline"}


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]


def _pct(share: float) -> str:
    return f"{100 * share:.1f}"


def markdown_tables(report: VistaAuditReport) -> str:
    """The paper's tables for one audit report (``AuditResult.report``, or a saved audit.json read back)."""
    lines = [f"# VISTA audit: {len(report.models)} models", "", "## Per model (Table 14)", ""]
    for section in (_per_model, _refusals, _alpha_sweep, _theta_sweep, _k_sweep, _stability):
        lines += section(report)
    return "\n".join(lines) + "\n"


def _section(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A titled table after a blank line."""
    return ["", title, "", *_table(header, rows)]


def _flags_header(report: VistaAuditReport) -> str:
    return f"# S >= {report.config.theta}"


def _per_model(report: VistaAuditReport) -> list[str]:
    """Table 14: suspicion, flags, detection score and primary pattern per model, with the interval note."""
    lines = _table(
        [
            "Model",
            "Mean S [95% CI]",
            "Max S",
            _flags_header(report),
            "Flagged share [95% CI]",
            "Detection score [95% CI]",
            "Primary pattern",
        ],
        [
            [
                m,
                with_interval(r.mean_suspicion, r.interval("mean_suspicion"), 2),
                f"{r.max_suspicion:.2f}",
                r.flags,
                with_interval(r.flags / r.queries if r.queries else None, r.interval("flag_share"), 2),
                with_interval(r.detection.score, r.interval("detection_score"), 2),
                r.primary_pattern,
            ]
            for m, r in report.per_model.items()
        ],
    )
    note = interval_note([r.intervals.mean_suspicion for r in report.per_model.values() if r.intervals])
    return lines + (["", note] if note else [])


def _refusals(report: VistaAuditReport) -> list[str]:
    """Table 15: refusal kinds per model and demographic group (none without refusal records)."""
    if not report.refusal_kinds:
        return []
    return _section(
        "## Refusals by demographic group, % of responses (Table 15, appendix C.2)",
        ["Model", "Group", *(_KIND_HEADERS[k] for k in TABLE15_KINDS), "Refusal", "Responses"],
        [
            [m, g, *(_pct(share) for share in (v.empty, v.disclaimer, v.decline)), _pct(v.refusal), v.responses]
            for m, groups in report.refusal_kinds.items()
            for g, v in groups.items()
        ],
    )


def _alpha_sweep(report: VistaAuditReport) -> list[str]:
    """Table 19: mean suspicion and flags by confidence weight alpha."""
    if not report.sweeps.alpha:
        return []
    return _section(
        f"## Confidence weight alpha, theta = {report.config.theta} (Table 19)",
        ["alpha", "Mean S", _flags_header(report)],
        [[a, f"{v.mean_suspicion:.3f}", v.flags] for a, v in report.sweeps.alpha.items()],
    )


def _theta_sweep(report: VistaAuditReport) -> list[str]:
    """Table 21: flags by threshold theta, in total and per model."""
    if not report.sweeps.theta:
        return []
    return _section(
        f"## Flags by threshold theta, alpha = {report.config.alpha} (Table 21)",
        ["theta", "Total", *report.models],
        [[t, v.flags, *(v.per_model[m] for m in report.models)] for t, v in report.sweeps.theta.items()],
    )


def _k_sweep(report: VistaAuditReport) -> list[str]:
    """Table 23: samples per prompt k, subsampled from the stored k, and the k that could not be computed."""
    k = report.sweeps.k
    lines = ["", f"## Samples per prompt k, subsampled from the stored k = {k.stored_k} (Table 23)", ""]
    if k.grid:
        lines += _table(
            ["k", "Mean SE", "Std(S)", _flags_header(report), "Top-10 overlap", "Query cost"],
            [
                [
                    kk,
                    f"{v.mean_se:.3f}",
                    f"{v.sd_suspicion:.3f}",
                    v.flags,
                    f"{v.top10_overlap:.1f}",
                    f"{v.query_cost:.2f}x",
                ]
                for kk, v in k.grid.items()
            ],
        )
    if k.unavailable:
        lines += ["", f"Not computed (more than the stored k): k = {', '.join(map(str, k.unavailable))}."]
    return lines


def _stability(report: VistaAuditReport) -> list[str]:
    """Appendix C.5: leave one peer out."""
    if not report.stability:
        return []
    return _section(
        "## Leave one peer out (appendix C.5)",
        ["Left out", _flags_header(report), "Top-10 overlap", "Top-20 overlap", "Flagged Jaccard"],
        [
            [m, v.flags, f"{v.top10_overlap:.2f}", f"{v.top20_overlap:.2f}", f"{v.flagged_jaccard:.2f}"]
            for m, v in report.stability.items()
        ],
    )
