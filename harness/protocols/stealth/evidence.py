"""The Stealth Prompt Testset's evidence: its most biased conditions (B_c per condition with its interval,
from the sentiment tasks' reports) and, for the sentences whose label moved most with styling, every
condition of one sentence as a grid of its rendered images with the model's answer and parsed label."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from harness.protocols.evidence import (
    Answer,
    EvidenceFigure,
    EvidenceInput,
    ImageRef,
    Item,
    LoadedRun,
    Panel,
    ProtocolEvidence,
    ReferenceValue,
    Section,
    Table,
    bounded,
    clip,
    figure_interval,
    figure_value,
    image_of,
    prompt_text,
    references_for,
)
from harness.protocols.stealth.rows import StealthRow
from harness.protocols.stealth.sentiment_bias import BASELINE, parse_sentiment
from harness.results.interval import Interval
from harness.results.schema import SampleRecord

SENTIMENT_TASKS = ("stealth_short", "stealth_long")
PAPER = "Seeing Red, Thinking Bad: Color Bias in Vision Language Models"
#: The short set's maximum biases and Total Range the paper gives per model (Table 1, as its text reads it).
REFERENCES: tuple[ReferenceValue, ...] = (
    ReferenceValue(
        figure="total_range", label="Total Range", paper_model="Qwen2-VL-7B", value=0.90, paper=PAPER, where="Table 1"
    ),
    ReferenceValue(
        figure="max_positive_bias",
        label="max positive bias",
        paper_model="Qwen2-VL-7B",
        value=0.42,
        paper=PAPER,
        where="Table 1",
    ),
    ReferenceValue(
        figure="max_negative_bias",
        label="max negative bias",
        paper_model="Qwen2-VL-7B",
        value=-0.48,
        paper=PAPER,
        where="Table 1",
    ),
    ReferenceValue(
        figure="total_range", label="Total Range", paper_model="IDEFICS2-8B", value=0.52, paper=PAPER, where="Table 1"
    ),
)
#: The most conditions of one sentence shown (the baseline, then the most biased): a full sentence has 37.
PANELS_PER_SENTENCE = 9


#: The report's headline figures: (key, label, higher is better).
BIAS_FIGURES = (
    ("total_range", "Total Range", False),
    ("color_bias_range", "Color Bias Range", False),
    ("max_positive_bias", "max positive bias", False),
    ("max_negative_bias", "max negative bias", True),
)


def _bias_section(task: str, run: LoadedRun, report: Mapping[str, Any], limit: int) -> Section:
    """The task report's range figures and its conditions ranked by |B_c|, flagged where the interval excludes 0."""
    n = int(report.get("sentences") or 0)
    ranked = _ranked_conditions(report, n)
    shifted = [c for c, _, iv in ranked if iv is not None and iv.defined and (iv.low or 0) * (iv.high or 0) > 0]
    rows: list[list[str | float | int | None]] = [
        [c, v if isinstance(v, float) else None, iv.text() if iv else "no interval recorded"] for c, v, iv in ranked
    ]
    return Section(
        key=f"{task}-bias",
        title=f"{task}: the most biased conditions ({run.model})",
        summary=(
            "B_c: the mean change of the sentiment score (POSITIVE +1, NEUTRAL 0, NEGATIVE -1) from the all-black "
            f"baseline when the words are styled by condition c, over {n} sentences whose labels parsed."
            if n
            else str(
                report.get("plot_not_drawn") or "No sentence had a parsed label under the baseline and a condition."
            )
        ),
        flag=(
            f"{len(shifted)} condition(s) shift the sentiment label, their 95% interval excluding 0: "
            + ", ".join(shifted[:5])
            if shifted
            else None
        ),
        figures=_bias_figures(report, n),
        tables=[
            Table(
                title="B_c by condition, largest first",
                columns=["condition", "B_c", "95% interval"],
                rows=rows[: limit * 2],
            )
        ]
        if rows
        else [],
    )


def _bias_figures(report: Mapping[str, Any], n: int) -> list[EvidenceFigure]:
    """The :data:`BIAS_FIGURES` the report holds, each with its interval and the condition it was found at."""
    figures = []
    for key, label, better in BIAS_FIGURES:
        figure = report.get(key)
        if isinstance(figure, Mapping):
            condition = figure.get("condition")
            figures.append(
                EvidenceFigure(
                    key=key,
                    label=label,
                    value=figure_value(figure.get("value")),
                    interval=_interval_of(figure, n),
                    n=n,
                    higher_is_better=better,
                    note=f"condition: {condition}" if isinstance(condition, str) else None,
                )
            )
    return figures


def _ranked_conditions(report: Mapping[str, Any], n: int) -> list[tuple[str, Any, Interval | None]]:
    """(condition, B_c, interval) for each condition of the report, largest |B_c| first."""
    by_condition = report.get("by_condition")
    return sorted(
        (
            (str(c), figure_value(f.get("value")), _interval_of(f, n))
            for c, f in (by_condition.items() if isinstance(by_condition, Mapping) else ())
            if isinstance(f, Mapping)
        ),
        key=lambda row: -abs(row[1]) if isinstance(row[1], float) else 0.0,
    )


