"""MIST's evidence: the judge's change under misleading images (the task report's figures with their
item-level intervals) and, item by item, the sentence under no image, the aligned image and the misleading
image, with the judge's label under each prompting technique and the human panels' labels; items whose
label moved under the misleading image come first."""

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
    clip,
    figure_interval,
    figure_value,
    image_of,
    strongest,
)
from harness.protocols.mist import metrics as mist
from harness.protocols.mist.rows import MistJudgeDoc
from harness.results.interval import Interval
from harness.results.schema import SampleRecord

TASK = "mist"
PAPER = "It's Not What the Image Shows: Irrelevant Context Destabilises VLM Judges Without Informing Them"
#: The paper's figures over its thirteen judges (a setting, not a model): change rates with an image and
#: agreement with the human majority under each condition.
_SETTING = "13 judges' mean"
REFERENCES: tuple[ReferenceValue, ...] = tuple(
    ReferenceValue(figure=key, label=label, paper_model=_SETTING, value=value, paper=PAPER, where="results")
    for key, label, value in (
        ("change_rate_aligned", "change rate, aligned image", 0.205),
        ("change_rate_misleading", "change rate, misleading image", 0.194),
        ("agreement_none", "agreement with the human majority, no image", 0.544),
        ("agreement_aligned", "agreement with the human majority, aligned image", 0.537),
        ("agreement_misleading", "agreement with the human majority, misleading image", 0.547),
    )
)
FIGURES = (
    ("change_rate_misleading", "change rate, misleading image", False),
    ("change_rate_aligned", "change rate, aligned image", False),
    ("control_rate_misleading", "prompt-edit control rate, misleading", None),
    ("image_following_misleading", "image-following ratio, misleading", False),
    ("agreement_none", "agreement with the human majority, no image", True),
    ("agreement_misleading", "agreement with the human majority, misleading", True),
)
CONDITIONS = ("none", "aligned", "misleading")


def _interval_of(figure: Mapping[str, Any], n: int) -> Interval | None:
    """The figure's recorded interval; the report's ci95 is a bootstrap resampling items."""
    return figure_interval(figure, "cluster_bootstrap", n, "item")


def _label(record: SampleRecord) -> str:
    if record.error is not None:
        return f"error: {record.error}"
    found = mist.parse_label(record.responses[0] if record.responses else "")
    return "unparsed" if found is None else mist.LABELS[found]


def _figures_section(model: str, report: Mapping[str, Any]) -> Section:
    n = int(report.get("items") or 0)
    found = report.get("figures")
    figures = found if isinstance(found, Mapping) else {}
    out = [
        EvidenceFigure(
            key=key,
            label=label,
            value=figure_value(figures.get(key, {}).get("value")),
            interval=_interval_of(figures.get(key, {}), n),
            n=n,
            higher_is_better=better,
        )
        for key, label, better in FIGURES
        if isinstance(figures.get(key), Mapping)
    ]
    change = figure_value(figures.get("change_rate_misleading", {}).get("value"))
    interval = _interval_of(figures.get("change_rate_misleading", {}), n)
    excludes_zero = interval is not None and interval.defined and (interval.low or 0) > 0
    return Section(
        key="change",
        title=f"Change under misleading images ({model})",
        summary="The share of (item, technique) cells whose label with an image differs from the label without "
        f"one, over {n} items whose labels parsed."
        if n
        else str(report.get("plot_not_drawn") or "No item had parsed labels under both conditions."),
        flag=f"the judge changes its label on {change:.1%} of cells when a misleading image is added"
        if isinstance(change, float) and excludes_zero
        else None,
        figures=out,
    )


