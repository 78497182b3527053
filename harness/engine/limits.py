"""``--limit`` as lmms-eval reads it: a whole number N is the first N docs of each task, a fraction below 1
that share of each task's docs, rounded up (lmms-eval 0.7.3's ``get_sample_size``)."""

from __future__ import annotations

import math

from harness.errors import HarnessError

Limit = int | float


def parse_limit(text: str) -> Limit:
    """``--limit``'s value: a whole number >= 1, or a fraction in (0, 1); anything else is one line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if 0 < value < 1:
        return value
    if value >= 1 and value.is_integer():
        return int(value)
    raise HarnessError(
        f"--limit must be a whole number of docs >= 1 or a fraction of each task's docs in (0, 1), got {text!r}"
    )


def docs_to_run(rows: int, limit: Limit | None) -> int:
    """How many of a task's ``rows`` docs a run evaluates: all, the first ``limit``, or ``ceil(rows x limit)``
    for a fraction."""
    if limit is None:
        return rows
    if isinstance(limit, float) and limit < 1:
        return min(rows, math.ceil(rows * limit))
    return min(rows, int(limit))
