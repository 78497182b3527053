"""Mode strings are Literal types: the command line offers exactly their values, and a value from outside
the type (an untyped caller) is refused with a one-line error (a stored option: each protocol's own tests,
as tests/protocols/vista/test_pool_settings.py)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from harness.cli.leaderboard import ON_MISMATCH_CHOICES
from harness.errors import HarnessError
from harness.leaderboard.service import OnMismatch, Settings
from harness.metrics.entailment_clusters import ClusteringRule, cluster_responses
from harness.protocols.diavlo.audit import ConceptSource, DiavloAuditConfig
from harness.protocols.diavlo.cli import CONCEPT_CHOICES, MI_ESTIMATOR_CHOICES
from harness.protocols.diavlo.metrics import MiEstimator, mutual_information
from harness.protocols.fusion.cli import DELTA_MODE_CHOICES, OAR_INCREASE_CHOICES
from harness.protocols.fusion.metrics import DeltaMode, OarIncreaseMode, deltas, oar_increase
from harness.protocols.vista.cli import CLUSTERING_CHOICES, REFERENCE_CHOICES
from harness.protocols.vista.metrics import Reference, suspicion_scores


@pytest.mark.parametrize(
    ("choices", "mode"),
    [
        (CLUSTERING_CHOICES, ClusteringRule),
        (REFERENCE_CHOICES, Reference),
        (DELTA_MODE_CHOICES, DeltaMode),
        (OAR_INCREASE_CHOICES, OarIncreaseMode),
        (CONCEPT_CHOICES, ConceptSource),
        (MI_ESTIMATOR_CHOICES, MiEstimator),
        (ON_MISMATCH_CHOICES, OnMismatch),
    ],
)
def test_cli_choices_are_the_literal_values(choices: tuple[str, ...], mode: Any) -> None:
    assert choices == get_args(mode)


def test_untyped_callers_get_a_one_line_error() -> None:
    bad: Any = "other"
    cases = [
        (lambda: cluster_responses(["a"], lambda a, b: True, bad), "clustering rule must be"),
        (lambda: suspicion_scores({"m": [0]}, reference=bad), "reference must be 'all' or 'peers'"),
        (lambda: deltas([], bad), "delta mode 'other': choose pathway or suite"),
        (lambda: oar_increase([], bad), "OAR increase mode 'other': choose per_item or ratio_of_means"),
        (lambda: mutual_information([0.1] * 4, [1.0] * 4, estimator=bad), "unknown MI estimator 'other'"),
        (lambda: DiavloAuditConfig(concepts=bad), "--concepts must be rk or rk_or_sk, got 'other'"),
        (lambda: Settings(db_url="sqlite://", on_mismatch=bad), "on_mismatch 'other': choose flag or refuse"),
    ]
    for call, message in cases:
        with pytest.raises(HarnessError, match=message) as caught:
            call()
        assert "\n" not in str(caught.value)
