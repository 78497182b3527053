"""DiaVLo per-pair scoring and the per-run report: performance, RK extraction with loss accounting,
SK-RK similarity and class, class shares, and the bootstrapped MI between similarity and performance.

Turn 1 is the answer, turn 2 the rationale, turn 3 the rationale as triplets (``harness_turns``);
RK is parsed from turn 3 of the first sample. RK loss statuses: ``ok``, ``empty``, ``unusable``
(see :mod:`harness.protocols.diavlo.triplet_parser`), ``turn_error`` (turn 2 or 3 failed to generate) and
``no_turns`` (a runner without follow-up turns, e.g. lmms-eval).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.metrics.answer_scoring import LETTERS, choice_letter, vqa_accuracy
from harness.metrics.bootstrap import cluster_intervals
from harness.metrics.squad import normalize_answer, token_f1
from harness.protocols.diavlo.metrics import (
    CLASSES,
    LN2,
    MiEstimator,
    Thresholds,
    Triplet,
    behaviour_class,
    best_match,
    class_shares,
    mutual_information,
    similarity_matrix,
)
from harness.protocols.diavlo.rows import UNIT, DiavloRow
from harness.protocols.diavlo.triplet_parser import OK, parse_triplets
from harness.results.metric_key import figures
from harness.results.schema import Turn

TURN_ERROR, NO_TURNS = "turn_error", "no_turns"
LOSSES = ("empty", "unusable", TURN_ERROR, NO_TURNS)
DEFAULT_THRESHOLDS = Thresholds()


@functools.cache
def shared_encoder() -> Any:
    """One offline MiniLM encoder per process (scoring, audits)."""
    from harness.embeddings import MiniLMEncoder

    return MiniLMEncoder()


CONTINUOUS, BINARY = "continuous", "binary"
#: The paper's performance scale per source: continuous in [0, 1] for LLaVA-Bench and MMBench (MI has no
#: fixed ceiling), binary {0, 1} for SEED-Bench-2 and VQA v2 (MI <= ln 2).
PERFORMANCE_SCALES = {"llava_bench": CONTINUOUS, "mmbench": CONTINUOUS, "seed_bench2": BINARY, "vqav2": BINARY}
#: What each (answer type, scale) scores; the paper gives the scales, not the scoring, so these are ours.
SCALE_DEFINITIONS = {
    ("multiple_choice", BINARY): "option accuracy: 1 when the chosen letter is the gold one",
    ("multiple_choice", CONTINUOUS): "1 when the chosen option is the gold one, else the MiniLM cosine of the "
    "chosen and the gold option texts, clipped to [0, 1]",
    ("vqa", BINARY): "1 when the answer equals the consensus answer (multiple_choice_answer) after normalisation",
    ("vqa", CONTINUOUS): "the official VQA accuracy, min(1, matches / 3) over the leave-one-out subsets",
    ("open", BINARY): "1 when the token F1 against the reference is at least 0.5",
    ("open", CONTINUOUS): "token F1 against the reference answer",
}


def performance_scale(doc: dict[str, Any]) -> str:
    """The paper's scale for the doc's source (:data:`PERFORMANCE_SCALES`); a source the paper does not
    use is continuous when open-ended, else binary."""
    kind = DiavloRow.read(doc, "answer_type", None)
    return PERFORMANCE_SCALES.get(
        str(DiavloRow.read(doc, "source", None)), CONTINUOUS if kind not in {"multiple_choice", "vqa"} else BINARY
    )


def performance(doc: dict[str, Any], answer: str, scale: str | None = None) -> float | None:
    """Performance of one answer on ``scale`` (default: the paper's for its source, :func:`performance_scale`;
    definitions in :data:`SCALE_DEFINITIONS`); None when a multiple-choice answer names no option."""
    scale = scale or performance_scale(doc)
    if scale not in {BINARY, CONTINUOUS}:
        raise HarnessError(f"performance scale {scale!r}: choose binary or continuous")
    kind, reference = DiavloRow.read(doc, "answer_type", None), DiavloRow.read(doc, "answer")
    if kind == "multiple_choice":
        options = DiavloRow.read(doc, "options", None) or []
        letter = choice_letter(answer, options)
        if letter is None or letter == reference or scale == BINARY:
            return None if letter is None else float(letter == reference)
        chosen, gold = (options[LETTERS.index(x)] for x in (letter, reference))
        encoder = shared_encoder()
        return max(0.0, float(encoder.vector(chosen) @ encoder.vector(gold)))
    if kind == "vqa":
        if scale == CONTINUOUS:
            return vqa_accuracy(answer, DiavloRow.read(doc, "answers", None) or [reference])
        return float(normalize_answer(answer) == normalize_answer(reference))
    f1 = token_f1(answer, reference)
    return f1 if scale == CONTINUOUS else float(f1 >= 0.5)


def rk_from_turns(turns: Sequence[Turn]) -> tuple[tuple[Triplet, ...], str]:
    """RK triplets of the first sample's last turn and the loss status (module docstring)."""
    if not turns:
        return (), NO_TURNS
    if any(t.error for t in turns) or not turns[-1].responses:
        return (), TURN_ERROR
    parsed = parse_triplets(turns[-1].responses[0])
    return parsed.triplets, parsed.status


def sk_triplets(doc: dict[str, Any]) -> list[Triplet]:
    """The pair's curated SK (SHOULD-KNOW) triplets, from its ``sk_triplets`` field (none when absent)."""
    return [Triplet(t["subject"], t["relation"], t["object"]) for t in DiavloRow.read(doc, "sk_triplets", None) or []]


