"""Each protocol's evidence page of ``harness view`` in headless Chromium, over the session's tiny-model runs
of the five protocols and their audits (the ``five`` fixture, ``tests/five_protocols.py``: hostile strings in
Stealth's and MIST's samples). ``VIEWER_SCREENSHOTS=DIR`` keeps the screenshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.viewer.app import Viewer
from harness.viewer.catalog import discover
from tests.leaderboard.test_leaderboard_browser import CHROMIUM
from tests.viewer.test_viewer_browser import chromium_page, keep

PROTOCOLS = ("vista", "stealth", "mist", "diavlo", "fusion")


def test_each_protocols_evidence_page_in_chromium(five: Path, tmp_path: Path) -> None:
    """Tiny-model runs of the five protocols and their audits (hostile strings in Stealth's and MIST's
    samples): each protocol's page shows its extractor's sections with their images, runs nothing, and
    an audit folder's page shows its plots."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import expect

    viewer = Viewer(discover([five]), tmp_path / "cache", [])
    assert {a.protocol.name for a in viewer.catalog.audits.values() if a.protocol} >= {"vista", "fusion", "diavlo"}
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with chromium_page(viewer) as (url, page, dialogs):
        page.goto(f"{url}/")
        expect(page.locator("ul.protocols a")).to_have_count(len(PROTOCOLS))
        for name in PROTOCOLS:
            page.goto(f"{url}/")
            page.locator("ul.protocols a", has_text=viewer.protocol(name).title).click()
            expect(page.locator("h1")).to_contain_text(viewer.protocol(name).title)
            expect(page.locator(".problem")).to_have_count(0)
            assert page.locator("section.ev-section").count() > 0, name
            images = page.locator("section.ev-protocol img")
            images.evaluate_all("imgs => imgs.forEach(img => { img.loading = 'eager'; })")
            page.wait_for_load_state("networkidle")
            assert images.count() > 0, name
            broken = images.evaluate_all("imgs => imgs.filter(img => !(img.complete && img.naturalWidth)).length")
            assert broken == 0, name
            assert page.evaluate("window.__xss") is None
            page.screenshot(path=str(shots / f"viewer-protocol-{name}.png"), full_page=True)
        page.goto(f"{url}/")
        page.locator("table.audits a", has_text="FusionAudit").first.click()
        expect(page.locator("table.files")).to_contain_text("audit.json")
    assert dialogs == []
    keep(shots)
