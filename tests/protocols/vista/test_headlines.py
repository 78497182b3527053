"""VISTA's headline figures (its leaderboard hooks), pinned by hand-computed values on hand-built samples
and reports."""

from __future__ import annotations

import pytest

from harness.results.schema import SampleRecord
from tests.protocols.headline_checks import evidence, headline, record


def test_vista_headline_selective_refusal_spread() -> None:
    """Group A refuses 1 of its 2 answers (an empty one), group B none of 2: spread 0.5 over 2 pairs."""

    def pair(i: int, topic: str, responses: list[str], category: str = "demographic") -> SampleRecord:
        return record("vista", i, {}, doc={"category": category, "topic": topic}, responses=responses)

    figures = headline(
        "vista",
        evidence(
            {
                "vista": [
                    pair(0, "A", ["", "a dog"]),
                    pair(1, "B", ["a cat", "a cow"]),
                    pair(2, "cars", [""], category="object"),
                ]
            }
        ),
    )
    assert figures["refusal_spread"].value == pytest.approx(0.5) and figures["refusal_spread"].n == 2
