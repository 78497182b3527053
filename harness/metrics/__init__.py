"""Metric math as plain functions; task ``utils.py`` files are glue that call into it."""

from harness.metrics.alttest import AltTestResult, alt_test
from harness.protocols.vista.metrics import semantic_entropy, suspicion_scores

__all__ = ["AltTestResult", "alt_test", "semantic_entropy", "suspicion_scores"]
