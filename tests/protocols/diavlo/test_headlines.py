"""DiaVLo's headline figures (its leaderboard hooks), pinned by hand-computed values on hand-built samples
and reports."""

from __future__ import annotations

from harness.results.schema import SampleRecord
from tests.protocols.headline_checks import evidence, headline, record


def test_diavlo_headline_class_shares_over_all_sources() -> None:
    """Four classified pairs over two sources: similarity 0.9 with 2 RK <= 2 SK is Aligned (twice), 0.2 is
    Divergent, 0.5 with 3 RK > 2 SK is Expanded; a pair without RK is unclassified: shares 1/2, 1/4,
    1/4, 0 of n = 4."""

    def pair(task: str, i: int, similarity: float | None, n_rk: int) -> SampleRecord:
        metrics = {"performance,none": float(i % 2), "n_rk,none": float(n_rk), "n_sk,none": 2.0}
        if similarity is not None:
            metrics["similarity,none"] = similarity
        return record(task, i, metrics)

    samples = {
        "diavlo_mmbench": [pair("diavlo_mmbench", 0, 0.9, 2), pair("diavlo_mmbench", 1, 0.2, 2)],
        "diavlo_vqav2": [
            pair("diavlo_vqav2", 0, 0.9, 1),
            pair("diavlo_vqav2", 1, 0.5, 3),
            pair("diavlo_vqav2", 2, None, 0),
        ],
    }
    figures = headline("diavlo", evidence(samples))
    assert (
        figures["aligned"].value,
        figures["divergent"].value,
        figures["expanded"].value,
        figures["unnamed"].value,
    ) == (0.5, 0.25, 0.25, 0.0)
    aligned = figures["aligned"].interval
    assert figures["aligned"].n == 4 and aligned is not None and aligned.method == "bootstrap"
    assert aligned.unit == "question" and aligned.n == 5  # the unclassified pair is resampled too
    assert figures["mi"].n == 4
