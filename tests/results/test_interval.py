"""The shared Interval value: made once with its method and unit, or missing with the reason why."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from harness.results.interval import Interval


def test_an_interval_keeps_its_method_unit_and_n_and_orders_its_ends() -> None:
    ci = Interval.of(0.4, 0.1, "clt", n=12, unit="doc")
    assert (ci.low, ci.high, ci.method, ci.n, ci.unit, ci.level) == (0.1, 0.4, "clt", 12, "doc", 0.95)
    assert ci.defined and ci.reason is None
    assert ci.text() == "[0.100, 0.400]"
    assert ci.label() == "95% CI, clt over 12 docs"


def test_a_missing_interval_says_why_instead_of_zero() -> None:
    ci = Interval.missing("fewer than 2 sentences", n=1, unit="sentence")
    assert not ci.defined and ci.low is None and ci.method is None
    assert ci.text() == "no interval (fewer than 2 sentences)"
    nan = Interval.of(math.nan, 1.0, "bootstrap", n=5)
    assert not nan.defined and nan.reason == "the bootstrap interval is not finite"


def test_clipping_holds_a_share_to_its_range() -> None:
    assert Interval.of(-0.24, 0.74, "clt", n=4).clipped(0.0, 1.0).text() == "[0.000, 0.740]"
    assert Interval.of(1.2, 1.5, "clt", n=4).clipped(0.0, 1.0).text() == "[1.000, 1.000]"
    assert Interval.missing("none").clipped(0.0, 1.0).reason == "none"


def test_it_round_trips_as_json_and_refuses_unknown_methods() -> None:
    ci = Interval.of(0.1, 0.2, "clustered", n=30, unit="image")
    assert Interval.model_validate_json(ci.model_dump_json()) == ci
    with pytest.raises(ValidationError):
        Interval.model_validate({"low": 0.0, "high": 1.0, "method": "guess", "n": 3})
