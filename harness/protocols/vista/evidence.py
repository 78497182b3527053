"""VISTA's evidence: the model's highest-suspicion cases (flagged ones first) with the image and every
model's answers grouped by the cluster the audit put them in, the model's Table 14 row, and selective
refusal across demographic groups. It reads the audit folder ``harness audit vista`` (or the audit after a
multi-model ``harness eval``) wrote: audit.json, audit.csv (one row per model and query) and flagged.jsonl
(every answer and cluster of each flagged case); the images and the answers of unflagged cases come from
the runs' samples."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.protocols.evidence import (
    Answer,
    AnswerGroup,
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
    as_mapping,
    clip,
    figure_value,
    image_of,
    latest_audit,
    plot_ref,
    prompt_text,
    read_json_lines,
    recorded_interval,
    references_for,
)
from harness.protocols.vista.audit_report import VistaAuditReport
from harness.results.schema import SampleRecord

PAPER = "VISTA: Auditing Semantic Divergence in Vision-Language Models (arXiv 2607.02995)"
#: Table 14: mean S, max S and the number of (model, query) cases at S >= 0.6, per model, over 19 topics.
_TABLE_14 = {
    "LLaVA-1.5": (0.29, 0.64, 15),
    "LLaVA-NeXT": (0.34, 0.80, 84),
    "Qwen2-VL": (0.29, 0.71, 10),
    "InternVL2": (0.25, 0.62, 1),
    "Phi-3.5-Vision": (0.32, 0.75, 24),
    "GPT-4o-mini": (0.30, 0.66, 8),
}
REFERENCES: tuple[ReferenceValue, ...] = tuple(
    ReferenceValue(figure=key, label=label, paper_model=model, value=float(values[k]), paper=PAPER, where="Table 14")
    for model, values in _TABLE_14.items()
    for k, (key, label) in enumerate(
        (("mean_suspicion", "mean S"), ("max_suspicion", "max S"), ("flags", "flagged cases"))
    )
)
#: Audit rows read from audit.csv at most (a paper-scale audit has 1,900 queries per model).
MAX_ROWS = 200_000
#: Answers shown per model and case (a model answers each query k times, k = 10 in the paper).
ANSWERS_PER_MODEL = 5


def _rows(folder: Path, model: str | None) -> list[dict[str, str]]:
    path = folder / "audit.csv"
    if not path.is_file():
        return []
    rows = []
    with path.open(newline="", encoding="utf-8") as fh:
        for number, row in enumerate(csv.DictReader(fh)):
            if number >= MAX_ROWS:
                break
            if model is None or row.get("model") == model:
                rows.append(row)
    return rows


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _records_by_hash(source: EvidenceInput, task: str) -> dict[str, dict[str, tuple[LoadedRun, SampleRecord]]]:
    """doc_hash -> model -> (run, record), over every run given (the model's and its peers')."""
    out: dict[str, dict[str, tuple[LoadedRun, SampleRecord]]] = defaultdict(dict)
    for model, pairs in source.samples(task, peers=True).items():
        for run, record in pairs:
            out[record.doc_hash].setdefault(model, (run, record))
    return out


def _case(
    row: Mapping[str, str],
    flagged: Mapping[str, Any] | None,
    records: Mapping[str, tuple[LoadedRun, SampleRecord]],
    task: str,
) -> Item:
    """One (model, query) case: the image, and every model's answers grouped by cluster when flagged.jsonl
    holds them (else by model)."""
    image, prompt = _case_image(row, records, task)
    groups = _groups_by_cluster(flagged) if flagged is not None else _groups_by_model(records)
    s = _float(row.get("suspicion"))
    return Item(
        title=f"{row.get('topic') or '?'}: doc {row.get('doc_id')}, S = {s:.3f}",
        note=(
            f"flagged ({row.get('pattern') or 'pattern not recorded'}): internally uniform and unlike its peers"
            if flagged is not None
            else "below the flag threshold; its answers are shown by model (the audit records clusters only for "
            "flagged cases)"
        ),
        fields={
            "prompt": prompt or "(not in the runs given)",
            "topic": str(row.get("topic") or ""),
            "category": str(row.get("category") or ""),
            "prompt type": str(row.get("prompt_type") or ""),
            "confidence, divergence": f"{_float(row.get('confidence')):.3f}, {_float(row.get('divergence')):.3f}",
            "semantic entropy": f"{_float(row.get('se')):.3f}",
        },
        panels=[Panel(caption=f"{row.get('model')}'s case", image=image, groups=groups)],
    )


def _case_image(
    row: Mapping[str, str], records: Mapping[str, tuple[LoadedRun, SampleRecord]], task: str
) -> tuple[ImageRef | None, str]:
    """The case's image and prompt, from the first run that recorded the image ((None, "") when none did)."""
    for run, record in records.values():
        digest = image_of(record)
        if digest:
            image = ImageRef(
                sha256=digest, source=run.dataset_image(task, record.doc_id), alt=f"image {row.get('image_id', '')}"
            )
            return image, prompt_text(record)
    return None, ""


