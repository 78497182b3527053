"""What an entailment judge is: a decision ``entails(premise, hypothesis)``, and for the judges the harness
builds (``make_judge``) also a name for reports and a count of the model calls it made."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.metrics.entailment_clusters import Entails


@runtime_checkable
class Judge(Protocol):
    """An entailment judge that names itself and counts the decisions it had to compute."""

    name: str
    calls: int

    def __call__(self, premise: str, hypothesis: str) -> bool:
        """Whether ``premise`` entails ``hypothesis``."""


def model_calls(judge: Entails) -> int:
    """The model calls a judge has made so far (0 for a plain decision function, which counts none)."""
    return judge.calls if isinstance(judge, Judge) else 0
