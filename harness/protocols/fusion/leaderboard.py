"""FusionAudit on the leaderboard: R0, R+, delta, the read-use gaps of both rendered-text variants and the
model's fusion level, from the submission's re-scored fusion_* samples (the attacks a submission carries:
Typo-Evid and Nat-Evid; the pixel attacks of ``harness attack`` are not part of a submission), with a
paired-bootstrap 95% interval over the items of the clean-correct set (as the audit's)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks

FIGURES = (
    Figure("r0", "R0", higher_is_better=False),
    Figure("r_plus", "R+", higher_is_better=False),
    Figure("delta", "delta (R+ - R0)", higher_is_better=None),
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
        lambda sample: {k: fm.model_figures(sample[evidence.model])[k] for k in _CI},
        config.n_resamples,
        config.seed,
    )
    n = len(outcomes)
    out = {
        key: Estimate(figures[key], intervals[key].clipped(*fm.figure_range(key)).model_copy(update={"n": n}), n)
        for key in _CI
    }
    out["fusion_level"] = Estimate(fm.fusion_level(evidence.model_type, model=evidence.model), None, n)
    return out


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/fusion")
