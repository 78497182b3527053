"""The short summary table printed at the end of a run or a re-score."""

from __future__ import annotations

from pathlib import Path

from harness.engine.settings import RunFlags
from harness.results.metric_key import figures
from harness.results.schema import RunResults


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "-"
    return str(value)


def summary_table(run: RunResults, run_dir: Path | None = None) -> str:
    """A Markdown table: one row per task, metric and filter, with n, errors and unparsed counts. Under it,
    a note for the `-` figures: those left empty because no answer could be parsed, and those the task
    scored on no sample, each saying where the samples are (``run_dir``, when the run was saved); and the
    flags that overrode the tasks' generation settings, so figures made under other settings say so."""
    header = "| Task | Metric | Filter | Value | Stderr | n | Errors | Unparsed |"
    lines = [header, "|" + "---|" * 8]
    unparsed_tasks: dict[str, int] = {}  # task -> its figures left empty by unparsed answers
    unscored_tasks: dict[str, int] = {}  # task -> its figures no scored sample has
    for task, values in {**run.results, **run.groups}.items():
        counts = run.counts.get(task)
        for figure, value in figures(values):
            key = figure.encoded
            stderr = values.get(figure.stderr.encoded, "N/A")
            n = counts.scored if counts else "-"
            errors = counts.errors if counts else "-"
            unparsed = counts.unparsed.get(key, 0) if counts else "-"
            if value is None and counts and counts.scored:
                empty = unparsed_tasks if counts.unparsed.get(key) else unscored_tasks
                empty[task] = empty.get(task, 0) + 1
            cells = [task, figure.metric, figure.filter, _fmt(value), _fmt(stderr), n, errors, unparsed]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    where = (
        f"samples_<task>.jsonl in {run_dir}"
        if run_dir is not None
        else "samples_<task>.jsonl of a run saved with --output"
    )
    if unparsed_tasks:
        lines.append(
            f"\nNote: the `-` figures of {_listed(unparsed_tasks)} have no value because none of the "
            "model's answers could be parsed for them (the Unparsed column counts those answers); "
            f"each sample's `responses` and `filtered` answer are in {where}."
        )
    if unscored_tasks:
        lines.append(
            f"\nNote: the `-` figures of {_listed(unscored_tasks)} have no value because the task's "
            "scoring gave them for no sample (a task leaves out a figure that does not apply to an "
            f"answer); each sample's `metrics` in {where} show what it scored."
        )
    overridden = RunFlags.of_run(run.config).describe()
    if overridden:
        lines.append(f"\nSettings: run with {overridden}, not its tasks' own generation settings.")
    if run.provenance.model.smoke_test_model:
        lines.append("\nNote: this is a smoke-test model with random weights; its outputs and scores are meaningless.")
    return "\n".join(lines)


def _listed(figures: dict[str, int]) -> str:
    """``"stealth_short (3) and stealth_long (4)"``: each task with its number of `-` figures."""
    parts = [f"{task} ({n})" for task, n in figures.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
