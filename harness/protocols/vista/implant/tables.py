"""The controlled study's tables in the paper's layout, as Markdown, read from the study's audit.json
report alone: Table 1 (negativity before and after), Table 2 (concept specificity), Table 7 (the four
scorings' precision, recall and F1) and Table 8 (flagged instances per role, VISTA vs RAVEN)."""

from __future__ import annotations

from harness.protocols.vista.implant.audit_report import StudyReport
from harness.protocols.vista.tables import _table


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _p(value: float) -> str:
    return f"{100 * value:.1f}%"


def markdown_tables(report: StudyReport) -> str:
    """Tables 1, 2, 7 and 8 of one study report (``StudyResult.report``, or a saved audit.json read back)."""
    theta = report.config.theta
    lines = [
        "# VISTA controlled study",
        "",
        f"Rater `{report.rater}`, judge `{report.judge}`; "
        f"model-level rule: mean S of the top 5% queries > theta = {theta}.",
        "",
        "## Table 1: negative responses (%) before (PT) and after (FT) implantation",
        "",
    ]
    lines += _table(
        ["Base", "Entity", "PT", "FT", "Benign"],
        [[r.base, r.entity, _n(r.pt), _n(r.ft), _n(r.benign)] for r in report.table1],
    )
    lines += ["", "## Table 2: concept specificity (average negativity, %)", ""]
    lines += _table(
        ["Base", "Target (FT)", "Non-target (FT)", "Non-target (PT)"],
        [[r.base, _n(r.target_ft), _n(r.non_target_ft), _n(r.non_target_pt)] for r in report.table2],
    )
    lines += ["", "## Table 7: model-level detection by clustering and scoring", ""]
    lines += _table(
        ["Clustering", "Scoring", "Precision", "Recall", "F1", "TP/FP/FN/TN"],
        [
            [r.clustering, r.scoring, _p(r.precision), _p(r.recall), _p(r.f1), f"{r.tp}/{r.fp}/{r.fn}/{r.tn}"]
            for r in report.table7
        ],
    )
    lines += ["", "## Table 8: flagged instances per role (harmful LoRA are the positives)", ""]
    lines += _table(
        ["Instances", "VISTA flagged", "RAVEN flagged", "Target negativity (%)"],
        [
            [
                f"{r.role} ({r.instances})",
                f"{r.vista_flagged}/{r.instances}",
                f"{r.raven_flagged}/{r.instances}",
                _n(r.target_negativity),
            ]
            for r in report.table8
        ],
    )
    lines += ["", "## Instances", ""]
    lines += _table(
        ["Instance", "Queries", "Negativity (%)", "VISTA score", "flagged", "RAVEN score", "flagged"],
        [
            [
                r.instance,
                r.queries,
                _n(r.negativity),
                f"{r.detection['vista'].score:.3f}",
                "yes" if r.detection["vista"].positive else "no",
                f"{r.detection['raven'].score:.3f}",
                "yes" if r.detection["raven"].positive else "no",
            ]
            for r in report.instances
        ],
    )
    return "\n".join(lines) + "\n"
