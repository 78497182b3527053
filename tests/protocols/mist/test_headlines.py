"""MIST's headline figures (its leaderboard hooks), pinned by hand-computed values on hand-built samples
and reports."""

from __future__ import annotations

from harness.protocols.leaderboard_hooks import Estimate
from harness.results.interval import Interval
from tests.protocols.headline_checks import ci, evidence, headline


def test_mist_headline_from_its_report() -> None:
    """The report's figures with their CIs and n = items; alt-test: 1 of 2 techniques pass (informed),
    0 of 1 (blind)."""
    report = {
        "items": 7,
        "figures": {
            "change_rate_misleading": {"value": 0.4, "interval": ci(0.2, 0.6, 7).model_dump()},
            "control_rate_misleading": {"value": 0.1, "interval": Interval.missing("no", 7, "item").model_dump()},
            "image_following_misleading": {"value": 0.75, "interval": ci(0.5, 1.0, 7).model_dump()},
            "agreement_misleading": {"value": None, "interval": None},
        },
        "alt_test": {
            "informed": {"direct": {"passed": True}, "cot": {"passed": False}},
            "blind": {"direct": {"passed": False}},
        },
    }
    figures = headline("mist", evidence({"mist": []}, {"mist": report}))
    assert figures["change_rate_misleading"] == Estimate(0.4, ci(0.2, 0.6, 7), 7)
    assert figures["control_rate_misleading"] == Estimate(0.1, Interval.missing("no", 7, "item"), 7)
    assert figures["agreement_misleading"] == Estimate(None, None, 7)
    informed = figures["alt_test_informed"]
    assert (informed.value, informed.n) == (0.5, 2) and informed.interval is not None
    assert informed.interval.reason == "a share of alt-test verdicts, one per technique"
    assert figures["alt_test_blind"].value == 0.0