def _interval_of(figure: Mapping[str, Any], n: int) -> Interval | None:
    """The figure's recorded interval; the report's ci95 is a bootstrap resampling sentences."""
    return figure_interval(figure, "cluster_bootstrap", n, "sentence")


def _label(record: SampleRecord) -> str:
    if record.error is not None:
        return f"error: {record.error}"
    return parse_sentiment(record.responses[0] if record.responses else "") or "unparsed"


def _sentence_items(
    task: str, pairs: list[tuple[LoadedRun, SampleRecord]], order: Mapping[str, float], limit: int
) -> tuple[list[Item], int]:
    """One item per sentence, those whose labels differ most across conditions first."""
    by_sentence: dict[str, list[tuple[LoadedRun, SampleRecord]]] = defaultdict(list)
    for run, record in pairs:
        by_sentence[str(StealthRow.read(record.doc, "sample_id", record.doc_id))].append((run, record))

    def spread(rows: list[tuple[LoadedRun, SampleRecord]]) -> tuple[int, int]:
        labels = {_label(r) for _, r in rows}
        return (-len(labels - {"unparsed"}), -len(rows))

    items = [
        _sentence_item(task, sample_id, rows, order)
        for sample_id, rows in sorted(by_sentence.items(), key=lambda kv: (spread(kv[1]), kv[0]))
    ]
    return bounded(items, limit)


def _sentence_item(
    task: str, sample_id: str, rows: list[tuple[LoadedRun, SampleRecord]], order: Mapping[str, float]
) -> Item:
    """A sentence under its conditions: the baseline first, then the conditions by |B_c|; the label counts."""
    rows.sort(
        key=lambda rr: (
            rr[1].doc.get("condition") != BASELINE,
            -abs(order.get(str(rr[1].doc.get("condition")), 0.0)),
        )
    )
    labels = [_label(r) for _, r in rows]
    first = rows[0][1]
    counts = ", ".join(f"{label} x{labels.count(label)}" for label in sorted(set(labels)))
    return Item(
        title=f"sentence {sample_id}",
        note=f"labels over its {len(rows)} conditions: {counts}"
        + (f"; {len(rows) - PANELS_PER_SENTENCE} more conditions not shown" if len(rows) > PANELS_PER_SENTENCE else ""),
        fields={
            "text": clip(StealthRow.read(first.doc, "text", "")),
            "polarity": str(
                StealthRow.read(first.doc, "polarity", None) or StealthRow.read(first.doc, "first_half_polarity", None)
            ),
            "prompt": prompt_text(first),
        },
        panels=[_condition_panel(task, run, record, order) for run, record in rows[:PANELS_PER_SENTENCE]],
    )


def _condition_panel(task: str, run: LoadedRun, record: SampleRecord, order: Mapping[str, float]) -> Panel:
    """The sentence rendered under one condition, the model's answer and label, and the condition's B_c."""
    condition = str(StealthRow.read(record.doc, "condition", "?"))
    digest = image_of(record)
    return Panel(
        caption=condition,
        image=ImageRef(
            sha256=digest,
            source=run.dataset_image(task, record.doc_id),
            alt=f"the sentence rendered under condition {condition}",
        )
        if digest
        else None,
        answers=[
            Answer(
                model=run.model,
                text=clip(record.responses[0] if record.responses else ""),
                label=_label(record),
            )
        ],
        labels={"B_c": f"{order[condition]:.3f}"} if condition in order else {},
    )


def extract(source: EvidenceInput) -> ProtocolEvidence:
    """Stealth's evidence from the sentiment tasks' reports and samples of the model's runs."""
    sections: list[Section] = []
    notes: list[str] = []
    sources: list[str] = []
    for task in SENTIMENT_TASKS:
        order: dict[str, float] = {}
        for run, report in source.reports(task):
            sections.append(_bias_section(task, run, report, source.max_items))
            sources.append(str(run.path / "results.json"))
            by_condition = report.get("by_condition")
            for condition, figure in by_condition.items() if isinstance(by_condition, Mapping) else ():
                value = figure_value(figure.get("value")) if isinstance(figure, Mapping) else None
                if isinstance(value, float):
                    order[str(condition)] = value
        for model, pairs in source.samples(task).items():
            items, left = _sentence_items(task, pairs, order, source.max_items)
            sections.append(
                Section(
                    key=f"{task}-sentences",
                    title=f"{task}: one sentence under every condition ({model})",
                    summary="The same sentence rendered under each condition, the baseline first and then the most "
                    "biased conditions; the label is the one the task parsed from the answer. Sentences whose "
                    "label changed most with styling come first.",
                    items=items,
                    truncated=left,
                )
            )
            sources.extend({str(run.path / f"samples_{task}.jsonl") for run, _ in pairs})
    if not sections:
        notes.append("no run of the model holds a Stealth sentiment task (stealth_short, stealth_long)")
    paper_name = source.paper_name()
    return ProtocolEvidence(
        protocol="stealth",
        title="Stealth Prompt Testset",
        model=source.model,
        sections=sections,
        references=references_for(paper_name, REFERENCES) if paper_name else [],
        sources=sorted(set(sources)),
        notes=notes,
    )
