"""Stealth's evidence for ``harness report`` and ``harness view``: the conditions whose interval excludes zero
are flagged (the shared evidence layer: tests/protocols/test_evidence.py)."""

from __future__ import annotations

from harness.results.interval import Interval


def test_stealth_flags_the_conditions_whose_interval_excludes_zero() -> None:
    from types import SimpleNamespace

    from harness.protocols.stealth.evidence import _bias_section

    total = Interval.of(0.5, 1.2, "cluster_bootstrap", 10, unit="sentence")
    report = {
        "sentences": 10,
        "total_range": {"value": 0.9, "interval": total.model_dump()},
        "by_condition": {
            "positive-green-34": {"value": 0.1, "ci95": [-0.1, 0.3]},
            "negative-red-34": {"value": -0.5, "ci95": [-0.8, -0.2]},
            "positive-blue-85": {"value": 0.4, "ci95": [0.1, 0.7]},
        },
    }
    section = _bias_section("stealth_short", SimpleNamespace(model="m"), report, 6)  # type: ignore[arg-type]
    assert section.flag == (
        "2 condition(s) shift the sentiment label, their 95% interval excluding 0: negative-red-34, positive-blue-85"
    )
    assert [row[0] for row in section.tables[0].rows] == ["negative-red-34", "positive-blue-85", "positive-green-34"]
    assert section.figures[0].key == "total_range" and section.figures[0].interval == total
