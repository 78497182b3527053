"""``harness view`` in headless Chromium (Debian's chromium driven by Playwright) over real tiny-model runs:
the runs page, a task's samples under a filter, an image opened full size, the side-by-side view, and a
hostile answer, prompt and dataset field shown as text. ``VIEWER_SCREENSHOTS=DIR`` keeps the screenshots."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.viewer.app import Viewer, create_app
from harness.viewer.catalog import discover
from tests.leaderboard.test_leaderboard_browser import ARGS, CHROMIUM
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    running_server,
)
from tests.viewer.test_viewer import XSS, edit_samples


def keep(shots: Path) -> None:
    """Copy the screenshots where ``VIEWER_SCREENSHOTS`` says (the docs' images are made so)."""
    for path in shots.iterdir():
        assert path.read_bytes().startswith(b"\x89PNG")
    target = os.environ.get("VIEWER_SCREENSHOTS")
    if target:
        shutil.copytree(shots, target, dirs_exist_ok=True)


@contextmanager
def chromium_page(viewer: Viewer) -> Iterator[tuple[str, Any, list[str]]]:
    """The viewer served on loopback and a Chromium page (1300 px wide), with the message of every dialog
    a script opened (none should)."""
    from playwright.sync_api import sync_playwright

    with running_server(create_app(viewer)) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 800})
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        yield url, page, dialogs
        browser.close()


def test_runs_samples_filter_and_side_by_side_in_chromium(runs: list[Path], tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import expect

    folder = tmp_path / "runs"
    for run in runs:
        shutil.copytree(run, folder / run.parent.name / run.name)
    hostile = folder / "tiny__llava" / runs[0].name

    def poison(record: dict, number: int) -> None:
        if number == 2:
            record["responses"][1] = XSS
            record["prompt"][0]["content"][-1]["text"] += " " + XSS
            record["doc"]["kind"] = XSS

    edit_samples(hostile, "shapes_color", poison)
    viewer = Viewer(discover([folder]), tmp_path / "cache", [])
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with chromium_page(viewer) as (url, page, dialogs):
        page.goto(f"{url}/")
        expect(page.locator("table.runs a.model")).to_have_text(["tiny:qwen2_vl", "tiny:llava"])
        expect(page.locator("table.runs")).to_contain_text("exact_match")
        page.screenshot(path=str(shots / "viewer-runs.png"), full_page=True)

        page.locator("tr", has_text="tiny:llava").get_by_role("link", name="shapes_color").click()
        expect(page.locator("h1")).to_contain_text("shapes_color")
        expect(page.locator("article.sample")).to_have_count(3)
        # the hostile answer, prompt and dataset field are text on the page
        expect(page.locator("article.sample").nth(1).locator("pre.response").nth(1)).to_have_text(XSS)
        expect(page.locator("article.sample").nth(1).locator("pre.prompt")).to_contain_text(XSS)
        page.locator("article.sample").nth(1).locator("details summary").click()
        expect(page.locator("article.sample").nth(1).locator("dl.fields")).to_contain_text(XSS)
        thumb = page.locator("article.sample a.image img").first
        expect(thumb).to_be_visible()
        assert thumb.evaluate("img => img.complete && img.naturalWidth > 0")

        page.fill("input[name=q]", "script")
        page.select_option("select[name=metric]", "exact_match,none")
        page.select_option("select[name=op]", "eq")
        page.fill("input[name=value]", "0")
        page.get_by_role("button", name="Apply").click()
        expect(page.locator(".pager .matches").first).to_have_text("1 match")
        expect(page.locator("article.sample")).to_have_count(1)
        page.screenshot(path=str(shots / "viewer-samples.png"), full_page=True)

        full = page.locator("article.sample a.image").first.get_attribute("href")
        assert full is not None and full.endswith(".png")
        page.goto(page.url.split("?")[0] + full)
        assert page.locator("img").evaluate("img => img.naturalWidth") == 56  # the dataset's image, full size

        page.goto(f"{url}/")
        page.select_option("form.compare select[name=task]", "shapes_color")
        page.get_by_role("button", name="Compare").click()
        expect(page.locator("h1")).to_contain_text("side by side")
        rows = page.locator("table.compare > tbody > tr")
        expect(rows).to_have_count(3)
        expect(page.locator("table.compare thead th")).to_have_count(3)
        expect(rows.first.locator("> td.answer")).to_have_count(2)
        page.screenshot(path=str(shots / "viewer-compare.png"), full_page=True)
    assert dialogs == []  # no hostile string ran
    keep(shots)
