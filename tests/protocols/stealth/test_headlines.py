"""Stealth Prompt Testset's headline figures (its leaderboard hooks), pinned by hand-computed values on
hand-built samples and reports."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocols.leaderboard_hooks import Estimate
from harness.results.sample_error import SampleError
from tests.protocols.headline_checks import ci, evidence, headline, record


def test_stealth_headline_f1_drop_and_ier_under_decoy_salient() -> None:
    """F1 drop: question q1 has global F1s 1.0 and 0.5 (mean 0.75) and decoy F1 0.25 (drop 0.5); q2 has
    global 0.0 and decoy 0.5 (drop -0.5): mean 0.0 over 2 questions. IER: 2 decoy copies in 4 answers =
    0.5 (a CI over questions). Total Range and the max biases are the short set's report values, n its sentences."""

    def f1(q: str, condition: str, value: float) -> dict[str, Any]:
        return {"f1,none": {"sample_id": q, "condition": condition, "f1": value}}

    vqa = [
        record("stealth_vqa", 0, f1("q1", "global-16", 1.0)),
        record("stealth_vqa", 1, f1("q1", "global-64", 0.5)),
        record("stealth_vqa", 2, f1("q1", "decoy-16", 0.25)),
        record("stealth_vqa", 3, f1("q2", "global-16", 0.0)),
        record("stealth_vqa", 4, f1("q2", "decoy-16", 0.5)),
        record("stealth_vqa", 5, f1("q2", "answer-16", 1.0)),
    ]
    for i, (q, hit) in enumerate((("q1", 1), ("q1", 0), ("q2", 0), ("q2", 1))):
        vqa.append(record("stealth_vqa", 10 + i, {"ier,none": {"sample_id": q, "gray_level": 16, "hit": hit}}))
    vqa.append(record("stealth_vqa", 20, {}, error=SampleError("generation failed", "timeout")))
    report = {
        "sentences": 12,
        "total_range": {"value": 0.5, "interval": ci(0.25, 0.75, 12).model_dump()},
        "max_positive_bias": {"value": 0.25, "interval": ci(0.0, 0.5, 12).model_dump()},
        "max_negative_bias": {"value": -0.25, "interval": ci(-0.5, 0.0, 12).model_dump()},
    }
    figures = headline("stealth", evidence({"stealth_vqa": vqa, "stealth_short": []}, {"stealth_short": report}))
    assert figures["total_range"] == Estimate(0.5, ci(0.25, 0.75, 12), 12)
    assert figures["max_negative_bias"] == Estimate(-0.25, ci(-0.5, 0.0, 12), 12)
    drop = figures["f1_drop_decoy"]
    assert drop.value == pytest.approx(0.0) and drop.n == 2
    # drops 0.5 and -0.5: the mean of a resample of two questions is -0.5, 0 or 0.5
    assert drop.interval is not None and (drop.interval.low, drop.interval.high) == (-0.5, 0.5)
    assert drop.interval.method == "paired_bootstrap" and drop.interval.unit == "question"
    ier = figures["ier_decoy"]
    assert ier.value == pytest.approx(0.5) and ier.n == 4
    # each question copies once in two answers: every resample of questions is 0.5
    assert ier.interval is not None and not ier.interval.defined and ier.interval.n == 2
    assert ier.interval.reason == "every resample of the 2 questions gives 0.5"