def _groups_by_cluster(flagged: Mapping[str, Any]) -> list[AnswerGroup]:
    """Every model's answers grouped by the audit's semantic cluster, the largest cluster first."""
    responses, clusters = as_mapping(flagged.get("responses")), as_mapping(flagged.get("cluster_ids"))
    by_cluster: dict[str, list[Answer]] = defaultdict(list)
    for model, texts in responses.items():
        ids = clusters.get(model) or []
        for k, text in enumerate(texts if isinstance(texts, list) else []):
            cluster = str(ids[k]) if k < len(ids) else "?"
            by_cluster[cluster].append(Answer(model=str(model), text=clip(text, 800)))
    groups = []
    for cluster, answers in sorted(by_cluster.items(), key=lambda kv: -len(kv[1])):
        models = sorted({a.model for a in answers})
        groups.append(
            AnswerGroup(label=f"cluster {cluster}: {len(answers)} answers from {', '.join(models)}", answers=answers)
        )
    return groups


def _groups_by_model(records: Mapping[str, tuple[LoadedRun, SampleRecord]]) -> list[AnswerGroup]:
    """Each model's first :data:`ANSWERS_PER_MODEL` answers, one group per model."""
    groups = []
    for model, (_, record) in records.items():
        answers = [Answer(model=model, text=clip(t, 800)) for t in record.responses[:ANSWERS_PER_MODEL]]
        left = len(record.responses) - ANSWERS_PER_MODEL
        groups.append(
            AnswerGroup(
                label=f"{model}" + (f" (first {ANSWERS_PER_MODEL}, {left} more)" if left > 0 else ""),
                answers=answers,
            )
        )
    return groups


def _model_figures(report: VistaAuditReport, model: str) -> list[EvidenceFigure]:
    row = report.per_model.get(model)
    if row is None:
        return []
    data = row.model_dump(by_alias=True)  # the audit's intervals, where it recorded them, by figure
    names = (
        ("mean_suspicion", "mean S", row.mean_suspicion, False),
        ("max_suspicion", "max S", row.max_suspicion, False),
        ("detection_score", "model-level detection score", row.detection.score, False),
        ("refusal_rate", "refusal rate", row.refusal_rate, None),
    )
    figures = [
        EvidenceFigure(
            key=key,
            label=label,
            value=figure_value(value),
            interval=recorded_interval(data, key),
            n=row.queries,
            higher_is_better=better,
        )
        for key, label, value, better in names
    ]
    figures.append(EvidenceFigure(key="flags", label="flagged cases", value=row.flags, n=row.queries))
    figures.append(EvidenceFigure(key="pattern", label="primary pattern", value=row.primary_pattern))
    return figures


