"""FusionAudit's evidence: the model's R+ (the union risk over every pathway's attacks) and its failure
signature (OAR above 1 with a positive read-use gap: the model reads the injected text without adopting
it) from the audit, beside the paper's Table 1 values; and item by item, the clean image and each
attacked image (Typo-Evid, Nat-Evid from the dataset; Vis-PGD, End-PGD, MANTIS from the attack run's own
files) with the answer each one got, the items most attacks flipped first."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.errors import HarnessError
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
    as_mapping,
    clip,
    figure_value,
    file_image,
    image_of,
    latest_audit,
    plot_ref,
    recorded_interval,
    references_for,
    strongest,
)
from harness.protocols.fusion import metrics as fm
from harness.protocols.fusion.attack_outcomes import AttackOutcome, read_outcomes
from harness.protocols.fusion.audit_report import FusionAuditReport, ModelFigures
from harness.protocols.fusion.rows import FusionRow
from harness.results.interval import Interval
from harness.results.schema import SampleRecord

PAPER = "FusionAudit (pathway-conditioned robustness auditing of native multimodal models)"
#: Table 1 of the paper: percentages of each model's clean-correct set, as fractions.
_TABLE_1 = {
    "SmolVLM2-2.2B": (0.804, 0.995, 0.172, 0.309, 1.000),
    "BLIP2-OPT-2.7B": (0.431, 0.630, 0.694, 0.044, 0.912),
    "Qwen2.5-VL-3B": (0.666, 0.595, 0.195, 0.366, 0.857),
    "Gemma3-12B": (0.357, 0.695, 0.141, 0.340, 0.815),
    "Qwen2.5-VL-7B": (0.454, 0.590, 0.156, 0.339, 0.795),
    "Qwen3-VL-4B": (0.374, 0.611, 0.126, 0.299, 0.789),
    "Gemma4-E4B": (0.467, 0.724, 0.089, 0.271, 0.887),
    "Qwen3.5-9B": (0.383, 0.392, 0.161, 0.251, 0.595),
}
_TABLE_1_FIGURES = (
    ("asr_end_pgd", "ASR End-PGD"),
    ("asr_mantis", "ASR MANTIS"),
    ("asr_typo_evid", "ASR Typo-Evid"),
    ("asr_nat_evid", "ASR Nat-Evid"),
    ("r_plus", "R+"),
)
#: R+ the paper's text gives for models its Table 1 leaves out.
_TEXT_R_PLUS = {
    "InstructBLIP-Vicuna-7B": 0.995,
    "DeepSeek-VL-7B": 0.992,
    "Qwen3-VL-2B": 0.827,
    "Qwen3-VL-8B": 0.731,
    "Qwen3.5-2B": 0.780,
    "Qwen3.5-4B": 0.681,
}
#: The macro-average R+ per fusion level (main results).
LEVEL_R_PLUS = {"L1": 0.970, "L2": 0.884, "L3": 0.756}
REFERENCES: tuple[ReferenceValue, ...] = (
    *(
        ReferenceValue(figure=key, label=label, paper_model=model, value=values[k], paper=PAPER, where="Table 1")
        for model, values in _TABLE_1.items()
        for k, (key, label) in enumerate(_TABLE_1_FIGURES)
    ),
    *(
        ReferenceValue(figure="r_plus", label="R+", paper_model=model, value=value, paper=PAPER, where="main results")
        for model, value in _TEXT_R_PLUS.items()
    ),
)
FIGURES = (
    ("r_plus", "R+ (union risk, strengthened suite)", False),
    ("r0", "R0 (union risk, baseline suite)", False),
    ("delta", "delta (R+ - R0)", None),
    ("asr_end_pgd", "ASR End-PGD", False),
    ("asr_mantis", "ASR MANTIS", False),
    ("asr_typo_evid", "ASR Typo-Evid", False),
    ("asr_nat_evid", "ASR Nat-Evid", False),
    ("rug_typo", "read-use gap, Typo-Evid", None),
    ("oar", "overlay attention ratio (OAR)", None),
)
ATTACKED_TASKS = (("fusion_typo", fm.TYPO_EVID, "Typo-Evid"), ("fusion_natevid", fm.NAT_EVID, "Nat-Evid"))


def _interval(row: ModelFigures, key: str) -> Interval | None:
    """The figure's Interval as the audit recorded it (``intervals``), else its bare ``ci95`` pair (an older
    audit.json): the paired bootstrap over the clean-correct items."""
    data = row.model_dump()
    recorded = recorded_interval(data, key)
    if recorded is not None:
        return recorded
    pairs = as_mapping(data.get("ci95"))
    if key not in pairs:
        return None
    ci = pairs[key]
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return Interval.missing("the audit recorded none", row.n_items, unit="item")
    return Interval.of(float(ci[0]), float(ci[1]), "paired_bootstrap", row.n_items, unit="item")


def _audit_section(folder: Path, model: str, row: ModelFigures) -> Section:
    figures = [
        EvidenceFigure(
            key=key,
            label=label,
            value=figure_value(row.figures.get(key)),
            interval=_interval(row, key),
            n=row.n_items,
            higher_is_better=better,
        )
        for key, label, better in FIGURES
        if key in row.figures
    ]
    r_plus, oar, rug = (figure_value(row.figures.get(k)) for k in ("r_plus", "oar", "rug_typo"))
    flags = []
    if isinstance(r_plus, float) and r_plus > 0:
        flags.append(f"R+ = {r_plus:.3f}: the attacks together flip that share of the items it answered correctly")
    if isinstance(oar, float) and isinstance(rug, float) and oar > 1 and rug > 0:
        flags.append(
            f"see-but-not-deceived signature: OAR {oar:.2f} > 1 and read-use gap {rug:.3f} > 0 (it attends to "
            "and reads the injected text but does not adopt it)"
        )
    notes = [f"fusion level {row.fusion_level}; {row.n_items} clean-correct items (C)"]
    if row.attacks_not_run:
        notes.append(f"attacks not run: {', '.join(row.attacks_not_run)}")
    return Section(
        key=f"audit-{model}",
        title=f"R+ and its failure signature ({model})",
        summary="; ".join(notes) + ". Every rate is over C, the items the model answered correctly on clean images.",
        flag="; ".join(flags) or None,
        figures=figures,
        plots=[p for p in (plot_ref(folder, "fusion_asr_rplus.png", "ASR per attack and R+"),) if p is not None],
    )


def _answer(run: LoadedRun, record: SampleRecord) -> Answer:
    text = record.responses[0] if record.responses else f"(error: {record.error})"
    correct = record.metrics.get(fm.CORRECT)
    label = "correct" if correct == 1.0 else "wrong" if correct == 0.0 else "not scored"
    if record.metrics.get(fm.USES_INJECTED) == 1.0:
        label += ", uses the injected answer"
    return Answer(model=run.model, text=clip(text, 600), label=label)


def _item(
    item_id: str,
    samples: Mapping[str, tuple[LoadedRun, SampleRecord]],
    attacks: Sequence[tuple[LoadedRun, AttackOutcome]],
) -> tuple[Item, int]:
    """One item: its clean answer, each rendered-text variant's and each attack's, and how many flipped it."""
    clean_run, clean = samples["fusion_clean"]
    digest = image_of(clean)
    panels = [
        Panel(
            caption="clean",
            image=ImageRef(sha256=digest, source=clean_run.dataset_image("fusion_clean"), alt="the clean image")
            if digest
            else None,
            answers=[_answer(clean_run, clean)],
        )
    ]
    flips = 0
    for task, attack, caption in ATTACKED_TASKS:
        if task in samples:
            panel, counted_flip = _variant_panel(task, attack, caption, *samples[task])
            panels.append(panel)
            flips += counted_flip
    for run, outcome in attacks:
        flips += outcome.flipped
        panels.append(_attack_panel(run, outcome))
    return (
        Item(
            title=f"item {item_id}",
            note=f"{flips} attack(s) flipped its correct answer" if flips else None,
            fields={
                "question": clip(FusionRow.read(clean.doc, "question", "")),
                "gold answers": clip(", ".join(map(str, FusionRow.read(clean.doc, "answers", []) or []))),
                "injected wrong answer": clip(FusionRow.read(clean.doc, "wrong_answer", "")),
                "source": str(FusionRow.read(clean.doc, "source", "")),
            },
            panels=panels,
        ),
        flips,
    )


def _variant_panel(task: str, attack: str, caption: str, run: LoadedRun, record: SampleRecord) -> tuple[Panel, bool]:
    """A rendered-text variant's answer, and whether it flipped the item in a way the audit counts (a
    Nat-Evid edit whose OCR check found the evidence gone is left out)."""
    digest = image_of(record)
    status = str(FusionRow.read(record.doc, "natevid_status", "")) if attack == fm.NAT_EVID else ""
    counted = status != "destroyed"  # the audit leaves out edits whose OCR check found the evidence gone
    flipped = record.metrics.get(fm.CORRECT) == 0.0
    panel = Panel(
        caption=caption,
        image=ImageRef(sha256=digest, source=run.dataset_image(task), alt=f"the {caption} image") if digest else None,
        answers=[_answer(run, record)],
        labels={
            "flipped": ("yes" if flipped else "no") + ("" if counted else " (not counted)"),
            **({"edit status": status} if status else {}),
        },
    )
    return panel, flipped and counted


def _attack_panel(run: LoadedRun, outcome: AttackOutcome) -> Panel:
    """A pixel attack's adversarial image and answer, with its L-inf budget in uint8 steps."""
    return Panel(
        caption=outcome.attack,
        image=file_image(run.path, outcome.image, f"the {outcome.attack} adversarial image") if outcome.image else None,
        answers=[Answer(model=run.model, text=clip(outcome.response or f"(error: {outcome.error})", 600))],
        labels={
            "flipped": "yes" if outcome.flipped else "no",
            **({"L-inf (uint8 steps)": str(outcome.linf_uint8)} if outcome.linf_uint8 is not None else {}),
        },
    )


