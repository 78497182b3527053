import math

import pytest

from harness.metrics.aggregation import mean, mean_stderr, median, pooled_stderr, total, weighted_mean


def test_mean_and_stderr_hand_computed() -> None:
    # values 1, 0, 1, 1: mean 0.75; sample sd = sqrt(((0.25^2)*3 + 0.75^2)/3) = 0.5; stderr = 0.5/2 = 0.25
    assert mean([1, 0, 1, 1]) == 0.75
    assert mean_stderr([1, 0, 1, 1]) == pytest.approx(0.25)


def test_unparsed_values_are_excluded_from_denominators() -> None:
    assert mean([1, None, 0, None]) == 0.5
    assert mean([None, None]) is None
    assert mean_stderr([1.0]) is None
    assert median([3, None, 1, 2]) == 2
    assert total([1, 2, None]) == 3


def test_group_weighted_mean_and_pooled_stderr_hand_computed() -> None:
    # task A: mean 0.5 over 4; task B: mean 1.0 over 2 -> size-weighted (2 + 2) / 6 = 2/3
    assert weighted_mean([0.5, 1.0], [4, 2]) == pytest.approx(2 / 3)
    assert weighted_mean([0.5, 1.0], [1, 1]) == 0.75
    # stderrs 0.25 (n=4) and 0.1 (n=4): variances 0.25, 0.04; pooled = (3*0.25 + 3*0.04)/(8-2) = 0.145
    assert pooled_stderr([0.25, 0.1], [4, 4]) == pytest.approx(math.sqrt(0.145 / 8))
