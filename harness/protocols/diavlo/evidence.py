"""DiaVLo's evidence: each pair's SHOULD-KNOW triplets (the curated specification) beside the REALLY-KNOW
triplets the model's rationale gave, with the class the task scored (Aligned, Expanded, Divergent,
Unnamed) and the answer's performance; Divergent pairs come first. With the audit folder, the model's class
shares, RK losses and MI(similarity; performance) with its interval, its plots and its strongest concept
effects."""

from __future__ import annotations

from pathlib import Path

from harness.protocols.diavlo.audit_report import DiavloAuditReport, ModelReport, MutualInformation, TooFewPairs
from harness.protocols.diavlo.metrics import CLASSES, DIVERGENT
from harness.protocols.diavlo.report import rk_from_turns, sk_triplets
from harness.protocols.diavlo.rows import DiavloRow
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
    image_of,
    latest_audit,
    plot_ref,
    recorded_interval,
)
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord

TASK_PREFIX = "diavlo_"
PAPER = "DiaVLo: Diagnosing Behaviours of Vision-Language Models"
#: The behaviour classes over the paper's four VLMs and four sources (a setting, not a model).
REFERENCES: tuple[ReferenceValue, ...] = tuple(
    ReferenceValue(
        figure=name.lower(),
        label=f"share {name}",
        paper_model="four VLMs' shares over four sources",
        value=value,
        paper=PAPER,
        where="results",
    )
    for name, value in (("Aligned", 0.064), ("Expanded", 0.525), ("Divergent", 0.411))
)
#: The order pairs are shown in: the behaviours a person should look at first.
SHOWN_FIRST = (DIVERGENT, "Unnamed", "Expanded", "Aligned", None)
PLOTS = (
    ("class_shares.png", "class shares per source"),
    ("similarity_performance.png", "SK-RK similarity against performance"),
)


def pair_class(record: SampleRecord) -> str | None:
    """The class the task scored for the pair (its class indicator metric that is 1), None if unclassified."""
    for name in CLASSES:
        if record.metrics.get(MetricKey(name.lower()).encoded) == 1.0:
            return name
    return None


def _metric(record: SampleRecord, name: str) -> float | None:
    value = record.metrics.get(MetricKey(name).encoded)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pair(task: str, run: LoadedRun, record: SampleRecord) -> Item:
    rk, status = rk_from_turns(record.turns)
    sk = sk_triplets(record.doc)
    label = pair_class(record)
    digest = image_of(record)
    answer = record.responses[0] if record.responses else ""
    rationale = record.turns[0].responses[0] if record.turns and record.turns[0].responses else ""
    similarity, performance = _metric(record, "similarity"), _metric(record, "performance")
    return Item(
        title=f"{task}: {DiavloRow.read(record.doc, 'id', record.doc_id)} ({label or 'unclassified'})",
        note=None if label else f"not classified: RK status {status}, {len(sk)} SK triplet(s)",
        fields={
            "question": clip(DiavloRow.read(record.doc, "question", "")),
            "reference answer": clip(DiavloRow.read(record.doc, "answer", "")),
            "performance": "-" if performance is None else f"{performance:.3f}",
            "SK-RK similarity": "-" if similarity is None else f"{similarity:.3f}",
        },
        panels=[
            Panel(
                caption="image and answer",
                image=ImageRef(sha256=digest, source=run.dataset_image(task, record.doc_id), alt="the pair's image")
                if digest
                else None,
                answers=[Answer(model=run.model, text=clip(answer), label="answer")]
                + ([Answer(model=run.model, text=clip(rationale), label="rationale")] if rationale else []),
            ),
            Panel(
                caption=f"SHOULD-KNOW ({len(sk)})",
                lines=[f"{t.subject} \N{EM DASH} {t.relation} \N{EM DASH} {t.object}" for t in sk] or ["(none)"],
            ),
            Panel(
                caption=f"REALLY-KNOW ({len(rk)})",
                lines=[f"{t.subject} \N{EM DASH} {t.relation} \N{EM DASH} {t.object}" for t in rk]
                or [f"(none: {status})"],
                labels={"class": label or "unclassified", "RK status": status},
            ),
        ],
    )


def _audit_section(folder: Path, model: str, part: ModelReport) -> Section:
    """The model's class shares, RK losses and MI from the audit, with its plots and strongest concept effects."""
    overall = part.overall
    shares = overall.classes
    rows = _effect_rows(part)
    divergent = shares.counts.divergent
    return Section(
        key=f"audit-{model}",
        title=f"The audit's classes and concept effects ({model})",
        summary=f"{overall.pairs} pairs; {shares.n} classified, {shares.unclassified} unclassified; RK lost on "
        f"{overall.rk_losses.total} ({overall.rk_losses.empty} empty, {overall.rk_losses.unusable} unusable, "
        f"{overall.rk_losses.turn_error} turn errors).",
        flag=f"{divergent} pair(s) Divergent: the rationale's knowledge is unlike the specification's"
        if divergent
        else None,
        figures=_audit_figures(part),
        tables=[
            Table(
                title="concept effects (DML), largest first",
                columns=["outcome", "concept", "effect", "95% CI", "n", "inconclusive"],
                rows=rows[:10],
            )
        ]
        if rows
        else [],
        plots=[p for name, alt in PLOTS if (p := plot_ref(folder, name, alt)) is not None],
    )