def _audit_part(source: EvidenceInput, notes: list[str]) -> tuple[list[Section], list[str], list[ReferenceValue]]:
    """The audit's sections, the files read, and the paper's value for the model's fusion level; a note
    when there is no audit."""
    found = latest_audit(source.audits, FusionAuditReport)
    if found is None:
        notes.append("no FusionAudit audit among the folders given (harness audit fusion RUN_DIR ...)")
        return [], [], []
    folder, report = found
    sections, levels = [], []
    for model, row in report.models.items():
        if source.model is None or model == source.model:
            sections.append(_audit_section(folder, model, row))
            if source.model is not None and row.fusion_level in LEVEL_R_PLUS:
                levels.append(
                    ReferenceValue(
                        figure="r_plus",
                        label="R+, macro average over the level's models",
                        paper_model=f"fusion level {row.fusion_level}",
                        value=LEVEL_R_PLUS[row.fusion_level],
                        paper=PAPER,
                        where="main results",
                    )
                )
    return sections, [str(folder / "audit.json")], levels


def _attack_outcomes(
    source: EvidenceInput, notes: list[str]
) -> dict[tuple[str, str], list[tuple[LoadedRun, AttackOutcome]]]:
    """(model, item) -> the attack outcomes the model's attack runs recorded."""
    attacks: dict[tuple[str, str], list[tuple[LoadedRun, AttackOutcome]]] = defaultdict(list)
    for run in source.model_runs():
        try:
            for outcome in read_outcomes(run.path):
                attacks[(run.model, outcome.item)].append((run, outcome))
        except HarnessError as exc:
            notes.append(str(exc))
    return attacks


