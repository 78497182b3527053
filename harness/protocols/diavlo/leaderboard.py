"""DiaVLo on the leaderboard: the behaviour-class shares and the mutual information between SK-RK
similarity and performance, over the pairs of all of a submission's DiaVLo sources (the server's
re-scored samples), with their 95% intervals (bootstrap over questions, as in the report)."""

from __future__ import annotations

from harness.protocols.diavlo.audit_report import BehaviourSummary, MutualInformation
from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks, estimate

CLASS_FIGURES = (
    ("Aligned", "aligned share", True),
    ("Expanded", "expanded share", None),
    ("Divergent", "divergent share", False),
    ("Unnamed", "unnamed share", False),
)
FIGURES = (
    *(Figure(name.lower(), label, higher_is_better=better) for name, label, better in CLASS_FIGURES),
    Figure("mi", "MI (similarity; performance), nats", high=None),
)


def _headline(evidence: Evidence) -> dict[str, Estimate]:
    from harness.protocols.diavlo.report import behaviour_summary, pair_rows

    rows = [row for records in evidence.samples.values() for row in pair_rows(records)]
    if not rows:
        return {}
    summary = BehaviourSummary.model_validate(behaviour_summary(rows))
    classes = summary.classes
    intervals = classes.intervals or {}
    mi = summary.mutual_information
    return {
        **{
            name.lower(): Estimate(classes.shares[name], intervals.get(name), classes.n) for name, _, _ in CLASS_FIGURES
        },
        "mi": estimate(mi.mi_nats, mi.interval if isinstance(mi, MutualInformation) else None, mi.n),
    }


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/diavlo")
