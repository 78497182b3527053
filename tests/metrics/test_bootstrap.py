import numpy as np

from harness.metrics.bootstrap import cluster_ci


def test_ci_brackets_the_mean_and_is_degenerate_for_constant_data() -> None:
    values = np.array([0.0, 1.0] * 20)
    low, high = cluster_ci(len(values), lambda idx: values[idx].mean())
    assert 0.3 < low < 0.5 < high < 0.7
    const = np.ones(10)
    low, high = cluster_ci(10, lambda idx: const[idx].mean())
    assert low == high == 1.0
    assert cluster_ci(1, lambda idx: 0.0) is None
    assert cluster_ci(10, lambda idx: None) is None