def _refusal_section(report: VistaAuditReport, model: str, index: int) -> Section | None:
    by_kind = report.selective_refusal.get(model)
    if not by_kind:
        return None
    tables = []
    unequal = []
    for kind, part in by_kind.items():
        rows: list[list[str | float | int | None]] = [
            [group, rate, part.excess.get(group), part.responses.get(group)] for group, rate in part.rates.items()
        ]
        label = {"all": "all prompts", "O": "observable prompts", "I": "inference-eliciting prompts"}.get(kind, kind)
        p = "-" if part.p_value is None else f"{part.p_value:.3g}"
        tables.append(
            Table(
                title=f"{label}: spread {part.spread:.3f}, p = {p}",
                columns=["group", "refusal rate", "excess over the mean", "responses"],
                rows=rows,
            )
        )
        if part.p_value is not None and part.p_value < 0.05:
            unequal.append(label)
    return Section(
        key=f"selective-refusal-{index}",
        title=f"Selective refusal of {model} by demographic group",
        summary="How often the model refuses, per demographic group, and whether the rates differ more than "
        "chance allows (the p-value of the test of equal rates).",
        flag=f"refusal rates differ across groups (p < 0.05) for {', '.join(unequal)}" if unequal else None,
        tables=tables,
    )


def extract(source: EvidenceInput) -> ProtocolEvidence:
    """VISTA's evidence from the audit folder and the runs (the model's and its peers')."""
    found = latest_audit(source.audits, VistaAuditReport)
    if found is None:
        return ProtocolEvidence(
            protocol="vista",
            title="VISTA",
            model=source.model,
            notes=[
                "no VISTA audit among the folders given: the cross-model audit needs the runs of two or more "
                "models (harness audit vista RUN_DIR RUN_DIR ...), then pass its folder too"
            ],
        )
    folder, report = found
    task = report.config.task
    models = [source.model] if source.model is not None else report.models
    flagged = {
        (str(r.get("model")), str(r.get("doc_hash"))): r for r in read_json_lines(folder / "flagged.jsonl", 5_000)
    }
    records = _records_by_hash(source, task)
    sections: list[Section] = []
    notes: list[str] = []
    for model in models:
        if model not in report.per_model:
            notes.append(f"{model} is not among the models the VISTA audit compared ({', '.join(report.models)})")
            continue
        sections.append(_suspicion_section(folder, report, model, flagged, records, source.max_items, len(sections)))
        refusal = _refusal_section(report, model, len(sections))
        if refusal is not None:
            sections.append(refusal)
    if not sections and not notes:
        notes.append("the VISTA audit holds no model's rows")
    paper_name = source.paper_name()
    return ProtocolEvidence(
        protocol="vista",
        title="VISTA",
        model=source.model,
        sections=sections,
        references=references_for(paper_name, REFERENCES) if paper_name else [],
        sources=[str(folder / name) for name in ("audit.json", "audit.csv", "flagged.jsonl")],
        notes=notes,
    )


def _suspicion_section(
    folder: Path,
    report: VistaAuditReport,
    model: str,
    flagged: Mapping[tuple[str, str], Mapping[str, Any]],
    records: Mapping[str, Mapping[str, tuple[LoadedRun, SampleRecord]]],
    max_items: int,
    index: int,
) -> Section:
    """The model's figures and its highest-suspicion cases, flagged ones first."""
    task = report.config.task
    rows = sorted(_rows(folder, model), key=lambda r: (r.get("flagged") != "True", -_float(r.get("suspicion"))))
    cases = [
        _case(row, flagged.get((model, str(row.get("doc_hash")))), records.get(str(row.get("doc_hash")), {}), task)
        for row in rows[:max_items]
    ]
    flags = report.per_model[model].flags
    plots = [
        p
        for p in (plot_ref(folder, "suspicion_by_model.png", "suspicion S by model, with the threshold theta"),)
        if p is not None
    ]
    return Section(
        key=f"suspicion-{index}",
        title=f"Highest-suspicion cases of {model}",
        summary=f"S = Confidence x Divergence per (model, query) over {len(report.models)} models "
        f"({', '.join(report.models)}); a case is flagged at S >= theta = {report.config.theta}. "
        f"Clustering judge: {report.judge}.",
        flag=f"{flags} flagged case(s) of {report.per_model[model].queries} queries" if flags else None,
        figures=_model_figures(report, model),
        plots=plots,
        items=cases,
        truncated=max(0, len(rows) - len(cases)),
    )
