"""FusionAudit on the leaderboard: the union risks, delta, the read-use gaps of both rendered-text variants
and the model's fusion level, from the submission's re-scored fusion_* samples, with a bootstrap CI over items
of the clean-correct set.

A submission carries the rendered-text attacks only (Typo-Evid and Nat-Evid; the pixel attacks of ``harness
attack`` are not part of it), so the board's R0, R+ and delta are the paper's with the pixel attacks' flip sets
empty: another figure than the audit's, which counts them. They carry names of their own (``r0_text``, "R0,
text attacks only", ...) and the table says why (``SCOPE``), so one name never stands for two values."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks

#: The board's restricted figures -> the audit's figure each is computed as (with no pixel attack run).
TEXT_ONLY = {"r0_text": "r0", "r_plus_text": "r_plus", "delta_text": "delta"}
SCOPE = (
    "On this board R0, R+ and delta count only the rendered-text attacks a submission carries (Typo-Evid, "
    "Nat-Evid): the pixel attacks (Vis-PGD, End-PGD, MANTIS) run on the auditor's side, so they are left out "
    "and the figures are named for it. harness audit fusion gives the paper's R0 and R+, pixel attacks included."
)
FIGURES = (
    Figure("r0_text", "R0, text attacks only", higher_is_better=False),
    Figure("r_plus_text", "R+, text attacks only", higher_is_better=False),
    Figure("delta_text", "delta (R+ - R0), text attacks only", higher_is_better=None),
    Figure("rug_typo", "RUG, Typo-Evid", low=-1.0, higher_is_better=None),
    Figure("rug_natevid", "RUG, Nat-Evid", low=-1.0, higher_is_better=None),
    Figure("fusion_level", "fusion level", low=None, high=None),
)
_CI = tuple(f.key for f in FIGURES if f.key != "fusion_level")


def _headline(evidence: Evidence) -> dict[str, Estimate]:
    from harness.protocols.fusion import metrics as fm
    from harness.protocols.fusion.audit import FusionAuditConfig, ModelRuns, model_outcomes

    if "fusion_clean" not in evidence.samples:
        return {}
    config = FusionAuditConfig()
    with tempfile.TemporaryDirectory(prefix="fusion-headline-") as tmp:
        for task, records in evidence.samples.items():  # the audit reads run folders: write the samples there
            (Path(tmp) / f"samples_{task}.jsonl").write_text(
                "".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8"
            )
        outcomes, _, seen, _ = model_outcomes(ModelRuns(evidence.model, evidence.model_type, [Path(tmp)]), config)
    figures = fm.model_figures(outcomes, config.delta_mode)
    intervals = fm.paired_bootstrap(
        {evidence.model: {o.item: o for o in outcomes}},
        seen,
        lambda sample: {k: fm.model_figures(sample[evidence.model])[TEXT_ONLY.get(k, k)] for k in _CI},
        config.n_resamples,
        config.seed,
    )
    n = len(outcomes)
    out = {
        key: Estimate(
            figures[TEXT_ONLY.get(key, key)],
            intervals[key].clipped(*fm.figure_range(TEXT_ONLY.get(key, key))).model_copy(update={"n": n}),
            n,
        )
        for key in _CI
    }
    out["fusion_level"] = Estimate(fm.fusion_level(evidence.model_type, model=evidence.model), None, n)
    return out


HOOKS = LeaderboardHooks(
    figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/fusion", scope=SCOPE
)
