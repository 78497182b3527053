"""``harness audit diavlo``: behaviour classes, the performance link and concept-level causal effects
over saved runs of the ``diavlo_<source>`` tasks.

Per run (one model): the pairs' classes (re-derived from the saved similarity and set sizes with the
audit's thresholds), class shares per source, RK losses, and the bootstrapped MI between similarity and
performance. Then the counterfactual study:

1. Concepts of a pair are the subjects and objects of its RK triplets (``--concepts rk``; with
   ``rk_or_sk`` a pair without usable RK falls back to its SK concepts). Each concept gets a box: the
   box of the best-matching SK concept (cosine >= ``match_threshold``), else the detector's box (when
   ``--detector`` is given), else none (the concept is counted and left out).
2. Occlusion designs: the paper's full power set of the boxed concepts (the empty set included) while it
   has at most ``max_subsets`` members (default 1024: every pair with up to 10 concepts); beyond it, the
   empty set, all singletons and a seeded random sample of the other subsets up to ``max_subsets``,
   counted per model (``pairs_sampled``) and stated in the report (``occlusion``). Occluded boxes are
   filled with the image's mean colour; the prompt text is the task's own, unchanged.
3. The model re-answers every counterfactual (through the response store; the empty design is the
   original request). Outcomes: ``flip`` = 1 when correctness (binary performance; unparsed counts as
   incorrect) differs from the original answer's, ``distance`` = 1 - cosine(original answer,
   counterfactual answer) in MiniLM space.
4. Per model and concept name, a DML estimate per outcome with placebo and random-common-cause
   refutations (:mod:`harness.protocols.diavlo.concept_effects`); X = number and area share of the other
   occluded concepts, the pair's concept count, and the original correctness.
5. Per pair, the paper's structural refutation: its specification read as a causal graph, tested on its
   counterfactuals against its local Markov conditions and a baseline permutation test
   (:mod:`harness.protocols.diavlo.structure`), with a verdict per pair and counted per model.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from harness.engine.generation import answer_requests
from harness.engine.requests import make_request
from harness.engine.tasks import open_run_task
from harness.errors import HarnessError
from harness.metrics.squad import normalize_answer
from harness.models.base import GenerationParams, GenerationRequest
from harness.protocols.audit_report import interval_note, with_interval
from harness.protocols.diavlo.audit_report import (
    DiavloAuditReport,
    DiavloSettings,
    ModelReport,
    MutualInformation,
    TooFewPairs,
)
from harness.protocols.diavlo.concept_effects import ConceptEffect, DMLSettings, concept_effect
from harness.protocols.diavlo.metrics import MiEstimator, Thresholds
from harness.protocols.diavlo.report import (
    BINARY,
    behaviour_summary,
    pair_rows,
    performance,
    rk_from_turns,
    shared_encoder,
)
from harness.protocols.diavlo.rows import DiavloRow
from harness.protocols.diavlo.structure import OUTCOME, falsify_graph, rk_graph
from harness.results.generation import RequestSettings
from harness.results.schema import RunResults, SampleRecord, read_run, read_samples

OUTCOMES = ("flip", "distance")

#: Which concepts a pair occludes: its RK concepts, or its SK concepts when it has no usable RK one.
ConceptSource = Literal["rk", "rk_or_sk"]
CONCEPT_SOURCES: tuple[ConceptSource, ...] = get_args(ConceptSource)


@dataclass(frozen=True)
class DiavloAuditConfig:
    """The audit's settings: class thresholds, which concepts to occlude (``rk`` or ``rk_or_sk``), the
    occlusion-design cap, the RK-SK box-matching cosine, the MI estimator and its resamples, and DML's settings."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    concepts: ConceptSource = "rk"
    max_subsets: int = 1024
    match_threshold: float = 0.6
    mi_estimator: MiEstimator = "knn"
    mi_resamples: int = 1000
    seed: int = 0
    batch_size: int = 1
    dml: DMLSettings = field(default_factory=DMLSettings)

    def __post_init__(self) -> None:
        if self.concepts not in CONCEPT_SOURCES:
            raise HarnessError(f"--concepts must be rk or rk_or_sk, got {self.concepts!r}")
        if self.max_subsets < 2:
            raise HarnessError("--max-subsets must be at least 2 (the original and one occlusion)")


