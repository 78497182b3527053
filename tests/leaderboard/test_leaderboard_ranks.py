"""The leaderboard's rank intervals and paired comparisons, from the stored samples of real submissions
(tiny-model runs, one of them answering two docs right): the same statistics as ``harness compare``."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from harness.engine.compare import CompareOptions, compare_runs
from harness.leaderboard.db import Database
from harness.leaderboard.ranks import RankCell, compare_submissions, table_ranks
from harness.leaderboard.records import list_submissions
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Settings
from tests.leaderboard_fixtures import (  # noqa: F401 (board_* and ranked_board: fixtures)
    board_data_dir,
    board_runs,
    edited_run,
    ranked_board,
    running_server,
)


def test_rank_intervals_over_shared_docs(ranked: tuple[Database, Settings, Path]) -> None:
    db, _, _ = ranked
    records = list_submissions(db)
    ranks = table_ranks(db, records)["shapes"]
    color = next(c for c in ranks.columns if c.key == "shapes_color/exact_match,none")
    assert (color.docs, color.units, color.unit) == (3, 3, "doc")
    cells = {r.model: ranks.cells[r.id][color.key] for r in records}
    # 2/3 right against 0 and 0: first on every resample but the 1 in 27 that draws doc 2 three times
    # (then all three tie at rank 1), so the others' intervals reach rank 1: [1, 2], tied with it
    right = cells["tiny:qwen2_vl-right"].interval
    assert right is not None and (right.rank, right.text()) == (1, "1")
    assert [cells[m].text for m in ("tiny:llava", "tiny:qwen2_vl")] == ["1-2", "1-2"]
    assert "tiny:qwen2_vl-right #3" in cells["tiny:llava"].tied_with


def test_paired_comparison_of_two_submissions_is_harness_compare(
    ranked: tuple[Database, Settings, Path], runs: list[Path]
) -> None:
    db, settings, right = ranked
    records = {r.id: r for r in list_submissions(db)}
    report = compare_submissions(db, records[3], records[2])
    assert [r.label for r in report.runs] == ["tiny:qwen2_vl-right #3", "tiny:qwen2_vl #2"]
    local = compare_runs(CompareOptions([right, runs[1]]))
    assert [c.stats for c in report.comparisons] == [c.stats for c in local.comparisons]
    color = next(c for c in report.comparisons if c.task == "shapes_color" and c.metric == "exact_match,none")
    assert color.stats.difference == pytest.approx(2 / 3) and [d.doc_id for d in color.changed] == [0, 1]
    assert color.stats.test == "mcnemar_midp" and color.stats.p_value == pytest.approx(0.25)  # n10 = 2: 1/2 - 1/4
    with running_server(create_app(settings, db)) as url:
        answer = httpx.get(f"{url}/api/compare", params={"a": 3, "b": 2}).json()
        assert answer["comparisons"][0]["stats"]["interval"]["method"] == "paired_bootstrap"
        assert httpx.get(f"{url}/api/compare", params={"a": 3, "b": 99}).json() == {"error": "no submission 99"}
        page = httpx.get(f"{url}/compare.html", params={"a": 3, "b": 2})
        assert page.status_code == 200 and "tiny:qwen2_vl-right #3 vs tiny:qwen2_vl #2" in page.text
        assert httpx.get(f"{url}/compare.html", params={"a": "x", "b": 2}).status_code == 422


def test_a_flagged_task_is_not_ranked_and_the_export_keeps_the_ranks(
    ranked: tuple[Database, Settings, Path], runs: list[Path], tmp_path: Path
) -> None:
    from harness.leaderboard.bundle import read_run_files
    from harness.leaderboard.export import export_site
    from harness.leaderboard.service import submit_files

    _, settings, _ = ranked
    copy = tmp_path / "board.sqlite"
    with sqlite3.connect(settings.db_url.removeprefix("sqlite:///")) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # the board of the other tests stays as it is
    db, settings = Database(f"sqlite:///{copy}"), replace(settings, db_url=f"sqlite:///{copy}")

    def claim(results: dict) -> None:
        results["results"]["shapes_color"]["exact_match,none"] = 0.5

    flagged = edited_run(runs[0], tmp_path / "flagged", claim)
    assert submit_files(db, read_run_files(flagged), "bob", settings).status == "flagged"
    records = list_submissions(db)
    bob = next(r.id for r in records if r.submitter == "bob")
    ranks = table_ranks(db, records)["shapes"]
    assert len(records) == 4
    assert ranks.cells[bob]["shapes_color/exact_match,none"] == RankCell(None, reason="not ranked: mismatch")
    assert ranks.cells[bob]["shapes_kind/exact_match,none"].interval is not None  # its other task is re-scored
    site = (export_site(db, tmp_path / "site", settings) / "index.html").read_text()
    assert '<table class="ranks" data-protocol="shapes">' in site and 'class="pair"' not in site