def _audit_figures(part: ModelReport) -> list[EvidenceFigure]:
    """Each class's share (with the interval the audit recorded), the RK loss rate and the MI figure."""
    overall = part.overall
    shares = overall.classes
    recorded = shares.model_dump(by_alias=True)  # the class shares' intervals, where the audit recorded them
    figures = [
        EvidenceFigure(
            key=name.lower(), label=f"share {name}", value=share, interval=recorded_interval(recorded, name), n=shares.n
        )
        for name, share in shares.shares.items()
    ]
    figures.append(
        EvidenceFigure(key="rk_loss_rate", label="RK loss rate", value=overall.rk_losses.rate, n=overall.pairs)
    )
    return [*figures, _mi_figure(overall.mutual_information)]


def _mi_figure(mi: MutualInformation | TooFewPairs) -> EvidenceFigure:
    """MI(similarity; performance) with its recorded interval, else its bootstrap CI; no value when the audit
    could not estimate it (its note says why)."""
    if not isinstance(mi, MutualInformation):
        return EvidenceFigure(key="mi", label="MI(similarity; performance), nats", value=None, n=mi.n, note=mi.note)
    interval = recorded_interval(mi.model_dump(), "mi_nats") or (
        Interval.of(mi.ci95[0], mi.ci95[1], "bootstrap", mi.n, unit="pair")
        if mi.ci95
        else Interval.missing("the audit recorded none", mi.n, unit="pair")
    )
    return EvidenceFigure(
        key="mi",
        label="MI(similarity; performance), nats",
        value=mi.mi_nats,
        interval=interval,
        n=mi.n,
        note=mi.note,
    )


def _effect_rows(part: ModelReport) -> list[list[str | float | int | None]]:
    """The estimated concept effects as table rows, largest absolute effect first."""
    rows: list[list[str | float | int | None]] = []
    for outcome, effects in part.effects.items():
        for effect in effects:
            if effect.estimate is not None:
                low, high = effect.estimate.ci95
                rows.append(
                    [
                        outcome,
                        effect.concept,
                        effect.estimate.effect,
                        f"[{low:.3f}, {high:.3f}]",
                        effect.n,
                        "yes" if effect.inconclusive else "no",
                    ]
                )
    rows.sort(key=lambda r: -abs(float(r[2] or 0.0)))
    return rows


def extract(source: EvidenceInput) -> ProtocolEvidence:
    """DiaVLo's evidence from the model's runs of the diavlo_* tasks and its audit folder."""
    sections: list[Section] = []
    sources: list[str] = []
    notes: list[str] = []
    found = latest_audit(source.audits, DiavloAuditReport)
    if found is not None:
        folder, report = found
        for model, part in report.models.items():
            if source.model is None or model == source.model:
                sections.append(_audit_section(folder, model, part))
        sources.append(str(folder / "audit.json"))
    else:
        notes.append(
            "no DiaVLo audit among the folders given (harness audit diavlo RUN_DIR): classes come from the runs"
        )
    tasks = [t for t in source.tasks() if t.startswith(TASK_PREFIX)]
    by_model: dict[str, list[tuple[str, LoadedRun, SampleRecord]]] = {}
    for task in tasks:
        for model, pairs in source.samples(task).items():
            by_model.setdefault(model, []).extend((task, run, r) for run, r in pairs if r.error is None)
            sources.extend({str(run.path / f"samples_{task}.jsonl") for run, _ in pairs})
    for model, rows in by_model.items():
        rows.sort(key=lambda row: SHOWN_FIRST.index(pair_class(row[2])) if pair_class(row[2]) in SHOWN_FIRST else 9)
        counts = {name: sum(pair_class(r) == name for _, _, r in rows) for name in CLASSES}
        items = [_pair(task, run, record) for task, run, record in rows[: source.max_items]]
        sections.append(
            Section(
                key=f"pairs-{len(sections)}",
                title=f"SHOULD-KNOW beside REALLY-KNOW ({model})",
                summary=f"{len(rows)} pairs: "
                + ", ".join(f"{n} {name}" for name, n in counts.items())
                + f", {len(rows) - sum(counts.values())} unclassified. Divergent pairs first.",
                flag=f"{counts[DIVERGENT]} Divergent behaviour(s)" if counts[DIVERGENT] else None,
                items=items,
                truncated=len(rows) - len(items),
            )
        )
    if not tasks:
        notes.append("no run of the model holds a DiaVLo task")
    return ProtocolEvidence(
        protocol="diavlo",
        title="DiaVLo",
        model=source.model,
        sections=sections,
        references=list(REFERENCES) if source.model is not None and found is not None else [],
        sources=sorted(set(sources)),
        notes=notes,
    )
