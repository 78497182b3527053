"""``harness report`` on tiny-model runs of all five protocols: the page and its JSON hold every part,
hostile strings (a model answer, a prompt, a dataset field, the model's name) are text in the parsed HTML
and run nothing in Debian's Chromium, the page fetches nothing, and a screenshot is saved
(``REPORT_SCREENSHOTS=DIR`` keeps it; docs/images/ holds the one the README shows)."""

from __future__ import annotations

import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.report import ModelAudit, ReportOptions, build_report
from tests.conftest import write
from tests.five_protocols import ANSWER, FIELD, MODEL, PROMPT, QUIET, RECORDED

CHROMIUM = Path(os.environ.get("HARNESS_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def report(five: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ModelAudit]:
    out = tmp_path_factory.mktemp("report") / "audit.html"
    assert main(["report", "--model", MODEL, str(five), "--out", str(out), *QUIET]) == 0
    return out, ModelAudit.model_validate_json(out.with_suffix(".json").read_text(encoding="utf-8"))


class _Page(HTMLParser):
    """Every tag with its attributes, and the text, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_report_holds_every_part(report: tuple[Path, ModelAudit]) -> None:
    out, doc = report
    assert doc.model == MODEL and doc.peers == ["tiny:llava"]
    assert {p.protocol for p in doc.protocols} == {"vista", "stealth", "mist", "diavlo", "fusion"}
    parts = {p.protocol: p for p in doc.protocols}
    for part in parts.values():
        assert part.evidence is not None and part.evidence.sections, part.protocol
        assert part.reproduce and part.reproduce[0].command.startswith("harness eval --model tiny:qwen2_vl")
    assert {r.protocol for r in doc.not_run} == {"VISTA controlled study"}
    # headline figures say when no interval was recorded; the task metrics are all there
    stealth = [f for f in parts["stealth"].headline if f.kind == "headline"]
    assert {f.key for f in stealth} >= {"total_range", "max_positive_bias"}
    assert any(f.kind == "task metric" and f.key == "mist/change_rate_misleading,none" for f in parts["mist"].headline)
    recorded = {f.key: f.interval for f in parts["stealth"].headline if f.kind == "task metric"}
    assert recorded["stealth_short/total_range,none"] == RECORDED  # the interval results.json records
    missing = recorded["stealth_short/max_positive_bias,none"]  # no interval, and the reason the run recorded
    assert missing is not None and not missing.defined and missing.reason
    assert parts["fusion"].audits and parts["diavlo"].audits and parts["vista"].audits
    vista = parts["vista"].evidence
    assert vista is not None and vista.sections[0].items[0].panels[0].image is not None
    assert any("audit fusion" in c.command for c in parts["fusion"].reproduce)
    html = out.read_text(encoding="utf-8")
    for heading in ("1. What was run", "2. Headline figures", "3. Flags", "4. Evidence", "5. Reproducibility"):
        assert heading in html
    assert "no interval recorded" in html and "smoke-test model" in html
    # images are inline thumbnails: no file, no URL
    page = _Page()
    page.feed(html)
    sources = [a["src"] or "" for tag, a in page.tags if tag == "img"]
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert len(html) < 3_000_000


def test_hostile_strings_are_text(report: tuple[Path, ModelAudit]) -> None:
    out, _ = report
    page = _Page()
    page.feed(out.read_text(encoding="utf-8"))
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags and "iframe" not in tags and "svg" not in tags
    assert all(not k.startswith("on") for _, attrs in page.tags for k in attrs)
    assert not any((a.get("href") or "").startswith("javascript:") for _, a in page.tags)
    assert tags.count("style") == 1  # the page's own
    text = "".join(page.text)
    for payload in (ANSWER, PROMPT, FIELD):
        assert payload in text  # shown as written, as text


def test_the_page_runs_nothing_and_fetches_nothing_in_chromium(report: tuple[Path, ModelAudit]) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or set HARNESS_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    out, _ = report
    requests: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(out.resolve().as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss === undefined") and not dialogs
        assert page.locator("script").count() == 0
        assert page.locator("h1").inner_text().startswith("Audit of tiny:qwen2_vl")
        assert page.locator("img").count() > 0
        assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        shots = Path(os.environ.get("REPORT_SCREENSHOTS") or out.parent)
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "report-top.png"))
        page.locator("#ev-stealth").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "report-stealth.png"))
        browser.close()
    fetched = [u for u in requests if not u.startswith("data:") and u != out.resolve().as_uri()]
    assert fetched == []


def test_report_errors(tmp_path: Path, five: Path) -> None:
    with pytest.raises(HarnessError, match="no run folder"):
        build_report(ReportOptions(paths=[tmp_path]))
    with pytest.raises(HarnessError, match="not a folder"):
        build_report(ReportOptions(paths=[tmp_path / "missing"]))
    with pytest.raises(HarnessError, match=r"the runs hold 2 models \(tiny:llava, tiny:qwen2_vl\): choose one"):
        build_report(ReportOptions(paths=[five / "vista"]))
    with pytest.raises(HarnessError, match="no run of 'tiny:gemma3'"):
        build_report(ReportOptions(paths=[five / "vista"], model="tiny:gemma3"))
    assert main(["report", str(five / "mist"), "--max-items", "0", "--out", str(tmp_path / "x.html"), *QUIET]) == 2
    broken = write(tmp_path / "broken" / "results.json", "{")
    assert main(["report", str(broken.parent), "--out", str(tmp_path / "x.html"), *QUIET]) == 2
    shutil.rmtree(tmp_path / "broken")


def test_the_leaderboard_links_each_entry_to_its_report(five: Path, tmp_path: Path) -> None:
    import httpx

    from harness.data import default_data_dir
    from harness.leaderboard.db import Database
    from harness.leaderboard.export import export_site
    from harness.leaderboard.server import create_app
    from harness.leaderboard.service import Settings
    from harness.leaderboard.tokens import create_token
    from harness.report.html import PAGE_POLICY
    from tests.leaderboard_fixtures import running_server

    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    db = Database(db_url)
    token = create_token(db, "alice")
    run = next((five / "fusion" / "tiny__qwen2_vl").iterdir())
    settings = Settings(db_url=db_url, data_dir=default_data_dir())
    with running_server(create_app(settings, db)) as url:
        assert main(["submit", str(run), "--to", url, "--token", token, *QUIET]) == 0
        assert 'href="../report/1.html"' in httpx.get(f"{url}/model/1.html").text
        page = httpx.get(f"{url}/report/1.html", timeout=120)
        assert page.status_code == 200 and page.headers["content-security-policy"] == PAGE_POLICY
        assert "Audit of tiny:qwen2_vl" in page.text and "data:image/png;base64," in page.text
        assert str(run) not in page.text  # the submitter's paths are not the server's
        assert httpx.get(f"{url}/report/99.html").status_code == 404
    site = export_site(db, tmp_path / "site", settings)
    assert "Audit of tiny:qwen2_vl" in (site / "report" / "1.html").read_text(encoding="utf-8")
