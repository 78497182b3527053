"""``harness compare``: two or more runs (models) on the same docs, per task and metric.

Each pair of runs (all pairs, or each run against the first) is compared on every task both ran and every
metric with per-doc numbers, on the docs both scored (:mod:`harness.results.pairing`), with the paired
statistics of :mod:`harness.metrics.paired`: the difference mean(A) - mean(B), its paired-bootstrap 95%
interval (over the task's ``cluster_key`` units when it declares one), McNemar's mid-p for 0/1 scores or the
paired t-test (clustered z-test with clusters), the minimum detectable effect, and the docs whose score
changed. All the comparisons of one call are one family: their p-values are corrected together with
Benjamini-Yekutieli (valid under any dependence, as tests sharing a model's answers are).
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.disk import write_atomic
from harness.errors import HarnessError
from harness.metrics.bootstrap import N_RESAMPLES, SEED
from harness.metrics.multiple_testing import FDR, benjamini_yekutieli
from harness.metrics.paired import ALPHA, POWER, PairedStats, compare_paired
from harness.results.metric_key import MetricKey, label_of
from harness.results.pairing import PairedDocs, RunSamples, numeric_metrics, pair_docs, read_run_samples
from harness.results.schema import SampleRecord
from harness.results.spreadsheet import spreadsheet_safe

SCHEMA_VERSION = 1
Pairing = Literal["all_pairs", "vs_first"]
ANSWER_CHARS = 200  # of an answer written to changed.csv


class ChangedDoc(BaseModel):
    """A doc whose score differs between the two models."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_id: int
    doc_hash: str
    value_a: float
    value_b: float
    answer_a: str = Field(description="A's filtered answer (cut to ANSWER_CHARS)")
    answer_b: str = Field(description="B's filtered answer (cut to ANSWER_CHARS)")


class MetricComparison(BaseModel):
    """Model A against model B on one metric of one task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_a: str
    model_b: str
    task: str
    metric: str = Field(description='"metric,filter"')
    higher_is_better: bool | None
    cluster_key: str | None = Field(description="the task's unit when its docs share one; else each doc is one")
    dropped: int = Field(description="docs of either run not scored in both (missing, errored, unparsed)")
    stats: PairedStats
    p_adjusted: float | None = Field(description="Benjamini-Yekutieli over every comparison of the call")
    significant: bool = Field(description="p_adjusted below the false discovery rate")
    changed: list[ChangedDoc] = Field(description="docs whose score differs, by doc id")
    answers_changed: int = Field(description="docs whose filtered answer differs")


class RunRef(BaseModel):
    """A compared run: its label in the tables, its model and its folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    model: str
    path: str | None


class CompareReport(BaseModel):
    """Everything one ``harness compare`` found (``compare.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    runs: list[RunRef]
    pairing: Pairing
    alpha: float = ALPHA
    power: float = POWER
    fdr: float = Field(default=FDR, description="the false discovery rate of the Benjamini-Yekutieli correction")
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    comparisons: list[MetricComparison]
    notes: list[str] = Field(default_factory=list, description="what was not compared, and why")

    def write(self, out_dir: Path) -> list[Path]:
        """``compare.json``, ``compare.csv`` (a row per comparison) and ``changed.csv`` (a row per changed
        doc, with both answers) in ``out_dir``; the paths written."""
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / "compare.json", out_dir / "compare.csv", out_dir / "changed.csv"]
        write_atomic(paths[0], self.model_dump_json(indent=2) + "\n")
        write_atomic(paths[1], comparisons_csv(self.comparisons))
        write_atomic(paths[2], changed_csv(self.comparisons))
        return paths


@dataclass(frozen=True)
class CompareOptions:
    """What ``harness compare`` was asked: the run folders, the pairing and the statistics' settings."""

    run_dirs: Sequence[Path]
    pairing: Pairing = "all_pairs"
    tasks: list[str] | None = None
    fdr: float = FDR
    n_resamples: int = N_RESAMPLES
    seed: int = SEED


def labels_of(runs: Sequence[tuple[str, Path]]) -> list[str]:
    """Each run's label: its model, and where two runs share a model, the model and the run's folder name."""
    models = [m for m, _ in runs]
    return [m if models.count(m) == 1 else f"{m} ({p.name})" for m, p in runs]


def compare_runs(options: CompareOptions) -> CompareReport:
    """Read the runs and compare them (:func:`compare_samples`)."""
    if len(options.run_dirs) < 2:
        raise HarnessError("harness compare needs two or more run folders")
    loaded = [read_run_samples(Path(d), tasks=options.tasks) for d in options.run_dirs]
    labels = labels_of([(r.model, Path(r.path or "")) for r in loaded])
    runs = [
        RunSamples(lb, r.model, r.samples, r.configs, r.higher_is_better, r.path)
        for lb, r in zip(labels, loaded, strict=True)
    ]
    return compare_samples(runs, options.pairing, options.fdr, options.n_resamples, options.seed)


