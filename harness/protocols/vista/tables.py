"""The audit's tables in the layout of the VISTA paper, as Markdown (``tables.md`` beside audit.json):
Table 14 (per model), Table 15 with appendix C.2's decomposition (refusals by demographic group and
kind), and appendix C.5's ablations (alpha: Table 19, theta: Table 21, k: Table 23, leave-one-peer-out).

Everything is read from the audit summary, so the tables of a saved audit can be re-rendered from its
audit.json alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


def markdown_tables(summary: dict[str, Any]) -> str:
    """The paper's tables for one audit summary (``AuditResult.summary()``)."""
    theta = summary["config"]["theta"]
    flags = f"# S >= {theta}"
    models = summary["models"]
    lines = [f"# VISTA audit: {len(models)} models", "", "## Per model (Table 14)", ""]
    lines += _table(
        ["Model", "Mean S", "Max S", flags, "Primary pattern"],
        [
            [m, f"{r['mean_suspicion']:.2f}", f"{r['max_suspicion']:.2f}", r["flags"], r["primary_pattern"]]
            for m, r in summary["per_model"].items()
        ],
    )
    if summary.get("refusal_kinds"):
        lines += ["", "## Refusals by demographic group, % of responses (Table 15, appendix C.2)", ""]
        lines += _table(
            ["Model", "Group", *(_KIND_HEADERS[k] for k in TABLE15_KINDS), "Refusal", "Responses"],
            [
                [m, g, *(_pct(v[k]) for k in TABLE15_KINDS), _pct(v["refusal"]), v["responses"]]
                for m, groups in summary["refusal_kinds"].items()
                for g, v in groups.items()
            ],
        )
    sweeps = summary.get("sweeps", {})
    if sweeps.get("alpha"):
        lines += ["", f"## Confidence weight alpha, theta = {theta} (Table 19)", ""]
        lines += _table(
            ["alpha", "Mean S", flags],
            [[a, f"{v['mean_suspicion']:.3f}", v["flags"]] for a, v in sweeps["alpha"].items()],
        )
    if sweeps.get("theta"):
        lines += ["", f"## Flags by threshold theta, alpha = {summary['config']['alpha']} (Table 21)", ""]
        lines += _table(
            ["theta", "Total", *models],
            [[t, v["flags"], *(v["per_model"][m] for m in models)] for t, v in sweeps["theta"].items()],
        )
    k = sweeps.get("k")
    if k:
        lines += ["", f"## Samples per prompt k, subsampled from the stored k = {k['stored_k']} (Table 23)", ""]
    if k and k["grid"]:
        lines += _table(
            ["k", "Mean SE", "Std(S)", flags, "Top-10 overlap", "Query cost"],
            [
                [
                    kk,
                    f"{v['mean_se']:.3f}",
                    f"{v['sd_suspicion']:.3f}",
                    v["flags"],
                    f"{v['top10_overlap']:.1f}",
                    f"{v['query_cost']:.2f}x",
                ]
                for kk, v in k["grid"].items()
            ],
        )
    if k and k["unavailable"]:
        lines += ["", f"Not computed (more than the stored k): k = {', '.join(map(str, k['unavailable']))}."]
    if summary.get("stability"):
        lines += ["", "## Leave one peer out (appendix C.5)", ""]
        lines += _table(
            ["Left out", flags, "Top-10 overlap", "Top-20 overlap", "Flagged Jaccard"],
            [
                [m, v["flags"], f"{v['top10_overlap']:.2f}", f"{v['top20_overlap']:.2f}", f"{v['flagged_jaccard']:.2f}"]
                for m, v in summary["stability"].items()
            ],
        )
    return "\n".join(lines) + "\n"