def _item(item_id: str, rows: list[tuple[LoadedRun, SampleRecord]]) -> tuple[Item, int]:
    """The item's panels (one per condition) and how many (technique, arm) cells moved under a misleading image."""
    first = rows[0][1]
    labels: dict[tuple[str, str], str] = {}
    panels: dict[str, Panel] = {}
    answers: dict[str, list[Answer]] = defaultdict(list)
    images: dict[str, ImageRef] = {}
    for run, record in rows:
        arm = str(MistJudgeDoc.read(record.doc, "arm", "none"))
        technique = str(MistJudgeDoc.read(record.doc, "technique", "?"))
        condition = arm.split("-")[0]
        label = _label(record)
        labels[(technique, arm)] = label
        text = record.responses[0] if record.responses else ""
        answers[condition].append(
            Answer(model=run.model, text=clip(text, 600), label=label, group=f"{technique}, {arm}")
        )
        digest = image_of(record)
        if digest and condition not in images:
            images[condition] = ImageRef(
                sha256=digest, source=run.dataset_image(TASK), alt=f"the {condition} image of the item"
            )
    moved = sum(
        1
        for (technique, arm), label in labels.items()
        if arm.startswith("misleading")
        and (technique, "none") in labels
        and label != labels[(technique, "none")]
        and "unparsed" not in (label, labels[(technique, "none")])
    )
    for condition in CONDITIONS:
        if condition in answers:
            panels[condition] = Panel(
                caption={"none": "no image", "aligned": "aligned image", "misleading": "misleading image"}[condition],
                image=images.get(condition),
                answers=answers[condition],
            )
    humans = MistJudgeDoc.read(first.doc, "human_labels", None) or []
    majority = MistJudgeDoc.read(first.doc, "human_majority", None)
    panel_text = "; ".join(
        f"{h.get('panel')} {h.get('annotator')} ({h.get('condition')}): {_human(h.get('label'))}"
        for h in humans
        if isinstance(h, Mapping)
    )
    compound = clip(MistJudgeDoc.read(first.doc, "compound", ""), 200)
    return (
        Item(
            title=f"item {item_id}: \N{LEFT DOUBLE QUOTATION MARK}{compound}\N{RIGHT DOUBLE QUOTATION MARK}",
            note=f"{moved} (technique, arm) cell(s) changed label under the misleading image" if moved else None,
            fields={
                "sentence": clip(MistJudgeDoc.read(first.doc, "sentence", "")),
                "sense": str(MistJudgeDoc.read(first.doc, "sense", "")),
                "human majority": _human(majority),
                "human panel": panel_text or "none recorded",
            },
            panels=[panels[c] for c in CONDITIONS if c in panels],
        ),
        moved,
    )


def _human(label: Any) -> str:
    if isinstance(label, int) and 0 <= label < len(mist.LABELS):
        return mist.LABELS[label]
    return "no majority"


def extract(source: EvidenceInput) -> ProtocolEvidence:
    """MIST's evidence from the task report and samples of the model's runs."""
    sections: list[Section] = []
    sources: list[str] = []
    for run, report in source.reports(TASK):
        sections.append(_figures_section(run.model, report))
        sources.append(str(run.path / "results.json"))
        panels = _panels_section(report)
        if panels is not None:
            sections.append(panels)
    for model, pairs in source.samples(TASK).items():
        sections.append(_items_section(model, pairs, source.max_items, len(sections)))
        sources.extend({str(run.path / f"samples_{TASK}.jsonl") for run, _ in pairs})
    notes = [] if sections else ["no run of the model holds the MIST task"]
    return ProtocolEvidence(
        protocol="mist",
        title="MIST",
        model=source.model,
        sections=sections,
        references=list(REFERENCES) if source.model is not None and sections else [],
        sources=sorted(set(sources)),
        notes=notes,
    )


def _panels_section(report: Mapping[str, Any]) -> Section | None:
    """The agreement within each human panel (None when the report records none)."""
    agreement = report.get("human_agreement")
    if not (isinstance(agreement, Mapping) and agreement):
        return None
    rows: list[list[str | float | int | None]] = [
        [
            str(panel),
            figure_value(v.get("fleiss_kappa")),
            figure_value(v.get("krippendorff_alpha")),
            v.get("annotators"),
            v.get("items"),
        ]
        for panel, v in agreement.items()
        if isinstance(v, Mapping)
    ]
    return Section(
        key="panels",
        title="The human panels",
        summary="Agreement within each human panel, the reference the alt-test compares the judge with.",
        tables=[
            Table(
                title="agreement per panel",
                columns=["panel", "Fleiss kappa", "Krippendorff alpha", "annotators", "items"],
                rows=rows,
            )
        ],
    )


def _items_section(model: str, pairs: list[tuple[LoadedRun, SampleRecord]], max_items: int, index: int) -> Section:
    """The model's items, each with its answers under every condition; moved labels first."""
    by_item: dict[str, list[tuple[LoadedRun, SampleRecord]]] = defaultdict(list)
    for run, record in pairs:
        by_item[str(MistJudgeDoc.read(record.doc, "item_id", record.doc_id))].append((run, record))
    built = [_item(item_id, rows) for item_id, rows in by_item.items()]
    items, left = strongest(built, max_items)
    return Section(
        key=f"items-{index}",
        title=f"Items under no, aligned and misleading images ({model})",
        summary="Each answer is labelled with what the task parsed from it and its prompting technique "
        "and arm; items whose label moved under the misleading image come first.",
        items=items,
        truncated=left,
    )
