"""The short summary table printed at the end of a run or a re-score."""

from __future__ import annotations

from pathlib import Path

from harness.engine.settings import RunFlags
from harness.results.interval import Interval
from harness.results.metric_key import figures
from harness.results.schema import BaselineComparison, RunResults


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "-"
    return str(value)


def _interval_cells(interval: Interval | None) -> tuple[str, str]:
    """The 95% CI cell and its method cell: ``[0.120, 0.340]`` and ``clt, 8 docs``, or why there is none."""
    if interval is None or not interval.defined:
        return f"none: {(interval.reason if interval else None) or 'not computed'}", "-"
    return interval.text(), f"{interval.method}, {interval.n} {interval.unit}s"


def summary_table(run: RunResults, run_dir: Path | None = None) -> str:
    """A Markdown table: one row per task, metric and filter, with its 95% interval and the method that made
    it (or why there is none), n, errors and unparsed counts. Under it, a note for the `-` figures: those left
    empty because no answer could be parsed, and those the task scored on no sample, each saying where the
    samples are (``run_dir``, when the run was saved); and the flags that overrode the tasks' generation
    settings, so figures made under other settings say so."""
    header = "| Task | Metric | Filter | Value | Stderr | 95% CI | CI method | n | Errors | Unparsed |"
    lines = [header, "|" + "---|" * 10]
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
            ci, method = _interval_cells(run.intervals.get(task, {}).get(key))
            cells = [task, figure.metric, figure.filter, _fmt(value), _fmt(stderr), ci, method, n, errors, unparsed]
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
    for task, test in run.baseline.items():
        lines.append(_baseline_note(task, test))
    unpaired = [t for t in run.results if t not in run.baseline]
    if run.config.baseline is not None and unpaired:
        lines.append(
            f"\nBaseline {run.config.baseline}: no doc of {', '.join(unpaired)} has a score on both sides. As in "
            "lmms-eval, a doc's score is its figure named by the task's score_key (default `score`) or one whose "
            "name ends in `_score`; set score_key in the task to the metric to compare."
        )
    overridden = RunFlags.of_run(run.config).describe()
    if overridden:
        lines.append(f"\nSettings: run with {overridden}, not its tasks' own generation settings.")
    if run.provenance.model.smoke_test_model:
        lines.append("\nNote: this is a smoke-test model with random weights; its outputs and scores are meaningless.")
    return "\n".join(lines)


def _baseline_note(task: str, test: BaselineComparison) -> str:
    """One task's comparison with ``--baseline``: the paired difference, its interval and p-value, and power."""
    if test.mean_diff is None or test.ci_lower is None or test.ci_upper is None:
        diff = "no paired test (fewer than 2 docs)"
    else:
        diff = (
            f"difference {test.mean_diff:+.4f}, 95% CI [{test.ci_lower:.4f}, {test.ci_upper:.4f}] (paired t), "
            f"p = {_fmt(test.p_value)}"
        )
    note = f"\nBaseline {test.baseline}, {task}, {test.n} docs on both sides: {diff}"
    if test.power is not None:
        power = test.power
        note += (
            f"; power to detect {power['effect_size']:g}: {power['current_power']:.1%}, minimum detectable "
            f"difference {power['min_detectable_effect']:g}, docs needed for 80% power {power['min_n']}"
        )
    elif test.no_power:
        note += f"; no power analysis: {test.no_power}"
    return note + "."


def _listed(figures: dict[str, int]) -> str:
    """``"stealth_short (3) and stealth_long (4)"``: each task with its number of `-` figures."""
    parts = [f"{task} ({n})" for task, n in figures.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
