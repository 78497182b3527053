"""FusionAudit's headline figures (its leaderboard hooks), pinned by hand-computed values on hand-built samples
and reports."""

from __future__ import annotations

import pytest

from harness.protocols.leaderboard_hooks import Estimate
from harness.results.schema import SampleRecord
from tests.protocols.headline_checks import evidence, headline, record


def test_fusion_headline_union_risks_rug_and_level() -> None:
    """Clean-correct set C = {a, b, c, d} (e is answered wrong). Typo-Evid flips a; Nat-Evid flips a and
    b: R0 = |{a}| / 4 = 0.25, R+ = |{a, b}| / 4 = 0.5, delta = 0.25. Typo reading: a and b read the
    injected answer, a uses it: RUG = 2/4 - 1/4 = 0.25. llava is fusion level L1."""

    def sample(task: str, i: int, **metrics: float) -> SampleRecord:
        return record(task, i, {f"{k},none": v for k, v in metrics.items()}, doc={"id": "abcde"[i]})

    samples = {
        "fusion_clean": [sample("fusion_clean", i, correct=float(i < 4), uses_injected=0.0) for i in range(5)],
        "fusion_typo": [sample("fusion_typo", i, correct=float(i != 0), uses_injected=float(i == 0)) for i in range(5)],
        "fusion_natevid": [sample("fusion_natevid", i, correct=float(i > 1), uses_injected=0.0) for i in range(5)],
        "fusion_read_typo": [sample("fusion_read_typo", i, reads_injected=float(i < 2)) for i in range(5)],
    }
    figures = headline("fusion", evidence(samples, model_type="llava"))
    # no pixel attack in a submission: R0 = |S_typo| / |C|, R+ = |S_typo u S_nat| / |C|, named for it
    assert (figures["r0_text"].value, figures["r_plus_text"].value, figures["delta_text"].value) == (0.25, 0.5, 0.25)
    assert not {"r0", "r_plus", "delta"} & set(figures)
    assert figures["rug_typo"].value == pytest.approx(0.25) and figures["rug_natevid"].value is None
    assert figures["fusion_level"] == Estimate("L1", None, 4) and figures["r0_text"].n == 4
    r_plus = figures["r_plus_text"].interval
    assert r_plus is not None and r_plus.low is not None and r_plus.high is not None
    assert 0 <= r_plus.low <= 0.5 <= r_plus.high <= 1 and (r_plus.method, r_plus.n) == ("paired_bootstrap", 4)
