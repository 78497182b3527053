"""The leaderboard page in headless Chromium (Debian's chromium driven by Playwright): filter, search,
sort, open a model page, and save screenshots (``LEADERBOARD_SCREENSHOTS=DIR`` keeps them)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.leaderboard.db import Database
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Settings
from harness.leaderboard.tokens import create_token
from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks
from harness.results.interval import Interval
from tests.leaderboard_fixtures import (  # noqa: F401 (board_* and ranked_board: fixtures)
    board_data_dir,
    board_runs,
    edited_run,
    ranked_board,
    running_server,
)

CHROMIUM = Path(os.environ.get("HARNESS_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = '<script>alert("x")</script>'


def test_filter_sort_and_open_a_model_page_in_chromium(runs: list[Path], data_dir: Path, tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import expect, sync_playwright

    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    db = Database(db_url)
    token = create_token(db, "alice")

    def rename(results: dict) -> None:
        results["config"]["model"] = HOSTILE

    hostile = edited_run(runs[0], tmp_path / "hostile", rename)
    shots = tmp_path / "screenshots"
    with running_server(create_app(Settings(db_url=db_url, data_dir=data_dir), db)) as url:
        for run_dir in (*runs, hostile):
            assert main(["submit", str(run_dir), "--to", url, "--token", token]) == 0
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 800})
            dialogs: list[str] = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(f"{url}/")
            rows = page.locator("table.board[data-protocol=shapes] tbody tr")
            visible = page.locator("table.board[data-protocol=shapes] tbody tr:visible a.model")
            expect(rows).to_have_count(3)
            assert rows.locator("a.model").all_text_contents() == ["tiny:llava", "tiny:qwen2_vl", HOSTILE]

            page.fill("#search", "qwen")
            expect(visible).to_have_text(["tiny:qwen2_vl"])
            expect(page.locator(".shown[data-protocol=shapes]")).to_have_text("1")
            page.fill("#search", "")
            page.select_option("#filter-family", "llava")
            expect(visible).to_have_text(["tiny:llava", HOSTILE])
            page.select_option("#filter-access", "api")
            expect(visible).to_have_count(0)
            page.select_option("#filter-access", "")
            page.select_option("#filter-family", "")
            expect(visible).to_have_count(3)

            model_header = page.locator("table.board[data-protocol=shapes] th", has_text="Model")
            model_header.click()
            expect(visible).to_have_text([HOSTILE, "tiny:llava", "tiny:qwen2_vl"])
            model_header.click()
            expect(visible).to_have_text(["tiny:qwen2_vl", "tiny:llava", HOSTILE])
            expect(model_header).to_have_attribute("aria-sort", "descending")
            page.locator("table.board[data-protocol=shapes] th", has_text="Size").click()
            # 189K parameters (both llava runs, in their previous order) before qwen2_vl's 227K
            expect(visible).to_have_text(["tiny:llava", HOSTILE, "tiny:qwen2_vl"])
            shots.mkdir()
            page.screenshot(path=str(shots / "leaderboard.png"), full_page=True)

            page.get_by_role("link", name="tiny:qwen2_vl").first.click()
            expect(page.locator("h1")).to_have_text("tiny:qwen2_vl")
            expect(page.locator("dl.provenance")).to_contain_text("harness git revision")
            plot = page.locator("img.plot").first
            expect(plot).to_be_visible()
            assert plot.evaluate("img => img.complete && img.naturalWidth > 100")
            page.screenshot(path=str(shots / "model.png"), full_page=True)
            browser.close()
    assert dialogs == []  # the hostile name never ran
    for name in ("leaderboard.png", "model.png"):
        assert (shots / name).read_bytes().startswith(b"\x89PNG")
    keep = os.environ.get("LEADERBOARD_SCREENSHOTS")
    if keep:
        shutil.copytree(shots, keep, dirs_exist_ok=True)


def _accuracy(evidence: Evidence) -> dict[str, Estimate]:
    """The toy protocol's headline: the share of right colors, with an interval wider than [0, 1] (the page
    clips it), and a level."""
    values = [r.metrics["exact_match,none"] for r in evidence.samples["shapes_color"] if r.error is None]
    mean = sum(values) / len(values)
    return {
        "accuracy": Estimate(mean, Interval.of(mean - 2.0, mean + 2.0, "clt", len(values)), len(values)),
        "level": Estimate("L1"),
    }


def test_protocol_tables_pagination_and_width_in_chromium(
    runs: list[Path], data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A protocol's headline table (a toy protocol registered here, its figures computed at submission)
    with its "what this measures" line, pages of ``?rows=2``, no horizontal scrolling at 1400 px, and a
    model given as a local folder shown by its base name only."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import expect, sync_playwright

    from harness.leaderboard.bundle import read_run_files
    from harness.leaderboard.service import submit_files
    from harness.protocols import base

    base.protocols()
    hooks = LeaderboardHooks(
        figures=(Figure("accuracy", "color accuracy"), Figure("level", "level", None, None)),
        headline=_accuracy,
        card="https://example.org/toy-card",
    )
    monkeypatch.setitem(
        base._REGISTRY,
        "toy",
        base.Protocol(
            name="toy",
            title="Toy protocol",
            summary="How often a model names the shape's color.",
            tasks=("shapes_color",),
            extensions={"leaderboard": hooks},
        ),
    )

    def local(results: dict) -> None:
        results["config"]["model"] = "hf:/home/alice/models/my-local-model"

    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    db = Database(db_url)
    settings = Settings(db_url=db_url, data_dir=data_dir)
    for run_dir in (*runs, edited_run(runs[0], tmp_path / "local", local)):
        submit_files(db, read_run_files(run_dir), "alice", settings)  # here: the toy protocol is registered here
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with running_server(create_app(settings, db)) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{url}/")
        toy = page.locator("#protocol-toy")
        expect(toy.locator("h2")).to_have_text("Toy protocol")
        expect(toy.locator("p.measures")).to_contain_text("How often a model names the shape's color.")
        expect(toy.locator("p.measures a")).to_have_attribute("href", "https://example.org/toy-card")
        expect(toy.locator("thead th")).to_contain_text(["Model", "color accuracy", "level"])
        first = toy.locator("tbody tr").first.locator("td.num").first
        expect(first.locator(".ci")).to_have_text("[0.000, 1.000]")  # the interval is clipped to the rate's range
        expect(first.locator(".ci")).to_have_attribute("title", re.compile(r"^95% CI, clt over \d+ docs$"))
        expect(first.locator(".cover")).to_contain_text("n 3 · 0 errors")
        expect(toy.locator("tbody tr").first.locator("td.num").nth(1)).to_contain_text("L1")
        expect(page.locator("a.model", has_text="hf:my-local-model")).to_have_count(2)
        assert "/home/alice" not in page.content()
        widths = page.evaluate("""() => [document.documentElement.scrollWidth, window.innerWidth,
            ...Array.from(document.querySelectorAll('.scroll')).map(d => d.scrollWidth - d.clientWidth)]""")
        assert widths[0] <= widths[1] and all(extra <= 0 for extra in widths[2:]), widths
        page.screenshot(path=str(shots / "leaderboard-1400.png"), full_page=True)

        page.goto(f"{url}/?rows=2")
        visible = page.locator("table.board[data-protocol=shapes] tbody tr:visible")
        pager = page.locator(".pager[data-protocol=shapes]")
        expect(visible).to_have_count(2)
        expect(pager.locator(".page")).to_have_text("page 1 of 2")
        expect(pager.locator("button.prev")).to_be_disabled()
        pager.locator("button.next").click()
        expect(visible).to_have_count(1)
        expect(pager.locator(".page")).to_have_text("page 2 of 2")
        expect(pager.locator("button.next")).to_be_disabled()
        page.screenshot(path=str(shots / "paginated.png"), full_page=True)
        pager.locator("button.prev").click()
        expect(visible).to_have_count(2)
        page.fill("#search", "qwen")  # a filter goes back to the first page of what it keeps
        expect(visible).to_have_count(1)
        expect(pager.locator(".page")).to_have_text("page 1 of 1")
        page.goto(f"{url}/model/3.html")
        expect(page.locator("h1")).to_have_text("hf:my-local-model")
        assert "/home/alice" not in page.content()
        assert b"/home/alice" not in page.request.get(f"{url}/files/3/results.json").body()
        page.screenshot(path=str(shots / "model-local.png"), full_page=True)
        browser.close()
    keep = os.environ.get("LEADERBOARD_SCREENSHOTS")
    if keep:
        shutil.copytree(shots, keep, dirs_exist_ok=True)


def test_rank_intervals_and_a_paired_comparison_in_chromium(
    ranked: tuple[Database, Settings, Path], tmp_path: Path
) -> None:
    """The rank intervals under the shapes table (ties marked), then two submissions picked in its form and
    their paired comparison: difference, interval, p and MDE."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import expect, sync_playwright

    db, settings, _ = ranked
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with running_server(create_app(settings, db)) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(f"{url}/")
        ranks = page.locator("table.ranks[data-protocol=shapes]")
        expect(ranks.locator("thead th")).to_contain_text(["Model", "shapes_color exact_match", "shapes_kind"])
        color = [ranks.locator(f"tr[data-id='{i}'] td.rank").first for i in (1, 2, 3)]
        expect(color[0]).to_have_text("1-2 tied")
        expect(color[1]).to_have_text("1-2 tied")
        expect(color[2]).to_have_text("1 tied")
        expect(color[0]).to_have_attribute("title", "tied with tiny:qwen2_vl #2, tiny:qwen2_vl-right #3")
        ranks.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "ranks.png"), full_page=True)

        form = page.locator("form.pair[data-protocol=shapes]")
        form.locator("select[name=a]").select_option("3")
        form.locator("select[name=b]").select_option("2")
        form.get_by_role("button", name="Compare").click()
        expect(page.locator("h1")).to_have_text("tiny:qwen2_vl-right #3 vs tiny:qwen2_vl #2")
        row = page.locator("table.paired tbody tr", has_text="shapes_color").filter(has_text="exact_match,none")
        expect(row.locator("td.difference")).to_have_text("0.667")
        expect(row.locator("td.interval")).to_have_text(re.compile(r"^\[0\.\d{3}, 1\.000\]$"))
        expect(row.locator("td.p")).to_have_text("0.250")
        expect(row.locator("td.mde")).to_have_text(re.compile(r"^\d\.\d{3}$"))
        page.screenshot(path=str(shots / "compare.png"), full_page=True)
        browser.close()
    keep = os.environ.get("LEADERBOARD_SCREENSHOTS")
    if keep:
        shutil.copytree(shots, keep, dirs_exist_ok=True)