def compare_samples(
    runs: Sequence[RunSamples],
    pairing: Pairing = "all_pairs",
    fdr: float = FDR,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> CompareReport:
    """Every pair of ``runs`` (or each against the first) on every task and metric they share, the
    p-values corrected together (Benjamini-Yekutieli at ``fdr``)."""
    pairs = (
        list(itertools.combinations(runs, 2)) if pairing == "all_pairs" else [(runs[0], other) for other in runs[1:]]
    )
    found: list[MetricComparison] = []
    notes: list[str] = []
    for a, b in pairs:
        found += _compare_pair(a, b, notes, n_resamples, seed)
    tested = [i for i, c in enumerate(found) if c.stats.p_value is not None]
    rejected, adjusted = benjamini_yekutieli([found[i].stats.p_value or 0.0 for i in tested], fdr)
    corrected = dict(zip(tested, zip(adjusted, rejected, strict=True), strict=True))
    comparisons = [
        c.model_copy(update={"p_adjusted": corrected[i][0], "significant": corrected[i][1]}) if i in corrected else c
        for i, c in enumerate(found)
    ]
    return CompareReport(
        runs=[RunRef(label=r.label, model=r.model, path=r.path) for r in runs],
        pairing=pairing,
        fdr=fdr,
        n_resamples=n_resamples,
        seed=seed,
        comparisons=comparisons,
        notes=list(dict.fromkeys(notes)),  # a run's note is said once, not once per pair
    )


def _compare_pair(
    a: RunSamples, b: RunSamples, notes: list[str], n_resamples: int, seed: int
) -> list[MetricComparison]:
    """One pair's comparisons, task by task and metric by metric; what cannot be compared goes to ``notes``."""
    out = []
    for task in [t for t in a.samples if t not in b.samples]:
        notes.append(f"{task}: run by {a.label} only; not compared with {b.label}")
    for task in [t for t in b.samples if t not in a.samples]:
        notes.append(f"{task}: run by {b.label} only; not compared with {a.label}")
    for task in [t for t in a.samples if t in b.samples]:
        records_a, records_b = a.samples[task], b.samples[task]
        score_key, cluster_key = a.score_key(task), a.cluster_key(task)
        numeric_a, numeric_b = numeric_metrics(records_a, score_key), numeric_metrics(records_b, score_key)
        metrics = [m for m in numeric_a if m in numeric_b]
        for metric in sorted(_metric_keys(records_a) & _metric_keys(records_b) - set(metrics)):
            why = _why_unpaired(metric, ((a.label, records_a, numeric_a), (b.label, records_b, numeric_b)))
            notes.append(f"{task} {label_of(metric)}: {why}; not compared")
        for metric in metrics:
            docs = pair_docs(task, metric, records_a, records_b, (a.label, b.label), cluster_key, score_key)
            if not docs.doc_ids:
                notes.append(f"{task} {label_of(metric)}: no doc scored by both {a.label} and {b.label}")
                continue
            stats = compare_paired(docs.a, docs.b, docs.clusters, cluster_key or "doc", n_resamples, seed)
            name = MetricKey.parse(metric)
            better = a.higher_is_better.get(task, {}).get(name.metric if name else metric)
            changed = _changed(docs)
            out.append(
                MetricComparison(
                    model_a=a.label,
                    model_b=b.label,
                    task=task,
                    metric=metric,
                    higher_is_better=better,
                    cluster_key=cluster_key,
                    dropped=docs.dropped,
                    stats=stats,
                    p_adjusted=None,
                    significant=False,
                    changed=changed,
                    answers_changed=sum(x != y for x, y in zip(docs.answers_a, docs.answers_b, strict=True)),
                )
            )
    return out


def _why_unpaired(metric: str, runs: Sequence[tuple[str, Sequence[SampleRecord], list[str]]]) -> str:
    """Why a metric has no per-doc numbers to pair: a run none of whose answers the metric could parse,
    else per-doc values that are not numbers (the figure is aggregated over docs)."""
    for label, records, numeric in runs:
        if metric not in numeric and any(metric in r.unparsed for r in records):
            return f"none of {label}'s answers could be parsed for it"
    return "its per-doc values are not numbers (a figure aggregated over docs)"


def _metric_keys(records: Sequence[SampleRecord]) -> set[str]:
    return {key for record in records for key in record.metrics}


def _changed(docs: PairedDocs) -> list[ChangedDoc]:
    """The docs whose score differs, with both answers."""
    rows = zip(docs.doc_ids, docs.doc_hashes, docs.a, docs.b, docs.answers_a, docs.answers_b, strict=True)
    return [
        ChangedDoc(doc_id=i, doc_hash=h, value_a=va, value_b=vb, answer_a=_answer(x), answer_b=_answer(y))
        for i, h, va, vb, x, y in rows
        if va != vb
    ]


_CSV_FIELDS = (
    "model_a model_b task metric n units dropped mean_a mean_b difference ci_low ci_high ci_method ci_unit "
    "test statistic p_value p_exact p_adjusted significant standard_error mde a_better b_better changed "
    "answers_changed"
).split()


def comparisons_csv(comparisons: Sequence[MetricComparison]) -> str:
    """A row per comparison: the models, task, metric, n, the difference and its interval, the test, p,
    adjusted p, MDE and the changed docs' count; text cells made safe for spreadsheets."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(_CSV_FIELDS)
    for c in comparisons:
        s, ci = c.stats, c.stats.interval
        row: list[Any] = [c.model_a, c.model_b, c.task, c.metric, s.n, s.units, c.dropped, s.mean_a, s.mean_b]
        row += [s.difference, ci.low, ci.high, ci.method, ci.unit, s.test, s.statistic, s.p_value, s.p_exact]
        row += [c.p_adjusted, c.significant, s.standard_error, s.mde, s.a_better, s.b_better, len(c.changed)]
        row.append(c.answers_changed)
        writer.writerow([spreadsheet_safe(v) for v in row])
    return buffer.getvalue()


def _answer(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + "..."


def changed_csv(comparisons: Sequence[MetricComparison]) -> str:
    """A row per doc whose score changed: the pair, task, metric, doc, both scores and both filtered answers
    (model text, made safe for spreadsheets)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["model_a", "model_b", "task", "metric", *ChangedDoc.model_fields])
    for c in comparisons:
        for doc in c.changed:
            row = [c.model_a, c.model_b, c.task, c.metric, *doc.model_dump().values()]
            writer.writerow([spreadsheet_safe(v) for v in row])
    return buffer.getvalue()