@dataclass
class ModelAudit:
    """One model's audit: per-source and overall figures, the pair rows, the counterfactual rows, the concept
    effects per outcome, and the counts of pairs, concepts (boxed or not) and counterfactuals."""

    model: str
    run_dir: str
    per_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    overall: dict[str, Any] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    counterfactuals: list[dict[str, Any]] = field(default_factory=list)
    effects: dict[str, list[ConceptEffect]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    structure: list[dict[str, Any]] = field(default_factory=list)


def occlusion_designs(concepts: list[str], max_subsets: int, seed: int) -> list[tuple[str, ...]]:
    """Subsets of ``concepts`` to occlude (module docstring, step 2), in a stable order: the paper's full
    power set while it has at most ``max_subsets`` members, else a seeded sample of that many (the empty
    set and every singleton first), drawn as bit masks so a large power set is never listed."""
    k = len(concepts)
    if not is_sampled(k, max_subsets):
        return [c for r in range(k + 1) for c in itertools.combinations(concepts, r)]
    base = [(), *[(c,) for c in concepts]][:max_subsets]
    rng, masks = random.Random(seed), set[int]()
    while len(masks) < max_subsets - len(base):
        mask = rng.randrange(2**k)
        if mask & (mask - 1):  # two or more concepts: the empty set and singletons are in ``base``
            masks.add(mask)
    extra = [tuple(c for b, c in enumerate(concepts) if mask >> b & 1) for mask in masks]
    return base + sorted(extra, key=lambda s: (len(s), s))


def is_sampled(n_concepts: int, max_subsets: int) -> bool:
    """Whether a pair's designs are a sample: its power set (``2 ** n_concepts``) exceeds ``max_subsets``."""
    designs: int = 2**n_concepts
    return designs > max_subsets


def occlude(image: Any, boxes: list[list[float]]) -> Any:
    """The image with every box filled with its mean colour."""
    from PIL import ImageDraw, ImageStat

    out = image.convert("RGB").copy()
    fill = tuple(int(v) for v in ImageStat.Stat(out).mean[:3])
    draw = ImageDraw.Draw(out)
    for x0, y0, x1, y1 in boxes:
        draw.rectangle([x0, y0, x1, y1], fill=fill)
    return out


def _area_share(boxes: list[list[float]], size: tuple[int, int]) -> float:
    """Share of the image covered by the union of boxes (pixel mask)."""
    mask = np.zeros((size[1], size[0]), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        mask[int(y0) : int(np.ceil(y1)), int(x0) : int(np.ceil(x1))] = True
    return float(mask.mean())


def concept_boxes(
    rk_concepts: list[str], sk: list[dict[str, Any]], image: Any, match_threshold: float, detector: Any | None
) -> dict[str, list[float] | None]:
    """Concept -> box: best-matching SK concept's box, else the detector's, else None."""
    encoder = shared_encoder()
    sk_boxes: dict[str, list[float]] = {}
    for t in sk:
        for role in ("subject", "object"):
            if t.get(f"{role}_box"):
                sk_boxes.setdefault(t[role], list(t[f"{role}_box"]))
    out: dict[str, list[float] | None] = {}
    names = list(sk_boxes)
    sims = encoder.matrix(rk_concepts) @ encoder.matrix(names).T if names and rk_concepts else None
    for i, concept in enumerate(rk_concepts):
        if sims is not None and float(sims[i].max()) >= match_threshold:
            out[concept] = sk_boxes[names[int(np.argmax(sims[i]))]]
        else:
            out[concept] = None
    missing = [c for c, b in out.items() if b is None]
    if missing and detector is not None:
        for concept, det in detector.detect(image, missing).items():
            out[concept] = list(det.box)
    return out


def _params(run: RunResults, task: str) -> tuple[GenerationParams, int]:
    """The run's generation settings and n for ``task``, so the unoccluded design is the run's own request."""
    settings = run.provenance.generation.get(task, RequestSettings(params=GenerationParams()))
    return settings.params, settings.n


def audit_run(
    run_dir: Path,
    backend: Any,
    config: DiavloAuditConfig,
    store: Any,
    data_dir: Path | None,
    detector: Any | None = None,
    include_paths: Sequence[str | Path] = (),
) -> ModelAudit:
    """Classes, MI and concept effects for one run folder (module docstring); its tasks are opened from
    the bundled tasks plus ``include_paths``."""
    run = read_run(run_dir)
    tasks = [t for t in run.configs if t.startswith("diavlo_")]
    if not tasks:
        raise HarnessError(f"{run_dir}: the run has no diavlo_<source> task (tasks: {', '.join(run.configs)})")
    audit = ModelAudit(run.config.model, str(run_dir))
    counts = {
        "pairs": 0,
        "pairs_with_concepts": 0,
        "concepts": 0,
        "concepts_without_box": 0,
        "pairs_sampled": 0,
        "counterfactuals": 0,
    }
    plans: list[tuple[dict[str, Any], GenerationRequest]] = []
    for task in tasks:
        records = read_samples(run_dir, task)
        rows = pair_rows(records, config.thresholds)
        audit.per_source[task] = behaviour_summary(rows, config.mi_estimator, config.mi_resamples, config.seed)
        audit.pairs.extend({**r, "task": task} for r in rows)
        opened = open_run_task(run, task, data_dir, include_paths)
        prompts, docs = opened.prompts, opened.docs
        params, n = _params(run, task)
        for record in records:
            if record.error is not None or not record.responses:
                continue
            counts["pairs"] += 1
            plans.extend(
                _pair_plans(
                    record, docs[record.doc_id], prompts, (params, n, run.config.seed), config, detector, counts, task
                )
            )
    audit.overall = behaviour_summary(audit.pairs, config.mi_estimator, config.mi_resamples, config.seed)
    errors = _answer_counterfactuals(audit, plans, backend, store, config.batch_size)
    counts["counterfactuals"] = len(plans)
    counts["counterfactual_errors"] = len({r.key for _, r in plans} & set(errors))
    audit.counts = counts
    audit.effects = {outcome: _effects(audit.counterfactuals, outcome, config.dml) for outcome in OUTCOMES}
    audit.structure = structure_checks(audit.counterfactuals, config.seed)
    return audit


def _answer_counterfactuals(
    audit: ModelAudit, plans: list[tuple[dict[str, Any], GenerationRequest]], backend: Any, store: Any, batch_size: int
) -> dict[str, Any]:
    """Ask the model every occluded image's question and add each row, scored (flip, distance from the
    original answer) or with its error, to ``audit.counterfactuals``; returns the errors by request key."""
    responses, errors = answer_requests(backend, [req for _, req in plans], store, batch_size)
    encoder = shared_encoder()
    for row, req in plans:
        doc, original = row.pop("_doc"), row.pop("_original")
        if req.key in errors:
            row["error"] = str(errors[req.key])
            audit.counterfactuals.append(row)
            continue
        answer = responses[req.key][0]
        correct = performance(doc, answer, BINARY) == 1.0
        row.update(
            answer=answer,
            flip=float(correct != row["original_correct"]),
            distance=float(1.0 - encoder.vector(original) @ encoder.vector(answer)),
        )
        audit.counterfactuals.append(row)
    return errors


def structure_checks(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """Per pair, the structural refutation of its specification read as a causal graph
    (:mod:`harness.protocols.diavlo.structure`; the outcome is the correctness flip)."""
    pairs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if "error" not in r:
            pairs.setdefault((r["task"], r["doc_id"]), []).append(r)
    out = []
    for (task, doc_id), mine in pairs.items():
        concepts = mine[0]["concepts"]
        data = {c: np.array([float(c in r["occluded"]) for r in mine]) for c in concepts}
        data[OUTCOME] = np.array([r["flip"] for r in mine], dtype=float)
        graph = rk_graph(concepts, [tuple(e) for e in mine[0]["spec_edges"]])
        out.append({"task": task, "doc_id": doc_id, **falsify_graph(graph, data, seed=seed).as_dict()})
    return out


def _pair_plans(
    record: SampleRecord,
    doc: dict[str, Any],
    prompts: Any,
    generation: tuple[GenerationParams, int, int],
    config: DiavloAuditConfig,
    detector: Any | None,
    counts: dict[str, int],
    task: str,
) -> list[tuple[dict[str, Any], GenerationRequest]]:
    """The counterfactual requests of one pair (module docstring, steps 1-2), each with its row."""
    params, n, base_seed = generation
    rk, _ = rk_from_turns(record.turns)
    concepts = _concept_names(c for t in rk for c in (t.subject, t.object))
    origin, spec = "rk", [(t.subject, t.object) for t in rk]
    sk = DiavloRow.read(doc, "sk_triplets")
    if not concepts and config.concepts == "rk_or_sk":
        concepts = _concept_names(c for t in sk for c in (t["subject"], t["object"]))
        origin, spec = "sk", [(t["subject"], t["object"]) for t in sk]
    edges = [(normalize_answer(s), normalize_answer(o)) for s, o in spec]
    if not concepts:
        return []
    counts["pairs_with_concepts"] += 1
    image = DiavloRow.read(doc, "image").convert("RGB")
    boxes = concept_boxes(concepts, sk, image, config.match_threshold, detector)
    boxed = [c for c in concepts if boxes[c] is not None]
    counts["concepts"] += len(concepts)
    counts["concepts_without_box"] += len(concepts) - len(boxed)
    if not boxed:
        return []
    counts["pairs_sampled"] += is_sampled(len(boxed), config.max_subsets)
    original = record.responses[0]
    original_correct = performance(doc, original, BINARY) == 1.0
    plans = []
    for design in occlusion_designs(boxed, config.max_subsets, config.seed + record.doc_id):
        cf_doc = {**doc, "image": occlude(image, [box for c in design if (box := boxes[c]) is not None])}
        messages = prompts.build_messages(cf_doc)
        request = make_request(messages, params, n, base_seed)
        plans.append(
            (
                {
                    "task": task,
                    "doc_id": record.doc_id,
                    "concept_origin": origin,
                    "concepts": boxed,
                    "occluded": list(design),
                    "spec_edges": edges,
                    "boxes": {c: boxes[c] for c in boxed},
                    "size": list(image.size),
                    "original_correct": original_correct,
                    "_doc": doc,
                    "_original": original,
                },
                request,
            )
        )
    return plans


def _concept_names(names: Iterable[str]) -> list[str]:
    """Distinct concept names, normalised (lowercase, no articles or punctuation) so that "The dog" and
    "dog" pool into one concept across pairs."""
    return [n for n in dict.fromkeys(normalize_answer(name) for name in names) if n]


def _effects(rows: list[dict[str, Any]], outcome: str, settings: DMLSettings) -> list[ConceptEffect]:
    """One DML estimate per concept name over the rows of the pairs that have it (module docstring)."""
    ok = [r for r in rows if "error" not in r]
    names = sorted({c for r in ok for c in r["concepts"]})
    out = []
    for name in names:
        mine = [r for r in ok if name in r["concepts"]]
        y = np.array([r[outcome] for r in mine])
        t = np.array([float(name in r["occluded"]) for r in mine])
        x = np.array(
            [
                [
                    len([c for c in r["occluded"] if c != name]),
                    _area_share([r["boxes"][c] for c in r["occluded"] if c != name], tuple(r["size"])),
                    len(r["concepts"]),
                    float(r["original_correct"]),
                ]
                for r in mine
            ]
        )
        if len(y) and np.ptp(y) == 0:
            out.append(
                ConceptEffect(
                    name,
                    len(y),
                    int(t.sum()),
                    None,
                    None,
                    None,
                    True,
                    (f"outcome {outcome} is constant ({y[0]:g}) across the designs",),
                )
            )
            continue
        out.append(concept_effect(name, y, t, x, settings))
    return out


def occlusion_statement(audits: list[ModelAudit], max_subsets: int) -> str:
    """The report's sentence on the occlusion designs: the full power set, or how many pairs were sampled."""
    full = max_subsets.bit_length() - 1  # the most concepts whose power set fits
    sampled = sum(a.counts.get("pairs_sampled", 0) for a in audits)
    pairs = sum(a.counts.get("pairs_with_concepts", 0) for a in audits)
    text = f"full power set of the boxed concepts for pairs with at most {full} (up to {max_subsets} designs)"
    if not sampled:
        return f"{text}: every pair"
    return f"{text}; {sampled} of {pairs} pairs had more and got {max_subsets} sampled subsets"


def audit_report(audits: list[ModelAudit], config: DiavloAuditConfig) -> DiavloAuditReport:
    """The audit as audit.json holds it (pair and counterfactual rows are in their CSVs)."""
    return DiavloAuditReport(
        config=DiavloSettings.model_validate({**asdict(config), "outcomes": list(OUTCOMES)}),
        occlusion=occlusion_statement(audits, config.max_subsets),
        models={
            a.model: ModelReport(
                run_dir=a.run_dir,
                per_source=a.per_source,
                overall=a.overall,
                counts=a.counts,
                structure={"verdicts": dict(Counter(c["verdict"] for c in a.structure)), "pairs": a.structure},
                effects={o: [e.as_dict() for e in es] for o, es in a.effects.items()},
            )
            for a in audits
        },
    )


def write_audit(audits: list[ModelAudit], config: DiavloAuditConfig, out_dir: Path) -> Path:
    """audit.json, pairs.csv, counterfactuals.csv, effects.csv and the three plots."""
    from harness.protocols.diavlo.plots import class_shares_plot, concept_effects_plot, similarity_performance_plot

    out_dir.mkdir(parents=True, exist_ok=True)
    audit_report(audits, config).write(out_dir)
    _csv(out_dir / "pairs.csv", [{"model": a.model, **r} for a in audits for r in a.pairs])
    _csv(
        out_dir / "counterfactuals.csv",
        [
            {"model": a.model, **{k: (json.dumps(v) if isinstance(v, list | dict) else v) for k, v in r.items()}}
            for a in audits
            for r in a.counterfactuals
        ],
    )
    _csv(
        out_dir / "effects.csv", [_effect_row(a.model, o, e) for a in audits for o, es in a.effects.items() for e in es]
    )
    class_shares_plot(
        {(a.model, task): s["classes"] for a in audits for task, s in a.per_source.items()},
        out_dir / "class_shares.png",
    )
    similarity_performance_plot({a.model: a.pairs for a in audits}, out_dir / "similarity_performance.png")
    for outcome in OUTCOMES:
        concept_effects_plot(
            {a.model: [e.as_dict() for e in a.effects[outcome]] for a in audits},
            outcome,
            out_dir / f"concept_effects_{outcome}.png",
        )
    return out_dir


def _effect_row(model: str, outcome: str, e: ConceptEffect) -> dict[str, Any]:
    def part(est: Any, prefix: str) -> dict[str, Any]:
        if est is None:
            return {f"{prefix}effect": None, f"{prefix}se": None, f"{prefix}ci_low": None, f"{prefix}ci_high": None}
        return {
            f"{prefix}effect": est.effect,
            f"{prefix}se": est.se,
            f"{prefix}ci_low": est.ci[0],
            f"{prefix}ci_high": est.ci[1],
        }

    return {
        "model": model,
        "outcome": outcome,
        "concept": e.concept,
        "n": e.n,
        "n_occluded": e.n_treated,
        **part(e.estimate, ""),
        **part(e.placebo, "placebo_"),
        **part(e.random_common_cause, "rcc_"),
        "inconclusive": e.inconclusive,
        "reasons": "; ".join(e.reasons),
    }


def _csv(path: Path, rows: list[dict[str, Any]]) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def summary_tables(report: DiavloAuditReport) -> str:
    """Markdown tables: classes, RK losses and MI per model; each concept's effects with refutations."""
    lines = [
        "| Model | Pairs | Aligned [95% CI] | Expanded [95% CI] | Divergent [95% CI] | Unnamed [95% CI] | RK losses "
        "| MI nats [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, m in report.models.items():
        overall, mi = m.overall, m.overall.mutual_information
        intervals = overall.classes.intervals or {}
        shares = " | ".join(with_interval(v, intervals.get(c), 2) for c, v in overall.classes.shares.items())
        ci = mi.ci95 if isinstance(mi, MutualInformation) else None
        mi_text = "-" if mi.mi_nats is None else f"{mi.mi_nats:.3f}"
        mi_text += f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        lines.append(f"| {model} | {overall.pairs} | {shares} | {overall.rk_losses.total} | {mi_text} |")
    lines += [
        "",
        "| Model | Outcome | Concept | n | Effect [95% CI] | Placebo | RCC | Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, m in report.models.items():
        for outcome, effects in m.effects.items():
            for e in effects:
                verdict = f"inconclusive ({'; '.join(e.reasons)})" if e.inconclusive else "estimate"
                if e.estimate is None:
                    lines.append(f"| {model} | {outcome} | {e.concept} | {e.n} | - | - | - | {verdict} |")
                    continue
                est = e.estimate
                checks = " | ".join(
                    "-" if c is None else f"{c.effect:+.3f}" for c in (e.placebo, e.random_common_cause)
                )
                lines.append(
                    f"| {model} | {outcome} | {e.concept} | {e.n} | {est.effect:+.3f} "
                    f"[{est.ci95[0]:+.3f}, {est.ci95[1]:+.3f}] | {checks} | {verdict} |"
                )
    shares = interval_note([i for m in report.models.values() for i in (m.overall.classes.intervals or {}).values()])
    notes = [shares.replace("Intervals:", "Class shares' intervals:")] if shares else []
    notes += ["Effects: 95% CIs as doubleml reports them (method dml, over counterfactual rows)."]
    notes += [note for model, m in report.models.items() for note in _empty_figure_notes(model, m)]
    return "\n".join([*lines, "", *notes])


def _empty_figure_notes(model: str, audit: ModelReport) -> list[str]:
    """One line per empty part of a model's tables, saying why (a random-weight model empties all three)."""
    overall, notes = audit.overall, []
    losses = overall.rk_losses
    if not overall.classes.n:
        lost = ", ".join(f"{k} {v}" for k, v in losses.model_dump(exclude={"total", "rate"}).items() if v)
        notes.append(
            f"Note: {model}: no pair has a class (a class needs REALLY-KNOW triplets from turn 3 "
            f"and SHOULD-KNOW ones); {losses.total} of {overall.pairs} pairs lost their RK"
            f"{f' ({lost})' if lost else ''}, so the class shares are `-`; the turns are in the run's "
            "samples files"
        )
    mi = overall.mutual_information
    if isinstance(mi, TooFewPairs):
        notes.append(f"Note: {model}: MI is `-`: {mi.note} ({mi.n})")
    if not any(audit.effects.values()):
        c = audit.counts
        notes.append(
            f"Note: {model}: no concept effect: {c.pairs_with_concepts} of "
            f"{c.pairs} pairs have concepts to occlude (from RK, or SK with --concepts "
            f"rk_or_sk) and {c.counterfactuals} counterfactuals were asked"
        )
    return notes
