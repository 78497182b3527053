"""DiaVLo on the leaderboard: the behaviour-class shares and the mutual information between SK-RK
similarity and performance, over the pairs of all of a submission's DiaVLo sources (the server's
re-scored samples), with bootstrap CIs over pairs."""

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
    from harness.metrics.bootstrap import cluster_ci
    from harness.protocols.diavlo.report import behaviour_summary, pair_rows

    rows = [row for records in evidence.samples.values() for row in pair_rows(records)]
    if not rows:
        return {}
    summary = BehaviourSummary.model_validate(behaviour_summary(rows))
    classes = summary.classes
    labels = [r["class"] for r in rows if r["class"] is not None]

    def share(name: str) -> Estimate:
        ci = cluster_ci(len(labels), lambda idx: sum(labels[i] == name for i in idx) / len(idx))
        return Estimate(classes.shares[name], ci, classes.n)

    mi = summary.mutual_information
    return {
        **{name.lower(): share(name) for name, _, _ in CLASS_FIGURES},
        "mi": estimate(mi.mi_nats, mi.ci95 if isinstance(mi, MutualInformation) else None, mi.n),
    }


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/diavlo")
