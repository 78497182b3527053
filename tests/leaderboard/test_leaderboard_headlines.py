"""The headline figures' values on the leaderboard: an interval clipped to its figure's range, kept through the
stored form, and the headline table a protocol's figures make (n, coverage). Each protocol's own headline
figures are pinned in its folder (tests/protocols/<name>/test_headlines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks, estimate
from harness.results.interval import Interval
from tests.leaderboard_fixtures import board_data_dir, board_runs  # noqa: F401 (the data_dir and runs fixtures)
from tests.protocols.headline_checks import ci


def test_intervals_are_clipped_to_the_figures_range() -> None:
    rate = Figure("r", "rate")
    assert Estimate(2 / 3, ci(0.013345, 1.319988), 3).clipped(rate) == Estimate(2 / 3, ci(0.013345, 1.0), 3)
    clipped = Estimate(0.1, ci(-0.2, 0.4), 3).clipped(rate).interval
    assert clipped is not None and (clipped.low, clipped.high, clipped.method) == (0.0, 0.4, "cluster_bootstrap")
    count = Estimate(3.0, ci(-1.0, 9.0)).clipped(Figure("c", "count", high=None)).interval
    assert count is not None and (count.low, count.high) == (0.0, 9.0)
    assert Estimate("L2").clipped(rate) == Estimate("L2")
    assert estimate(float("nan"), {"low": 0.1}, 4.0) == Estimate(None, None, 4)  # a malformed interval: none


def test_an_estimate_keeps_its_interval_through_json_and_reads_older_records() -> None:
    """The interval (method, unit, n) survives the stored form; a record stored before intervals were typed
    holds a bare ``ci`` pair, read as the percentile bootstrap over units every protocol made it by."""
    found = Estimate(0.5, ci(0.25, 0.75, 8, "paired_bootstrap"), 8)
    assert Estimate.from_json(found.as_json()) == found
    old = Estimate.from_json({"value": 0.5, "ci": [0.25, 0.75], "n": 8})
    assert old.interval is not None and (old.interval.low, old.interval.method, old.interval.n) == (
        0.25,
        "cluster_bootstrap",
        8,
    )
    assert Estimate.from_json({"value": "L2", "ci": None, "n": 3}) == Estimate("L2", None, 3)


def test_a_headline_table_shows_the_protocols_figures_clipped_with_n_and_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path, runs: list[Path]
) -> None:
    """A toy protocol over shapes_color whose headline is the accuracy with a normal interval: the table
    has its figure (clipped to [0, 1]) instead of the raw metric columns, which stay on the model page."""
    from harness.leaderboard.bundle import read_run_files
    from harness.leaderboard.db import Database
    from harness.leaderboard.records import list_submissions
    from harness.leaderboard.service import Settings, submit_files
    from harness.leaderboard.tables import protocol_tables
    from harness.protocols import base
    from harness.results.schema import read_run

    def accuracy(evidence: Evidence) -> dict[str, Estimate]:
        values = [r.metrics["exact_match,none"] for r in evidence.samples["shapes_color"] if r.error is None]
        mean = sum(values) / len(values)
        return {"accuracy": Estimate(mean, Interval.of(mean - 2.0, mean + 2.0, "clt", len(values)), len(values))}

    base.protocols()
    toy = base.Protocol(
        name="toy",
        title="Toy",
        summary="Colors named right.",
        tasks=("shapes_color",),
        extensions={
            "leaderboard": LeaderboardHooks(
                figures=(Figure("accuracy", "accuracy"),), headline=accuracy, card="https://example.org/c"
            )
        },
    )
    monkeypatch.setitem(base._REGISTRY, "toy", toy)
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    submit_files(db, read_run_files(runs[0]), "alice", Settings(data_dir=data_dir))
    tables = {t.protocol: t for t in protocol_tables(list_submissions(db))}
    toy_table = tables["toy"]
    assert [c.key for c in toy_table.columns] == ["accuracy"] and toy_table.summary == "Colors named right."
    cell = toy_table.rows[0].cells["accuracy"]
    assert cell.n == 3 and (cell.low, cell.high) == (0.0, 1.0) and cell.interval == "95% CI, clt over 3 docs"
    unparsed = read_run(runs[0]).counts["shapes_color"].unparsed  # the tiny model's answers name no color
    assert (cell.errors, cell.unparsed, cell.status) == (0, max(unparsed.values(), default=0), "verified")
    # shapes_kind stays in its group's table; the group's own figure goes with its first task (the toy's)
    assert {c.task for c in tables["shapes"].columns} == {"shapes_kind"}
    db.close()
