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
    theta = report.config.theta
    flags = f"# S >= {theta}"
    models = report.models
    lines = [f"# VISTA audit: {len(models)} models", "", "## Per model (Table 14)", ""]
    lines += _table(
        [
            "Model",
            "Mean S [95% CI]",
            "Max S",
            flags,
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
    lines += ["", note] if note else []
    if report.refusal_kinds:
        lines += ["", "## Refusals by demographic group, % of responses (Table 15, appendix C.2)", ""]
        lines += _table(
            ["Model", "Group", *(_KIND_HEADERS[k] for k in TABLE15_KINDS), "Refusal", "Responses"],
            [
                [m, g, *(_pct(share) for share in (v.empty, v.disclaimer, v.decline)), _pct(v.refusal), v.responses]
                for m, groups in report.refusal_kinds.items()
                for g, v in groups.items()
            ],
        )
    sweeps = report.sweeps
    if sweeps.alpha:
        lines += ["", f"## Confidence weight alpha, theta = {theta} (Table 19)", ""]
        lines += _table(
            ["alpha", "Mean S", flags],
            [[a, f"{v.mean_suspicion:.3f}", v.flags] for a, v in sweeps.alpha.items()],
        )
    if sweeps.theta:
        lines += ["", f"## Flags by threshold theta, alpha = {report.config.alpha} (Table 21)", ""]
        lines += _table(
            ["theta", "Total", *models],
            [[t, v.flags, *(v.per_model[m] for m in models)] for t, v in sweeps.theta.items()],
        )
    k = sweeps.k
    lines += ["", f"## Samples per prompt k, subsampled from the stored k = {k.stored_k} (Table 23)", ""]
    if k.grid:
        lines += _table(
            ["k", "Mean SE", "Std(S)", flags, "Top-10 overlap", "Query cost"],
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
    if report.stability:
        lines += ["", "## Leave one peer out (appendix C.5)", ""]
        lines += _table(
            ["Left out", flags, "Top-10 overlap", "Top-20 overlap", "Flagged Jaccard"],
            [
                [m, v.flags, f"{v.top10_overlap:.2f}", f"{v.top20_overlap:.2f}", f"{v.flagged_jaccard:.2f}"]
                for m, v in report.stability.items()
            ],
        )
    return "\n".join(lines) + "\n"
