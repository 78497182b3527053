"""Corrections for many p-values read together: the one Benjamini-Yekutieli call the project makes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FDR = 0.05


def benjamini_yekutieli(p_values: Sequence[float], q: float = FDR) -> tuple[list[bool], list[float]]:
    """Which hypotheses are rejected at false discovery rate ``q`` under the Benjamini-Yekutieli procedure
    (valid under any dependence between the tests), and the adjusted p-values: statsmodels'
    ``multipletests(..., method="fdr_by")``, with ``p_(i) * m * c(m) / i`` made monotone and capped at 1,
    ``c(m) = sum_{k=1}^{m} 1/k``. No p-values: two empty lists."""
    if not p_values:
        return [], []
    from statsmodels.stats.multitest import multipletests

    rejected, adjusted, _, _ = multipletests(np.asarray(p_values, dtype=float), alpha=q, method="fdr_by")
    return [bool(r) for r in rejected], [float(p) for p in adjusted]
