"""The leaderboard plug-in contract: what a protocol hands the leaderboard, as
``Protocol.extensions["leaderboard"]`` (a ``LeaderboardHooks``): its headline table (the figures its paper
reports, each with its ``Interval`` and n), its options, and an optional job run after new submissions (with
the panel it shows). The hooks that need stored data get a ``PoolStore`` scoped to their protocol, never the database.

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
from harness.results.interval import Interval
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
    """One figure of one submission: its value (a number, or a word such as a level), its 95% interval
    (with the method and unit that made it, or why there is none; None for a figure that has no interval
    by nature, such as a level) and n."""

    value: float | str | None
    interval: Interval | None = None
    n: int | None = None

    def clipped(self, figure: Figure) -> Estimate:
        """The estimate with its interval clipped to the figure's range (a normal interval can leave it)."""
        if self.interval is None:
            return self
        return Estimate(self.value, self.interval.clipped(figure.low, figure.high), self.n)

    def as_json(self) -> dict[str, Any]:
        """The estimate as JSON (``value``, ``interval`` as the Interval's fields or None, ``n``)."""
        return {"value": self.value, "interval": self.interval.model_dump() if self.interval else None, "n": self.n}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        """The estimate from its ``as_json`` form; one stored before intervals were typed holds ``ci``, a bare
        pair, which every protocol made by a percentile bootstrap over its units."""
        n = data.get("n")
        return cls(data.get("value"), read_interval(data.get("interval"), data.get("ci"), n), n)


def read_interval(interval: Any, legacy_ci: Any = None, n: Any = None) -> Interval | None:
    """An Interval from its JSON (a mapping of its fields), or from a bare ``[low, high]`` pair of an older
    record (a percentile bootstrap over units); None when there is neither or it is malformed."""
    if isinstance(interval, Interval):
        return interval
    if isinstance(interval, Mapping):
        try:
            found = Interval.model_validate(interval)
        except ValueError:
            return None
        if found.defined:
            return found if found.method is not None else None
        return found if found.low is None and found.high is None and found.reason else None
    if isinstance(legacy_ci, list | tuple) and len(legacy_ci) == 2 and all(_is_number(v) for v in legacy_ci):
        count = int(n) if _is_number(n) else 0
        return Interval.of(float(legacy_ci[0]), float(legacy_ci[1]), "cluster_bootstrap", count, "unit")
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def estimate(value: Any, interval: Any = None, n: Any = None) -> Estimate:
    """An estimate from report values (``interval``: an Interval or its JSON): a non-finite number becomes
    None, a malformed interval None."""
    number = float(value) if _is_number(value) else value
    if isinstance(number, float) and not math.isfinite(number):
        number = None
    return Estimate(number, read_interval(interval), int(n) if _is_number(n) else None)


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
