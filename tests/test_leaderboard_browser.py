"""The leaderboard page in headless Chromium (Debian's chromium driven by Playwright): filter, search,
sort, open a model page, and save screenshots (``LEADERBOARD_SCREENSHOTS=DIR`` keeps them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.leaderboard.db import Database
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Settings
from harness.leaderboard.tokens import create_token
from tests.leaderboard_fixtures import edited_run, running_server, small_data_dir, tiny_runs

CHROMIUM = Path(os.environ.get("HARNESS_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HOSTILE = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_data_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return tiny_runs(data_dir, tmp_path_factory.mktemp("lb-runs"))


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