def score_pair(
    doc: dict[str, Any], answer: str, turns: list[dict[str, Any]] | None, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> dict[str, Any]:
    """The per-pair metrics of a DiaVLo task (class indicators only for classified pairs)."""
    rk, status = rk_from_turns([Turn.model_validate(t) for t in turns or []])
    sk = sk_triplets(doc)
    pairing = best_match(similarity_matrix(rk, sk, shared_encoder())) if rk and sk else None
    similarity = pairing.similarity if pairing else None
    label = behaviour_class(len(rk), len(sk), similarity, thresholds)
    out: dict[str, Any] = {
        "performance": performance(doc, answer),
        "n_rk": float(len(rk)),
        "n_sk": float(len(sk)),
        "rk_parsed": float(status == OK),
        **{f"rk_{loss}": float(status == loss) for loss in LOSSES if loss != NO_TURNS},
    }
    if similarity is not None:
        out["similarity"] = similarity
    if label is not None:
        out.update({c.lower(): float(label == c) for c in CLASSES})
    return out


def pair_rows(records: Sequence[Any], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """One row per scored record: doc id, similarity, performance, sizes, class, RK loss status."""
    rows = []
    for r in records:
        if r.error is not None or not r.metrics:
            continue
        m = {key.metric: v for key, v in figures(r.metrics)}
        _, status = rk_from_turns(r.turns)
        sim = m.get("similarity")
        source = DiavloRow.read(r.doc, "source", r.task.removeprefix("diavlo_"))
        rows.append(
            {
                "doc_id": r.doc_id,
                "id": DiavloRow.read(r.doc, "id", None),
                "source": source,
                "scale": performance_scale({**r.doc, "source": source}),
                "similarity": sim,
                "performance": m.get("performance"),
                "n_rk": int(m.get("n_rk", 0)),
                "n_sk": int(m.get("n_sk", 0)),
                "rk_status": status,
                "class": behaviour_class(int(m.get("n_rk", 0)), int(m.get("n_sk", 0)), sim, thresholds),
            }
        )
    return rows


def scale_statement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The performance scale of each source among ``rows``, for the report: a binary scale bounds the MI
    by ln 2, a continuous one does not (the paper's Table 3 reading)."""
    by_source = {r["source"]: r["scale"] for r in rows}
    scales = set(by_source.values())
    return {
        "scale": scales.pop() if len(scales) == 1 else ("mixed" if scales else None),
        "by_source": by_source,
        "mi_upper_bound_nats": LN2 if set(by_source.values()) == {BINARY} else None,
    }


def class_share_intervals(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each class's share of the classified pairs with its 95% interval: a percentile bootstrap over the
    pairs (one per question, the protocol's unit; an unclassified pair is resampled too and leaves the
    denominator), clipped to [0, 1]; no interval where the share is undefined (no classified pair)."""
    labels = [r["class"] for r in rows]

    def shares(idx: np.ndarray) -> dict[str, float | None]:
        found = class_shares([labels[i] for i in idx])
        return {c: found[c] for c in CLASSES}

    intervals = cluster_intervals(len(labels), shares, UNIT.name, "bootstrap")
    return {c: interval.clipped(0.0, 1.0).model_dump() for c, interval in intervals.items()}


def behaviour_summary(
    rows: list[dict[str, Any]], estimator: MiEstimator = "knn", n_resamples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Class shares, RK losses and MI(similarity; performance) with its CI over a set of pair rows."""
    both = [r for r in rows if r["similarity"] is not None and r["performance"] is not None]
    mi = mutual_information(
        [r["similarity"] for r in both],
        [r["performance"] for r in both],
        estimator=estimator,
        n_resamples=n_resamples,
        seed=seed,
    )
    losses = {loss: sum(r["rk_status"] == loss for r in rows) for loss in LOSSES}
    return {
        "pairs": len(rows),
        "performance_scale": scale_statement(rows),
        "classes": {**class_shares([r["class"] for r in rows]), "intervals": class_share_intervals(rows)},
        "rk_losses": {
            **losses,
            "total": sum(losses.values()),
            "rate": sum(losses.values()) / len(rows) if rows else None,
        },
        "mutual_information": mi.as_dict()
        if mi
        else {"mi_nats": None, "n": len(both), "note": "fewer than 4 pairs with similarity and performance"},
    }


def report(records: Sequence[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """The task's ``harness_report``: the summary for this source, and its two plots."""
    rows = pair_rows(records)
    summary = behaviour_summary(rows, metadata.get("mi_estimator", "knn"), int(metadata.get("mi_resamples", 1000)))
    if out_dir is not None and rows:
        from harness.protocols.diavlo.plots import (
            NO_CLASSES,
            NO_POINTS,
            class_shares_plot,
            similarity_performance_plot,
        )

        task = records[0].task if records else "diavlo"
        plots = {
            f"{task}_classes.png": (
                class_shares_plot({("this model", task): summary["classes"]}, out_dir / f"{task}_classes.png"),
                NO_CLASSES,
            ),
            f"{task}_similarity_performance.png": (
                similarity_performance_plot({"this model": rows}, out_dir / f"{task}_similarity_performance.png"),
                NO_POINTS,
            ),
        }
        summary["plots"] = [name for name, (path, _) in plots.items() if path is not None]
        missing = [f"{name}: {reason}" for name, (path, reason) in plots.items() if path is None]
        if missing:
            summary["plot_not_drawn"] = "; ".join(missing)
    return summary
