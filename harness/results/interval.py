"""A figure's uncertainty: its interval, the method that made it, the unit it counts, or why there is none.

Every figure a person reads (a task metric in ``results.json``, an audit's headline, a leaderboard cell, a
report) carries one :class:`Interval`. The value is made once, where the figure is computed, and every
later reader (the printed table, ``harness compare``, the leaderboard, the viewer, the report) reads it
instead of deriving it again. A figure without an interval says why (``reason``), never prints 0.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

#: How an interval was made:
#: ``clt``: mean +- z * s / sqrt(n) over independent units (Miller 2024, eq. 1);
#: ``clustered``: mean +- z * the cluster-robust standard error, units sharing a cluster (an image, a
#: passage) counted once (Miller 2024, eq. 4; lmms-eval's ``_stderr_clustered``);
#: ``bootstrap``: percentile interval over resamples of single units;
#: ``cluster_bootstrap``: percentile interval over resamples of whole units (a protocol's unit: a sentence
#: with all its conditions, a query with all its answers);
#: ``paired_bootstrap``: percentile interval of a paired difference, both sides resampled together;
#: ``wilson``: Wilson score interval of a proportion;
#: ``t``: mean +- t(n-1) * s / sqrt(n) (a paired t-test's interval);
#: ``dml``: the interval double machine learning reports (doubleml).
IntervalMethod = Literal["clt", "clustered", "bootstrap", "cluster_bootstrap", "paired_bootstrap", "wilson", "t", "dml"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = get_args(IntervalMethod)

LEVEL = 0.95


class Interval(BaseModel):
    """A two-sided confidence interval ``[low, high]`` at ``level``, made by ``method`` over ``n`` units of
    kind ``unit``; when it cannot be made, ``low``/``high``/``method`` are None and ``reason`` says why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low: float | None = None
    high: float | None = None
    level: float = LEVEL
    method: IntervalMethod | None = None
    unit: str = Field(default="doc", description="what n counts and what was resampled or clustered")
    n: int = Field(default=0, description="how many units the interval rests on")
    reason: str | None = Field(default=None, description="why there is no interval (None when there is one)")

    @property
    def defined(self) -> bool:
        """Whether this holds an interval (both ends finite)."""
        return self.low is not None and self.high is not None

    @classmethod
    def of(
        cls, low: float, high: float, method: IntervalMethod, n: int, unit: str = "doc", level: float = LEVEL
    ) -> Interval:
        """An interval from its ends; non-finite ends make it a missing one that says so."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return cls.missing(f"the {method} interval is not finite", n, unit, level)
        return cls(low=float(min(low, high)), high=float(max(low, high)), level=level, method=method, unit=unit, n=n)

    @classmethod
    def missing(cls, reason: str, n: int = 0, unit: str = "doc", level: float = LEVEL) -> Interval:
        """No interval, and why (e.g. ``"fewer than 2 docs"``)."""
        return cls(level=level, unit=unit, n=n, reason=reason)

    def clipped(self, low: float | None, high: float | None) -> Interval:
        """The interval held to a figure's range (a share cannot leave [0, 1]; a normal interval can)."""
        if not self.defined:
            return self
        assert self.low is not None and self.high is not None
        lo, hi = self.low, self.high
        if low is not None:
            lo, hi = max(lo, low), max(hi, low)
        if high is not None:
            lo, hi = min(lo, high), min(hi, high)
        return self.model_copy(update={"low": lo, "high": hi})

    def text(self, digits: int = 3) -> str:
        """``[0.120, 0.340]``, or ``no interval (<reason>)``: how tables and pages print it."""
        if not self.defined:
            return f"no interval ({self.reason or 'not computed'})"
        return f"[{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def label(self) -> str:
        """What the interval is, for a column header or a tooltip: ``95% CI, clt over 120 docs``."""
        if not self.defined:
            return f"no interval over {self.n} {plural(self.unit)}"
        return f"{self.level:.0%} CI, {self.method} over {self.n} {plural(self.unit)}"


def plural(unit: str) -> str:
    """``docs``, ``items``, ``queries``: a unit's name counted."""
    return f"{unit[:-1]}ies" if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "o", "u") else f"{unit}s"
