"""Metric math as plain functions; task ``utils.py`` files are glue that call into it."""

from harness.metrics.alttest import AltTestResult, alt_test

__all__ = ["AltTestResult", "alt_test"]
