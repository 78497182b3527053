"""The leaderboard plug-in contract: what a protocol hands the leaderboard, as
``Protocol.extensions["leaderboard"]`` (a ``LeaderboardHooks``): its headline table (the figures its paper
reports, each with CI and n), its options, and an optional job run after new submissions (with the panel it
shows). The hooks that need stored data get a ``PoolStore`` scoped to their protocol, never the database.

These types sit in the protocol layer so that protocol packages build their hooks without importing the
leaderboard; the leaderboard (``harness.leaderboard.hooks``) loads and runs them for every registered
protocol and never names one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.protocols.pool_store import PoolStore
from harness.results.schema import SampleRecord

Options = Mapping[str, Any]  # a protocol's option values by name, defaults filled in


@dataclass(frozen=True)
class Option:
    """A setting of a protocol's leaderboard part; ``harness leaderboard serve|import`` offers it as
    ``--<protocol>-<name>`` (its type is its default's)."""

    name: str
    default: str | float
    help: str


@dataclass(frozen=True)
class Figure:
    """A headline column: its key, header, the metric's range (intervals are clipped to it; None: open)
    and which way is better (None: neither, e.g. a count or a level)."""

    key: str
    label: str
    low: float | None = 0.0
    high: float | None = 1.0
    higher_is_better: bool | None = None


@dataclass(frozen=True)
class Estimate:
    """One figure of one submission: its value (a number, or a word such as a level), 95% CI and n."""

    value: float | str | None
    ci: tuple[float, float] | None = None
    n: int | None = None

    def clipped(self, figure: Figure) -> Estimate:
        """The estimate with its interval clipped to the figure's range (a normal interval can leave it)."""
        if self.ci is None:
            return self
        low, high = self.ci
        if figure.low is not None:
            low, high = max(low, figure.low), max(high, figure.low)
        if figure.high is not None:
            low, high = min(low, figure.high), min(high, figure.high)
        return Estimate(self.value, (low, high), self.n)

    def as_json(self) -> dict[str, Any]:
        """The estimate as JSON (``value``, ``ci`` as a list or None, ``n``)."""
        return {"value": self.value, "ci": list(self.ci) if self.ci else None, "n": self.n}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        """The estimate from its ``as_json`` form."""
        ci = data.get("ci")
        return cls(data.get("value"), (float(ci[0]), float(ci[1])) if ci else None, data.get("n"))


def estimate(value: Any, ci: Any = None, n: Any = None) -> Estimate:
    """An estimate from report values: a non-finite number or a malformed interval becomes None."""
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if isinstance(number, float) and not math.isfinite(number):
        number = None
    interval = None
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        interval = (float(ci[0]), float(ci[1]))
    return Estimate(number, interval, int(n) if isinstance(n, int | float) and not isinstance(n, bool) else None)


@dataclass(frozen=True)
class Evidence:
    """What the server holds of one submission when it computes headline figures: its re-scored
    samples, task values and task reports (never the claim), by task."""

    model: str
    model_type: str | None
    results: Mapping[str, Mapping[str, Any]]
    reports: Mapping[str, Mapping[str, Any]]
    samples: Mapping[str, Sequence[SampleRecord]] = field(repr=False)


@dataclass(frozen=True)
class Panel:
    """A protocol's own section of the index page (e.g. a cross-model pool): a status line, the models it
    covers, an image, and its data as JSON and CSV (``tables/<key>.json|csv``, ``panels/<key>.png``)."""

    key: str
    title: str
    status: str
    message: str
    members: tuple[tuple[int, str], ...]  # (submission id, model)
    data: Mapping[str, Any]
    csv: str
    image: bytes | None = field(default=None, repr=False)
    model_notes: Mapping[int, str] = field(default_factory=dict)  # submission id -> a line on its page


@dataclass(frozen=True)
class Job:
    """Work after new submissions that carry one of ``tasks(options)`` (e.g. re-running a cross-model
    audit); the server runs it in a background thread, requests queued while one waits are merged."""

    tasks: Callable[[Options], Sequence[str]]
    run: Callable[[PoolStore, Options], None]


@dataclass(frozen=True)
class LeaderboardHooks:
    """A protocol's leaderboard part; every hook is optional.

    ``headline`` computes the figures of one submission when it is re-scored (stored with the record);
    ``pooled`` gives figures that depend on other submissions (read when pages are drawn), by submission
    id; ``panels`` are extra sections of the index page."""

    figures: tuple[Figure, ...] = ()
    headline: Callable[[Evidence], Mapping[str, Estimate]] | None = None
    pooled: Callable[[PoolStore, Options], Mapping[int, Mapping[str, Estimate]]] | None = None
    options: tuple[Option, ...] = ()
    job: Job | None = None
    panels: Callable[[PoolStore, Options], Sequence[Panel]] | None = None
    card: str | None = None  # the dataset card's Hub id or URL the "what this measures" line links
    scope: str = ""  # where the board's figures differ from the protocol's own audit, said under its table
