"""The short summary table printed at the end of a run or a re-score."""

from __future__ import annotations

from harness.results.schema import RunResults


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "-"
    return str(value)


def summary_table(run: RunResults) -> str:
    """A Markdown table: one row per task, metric and filter, with n, errors and unparsed counts."""
    header = "| Task | Metric | Filter | Value | Stderr | n | Errors | Unparsed |"
    lines = [header, "|" + "---|" * 8]
    for task, values in {**run.results, **run.groups}.items():
        counts = run.counts.get(task)
        for key, value in values.items():
            if key == "alias" or "_stderr," in key or "," not in key:
                continue
            metric, filt = key.split(",", 1)
            stderr = values.get(f"{metric}_stderr,{filt}", "N/A")
            n = counts.scored if counts else "-"
            errors = counts.errors if counts else "-"
            unparsed = counts.unparsed.get(key, 0) if counts else "-"
            cells = [task, metric, filt, _fmt(value), _fmt(stderr), n, errors, unparsed]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    if run.provenance.model.smoke_test_model:
        lines.append("\nNote: this is a smoke-test model with random weights; its outputs and scores are meaningless.")
    return "\n".join(lines)
