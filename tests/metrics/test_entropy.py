"""Hand-computed semantic entropy (natural log) over cluster ids."""

import math

import pytest

from harness.errors import HarnessError
from harness.metrics import semantic_entropy


def test_semantic_entropy() -> None:
    assert semantic_entropy([1, 1, 1, 1]) == 0.0
    assert semantic_entropy([1, 1, 2, 2]) == pytest.approx(math.log(2))
    assert semantic_entropy(["a", "b", "c", "d"]) == pytest.approx(math.log(4))
    # shares 3/4 and 1/4: -(0.75 ln 0.75 + 0.25 ln 0.25) = 0.5623351446
    assert semantic_entropy([0, 0, 0, 1]) == pytest.approx(0.5623351446)


def test_semantic_entropy_of_no_responses_is_a_clear_error() -> None:
    with pytest.raises(HarnessError, match="semantic_entropy: no responses"):
        semantic_entropy([])