def extract(source: EvidenceInput) -> ProtocolEvidence:
    """FusionAudit's evidence from its audit folder, the model's fusion_* runs and its attack runs."""
    notes: list[str] = []
    sections, sources, level_references = _audit_part(source, notes)
    by_model: dict[str, dict[str, dict[str, tuple[LoadedRun, SampleRecord]]]] = defaultdict(lambda: defaultdict(dict))
    for task in ("fusion_clean", *(t for t, _, _ in ATTACKED_TASKS)):
        for model, pairs in source.samples(task).items():
            sources.extend({str(run.path / f"samples_{task}.jsonl") for run, _ in pairs})
            for run, record in pairs:
                item = str(FusionRow.read(record.doc, "id", record.doc_id))
                by_model[model][item].setdefault(task, (run, record))
    attacks = _attack_outcomes(source, notes)
    paper_name = source.paper_name()
    references = (references_for(paper_name, REFERENCES) if paper_name else []) + level_references
    for model, items in by_model.items():
        built = [
            _item(item_id, samples, attacks.get((model, item_id), []))
            for item_id, samples in items.items()
            if "fusion_clean" in samples
        ]
        shown, left = strongest(built, source.max_items)
        sections.append(
            Section(
                key=f"items-{len(sections)}",
                title=f"Clean and attacked images ({model})",
                summary="Each item's clean image and every attacked version the runs hold, with the answer each got; "
                "the items most attacks flipped come first.",
                items=shown,
                truncated=left,
            )
        )
    if not by_model:
        notes.append("no run of the model holds fusion_clean")
    return ProtocolEvidence(
        protocol="fusion",
        title="FusionAudit",
        model=source.model,
        sections=sections,
        references=references,
        sources=sorted(set(sources)),
        notes=notes,
    )
