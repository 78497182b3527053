"""Metric math as plain functions; task ``utils.py`` files are glue that call into it.

Protocol-neutral only: nothing here imports a protocol (a protocol's own formulas live in its package).
"""

from harness.metrics.alttest import AltTestResult, alt_test
from harness.metrics.entropy import semantic_entropy

__all__ = ["AltTestResult", "alt_test", "semantic_entropy"]