LISTED_DOCS = 12  # changed docs named per comparison in the printed table's notes


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _doc_list(ids: list[int]) -> str:
    shown = ", ".join(map(str, ids[:LISTED_DOCS]))
    return shown + (f", ... ({len(ids) - LISTED_DOCS} more)" if len(ids) > LISTED_DOCS else "")


def compare_table(report: CompareReport) -> str:
    """The printed comparison: a Markdown row per pair, task and metric, then which docs changed score
    (doc ids, by which model scored higher), the notes, and what the columns mean."""
    header = (
        "| A | B | Task | Metric | n | Dropped | Mean A | Mean B | A - B | 95% CI | Test | p | p (BY) | MDE | Changed |"
    )
    lines = [header, "|" + "---|" * 15]
    changes = []
    for c in report.comparisons:
        s = c.stats
        cells = [c.model_a, c.model_b, c.task, label_of(c.metric), s.n, c.dropped, _num(s.mean_a), _num(s.mean_b)]
        cells += [_num(s.difference), s.interval.text(), s.test, _p(s.p_value), _p(c.p_adjusted), _num(s.mde)]
        cells.append(len(c.changed))
        lines.append("| " + " | ".join(str(x) for x in cells) + " |")
        if c.changed:
            higher_a = [d.doc_id for d in c.changed if d.value_a > d.value_b]
            higher_b = [d.doc_id for d in c.changed if d.value_a < d.value_b]
            parts = [f"{c.model_a} higher on {_doc_list(higher_a)}"] if higher_a else []
            parts += [f"{c.model_b} higher on {_doc_list(higher_b)}"] if higher_b else []
            changes.append(
                f"- {c.model_a} vs {c.model_b}, {c.task} {label_of(c.metric)}: {len(c.changed)} doc(s): "
                + "; ".join(parts)
            )
    if not report.comparisons:
        lines.append("| " + " | ".join(["-"] * 15) + " |")
    if changes:
        lines += ["", "Docs that changed score:", *changes]
    if report.notes:
        lines += ["", "Not compared:", *(f"- {note}" for note in report.notes)]
    lines += [
        "",
        f"A - B: mean(A) - mean(B) on the docs both scored; 95% CI: paired bootstrap ({report.n_resamples} "
        "resamples) over docs, or over the task's cluster_key units; Test: mcnemar_midp (0/1 scores), "
        "paired_t, or clustered_z (docs sharing a unit); p (BY): Benjamini-Yekutieli over all "
        f"{len(report.comparisons)} comparison(s); MDE: the smallest difference this n detects at alpha "
        f"{report.alpha:g} with power {report.power:g}.",
    ]
    return "\n".join(lines)
