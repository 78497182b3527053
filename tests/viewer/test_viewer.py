"""``harness view`` over real tiny-model runs: the sample index (filters, order, paging, rebuilt when a file
changes, never written into the run), pages served by the real app, images found by digest in the run's
dataset, hostile strings shown as text, the security headers, and the command's one-line errors."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from harness.viewer.app import Viewer, create_app, sample_query
from harness.viewer.catalog import discover, folder_id
from harness.viewer.sample_index import NO_ERROR, UNREADABLE, SampleIndex, SampleQuery
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
)
from tests.test_extras import run_without

XSS = '<script>alert("xss")</script><img src=x onerror=alert(1)>'


def edit_samples(run_dir: Path, task: str, edit: Any) -> None:
    """Rewrite a run's samples file through ``edit(record_dict, line_number)``."""
    path = run_dir / f"samples_{task}.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for number, record in enumerate(records, 1):
        edit(record, number)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def hostile_run(runs: list[Path], tmp_path: Path) -> Path:
    """A copy of the llava run whose first sample carries a script in its answer, prompt and a doc field."""
    dest = tmp_path / "runs" / "hostile"
    shutil.copytree(runs[0], dest)

    def poison(record: dict, number: int) -> None:
        if number == 1:
            record["responses"][0] = XSS
            record["filtered"]["none"] = XSS
            record["prompt"][0]["content"][-1]["text"] = "Describe " + XSS
            record["doc"]["kind"] = XSS

    edit_samples(dest, "shapes_color", poison)
    return dest


def client(folders: list[Path], cache: Path, data_dirs: list[Path] | None = None) -> tuple[TestClient, Viewer]:
    viewer = Viewer(discover(folders), cache, data_dirs or [])
    return TestClient(create_app(viewer), base_url="http://127.0.0.1"), viewer


def test_index_filters_sorts_and_pages_and_lives_in_the_cache(runs: list[Path], tmp_path: Path) -> None:
    run = runs[0]
    before = sorted(p.name for p in run.iterdir())
    index = SampleIndex(run, ["shapes_color", "shapes_kind"], tmp_path / "cache")
    assert index.ensure() is True and index.ensure() is False
    assert index.path.parent == tmp_path / "cache"
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into the run folder

    summary = index.summary("shapes_color")
    assert summary.samples == 3 and summary.errors == {}
    assert "exact_match,none" in summary.metrics

    page = index.query(SampleQuery("shapes_color", per_page=2))
    assert page.total == 3 and [r.line for r in page.refs] == [1, 2]
    assert [r.line for r in index.query(SampleQuery("shapes_color", per_page=2, page=2)).refs] == [3]
    assert [r.line for r in index.query(SampleQuery("shapes_color", sort="-doc")).refs] == [3, 2, 1]
    record = index.read(page.refs[0])
    assert not isinstance(record, str) and record.doc_id == 0 and len(record.responses) == 3

    # the metric filter and sort, over values set by hand
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)

    def score(record: dict, number: int) -> None:
        record["metrics"]["exact_match,none"] = {1: 1.0, 2: 0.0, 3: 0.5}[number]
        if number == 2:
            record["responses"][1] = "A Needle here"

    edit_samples(copy, "shapes_color", score)
    copied = SampleIndex(copy, ["shapes_color"], tmp_path / "cache")
    lines = lambda **kw: [r.line for r in copied.query(SampleQuery("shapes_color", **kw)).refs]  # noqa: E731
    assert lines(metric="exact_match,none", op="ge", value=0.5) == [1, 3]
    assert lines(metric="exact_match,none", op="eq", value=0.0) == [2]
    assert lines(metric="exact_match,none", sort="-metric") == [1, 3, 2]
    assert lines(metric="exact_match,none", sort="metric") == [2, 3, 1]
    assert lines(metric="answer_accuracy,none", op="missing") == [1, 2, 3]
    assert lines(search="needle") == [2]  # case-folded, any answer
    assert lines(search="what color") == [1, 2, 3]  # the prompt
    assert lines(error=NO_ERROR) == [1, 2, 3] and lines(error="generation failed") == []


def test_index_is_rebuilt_when_a_samples_file_changes_and_keeps_unreadable_lines(
    runs: list[Path], tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs[0], copy)
    index = SampleIndex(copy, ["shapes_color"], tmp_path / "cache")
    index.ensure()

    def fail(record: dict, number: int) -> None:
        if number == 3:
            record["error"] = "generation failed: the backend raised TimeoutError"
            record["responses"], record["filtered"], record["metrics"] = [], {}, {}

    edit_samples(copy, "shapes_color", fail)
    with (copy / "samples_shapes_color.jsonl").open("a") as fh:
        fh.write('{"task": "shapes_color", "doc_id": "not a number"\n')
    assert index.ensure() is True
    assert index.summary("shapes_color").errors == {"generation failed": 1, UNREADABLE: 1}
    (bad,) = index.query(SampleQuery("shapes_color", error=UNREADABLE)).refs
    assert bad.line == 4 and "line 4" in str(index.read(bad))
    (failed,) = index.query(SampleQuery("shapes_color", error="generation failed")).refs
    assert failed.line == 3


def test_pages_show_figures_samples_and_side_by_side(runs: list[Path], tmp_path: Path) -> None:
    web, viewer = client([runs[0].parent.parent], tmp_path / "cache")
    assert len(viewer.catalog.runs) == 2
    home = web.get("/")
    assert home.status_code == 200
    assert "tiny:llava" in home.text and "tiny:qwen2_vl" in home.text and "exact_match" in home.text
    rid = folder_id(runs[0])
    run_page = web.get(f"/run/{rid}/")
    assert run_page.status_code == 200 and "harness git revision" in run_page.text
    for figure in viewer.catalog.runs[rid].figures("shapes_color"):  # the run's interval, or that it has none
        shown = figure.interval.text() if figure.interval else "not recorded by this run"
        assert str(escape(shown)) in run_page.text
    samples = web.get(f"/run/{rid}/shapes_color/", params={"metric": "exact_match,none", "op": "eq", "value": "0"})
    assert samples.status_code == 200
    assert samples.text.count('<article class="sample') == 3 and "Answers (3)" in samples.text
    other = folder_id(runs[1])
    side = web.get("/compare", params=[("run", rid), ("run", other), ("task", "shapes_kind")])
    assert side.status_code == 200 and side.text.count("<tr class=") == 3
    assert "differ in score or answer" in side.text
    assert web.get("/compare", params={"run": rid}).status_code == 400
    assert web.get("/run/nope/").status_code == 404
    assert web.get(f"/run/{rid}/no_such_task/").status_code == 404


def test_intervals_of_the_run_are_shown(runs: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs[0], copy)
    results = json.loads((copy / "results.json").read_text())
    results["intervals"] = {
        "shapes_color": {
            "exact_match,none": {"low": 0.125, "high": 0.75, "method": "clt", "unit": "doc", "n": 3},
            "answer_accuracy,none": {"reason": "no parsed answer", "n": 0},
        }
    }
    (copy / "results.json").write_text(json.dumps(results))
    web, _ = client([copy], tmp_path / "cache")
    home = web.get("/").text
    assert "[0.125, 0.750]" in home and "95% CI, clt over 3 docs" in home
    assert "no interval (no parsed answer)" in web.get(f"/run/{folder_id(copy)}/").text


def test_hostile_strings_are_text_and_headers_are_strict(hostile_run: Path, tmp_path: Path) -> None:
    web, _ = client([hostile_run], tmp_path / "cache")
    rid = folder_id(hostile_run)
    for url in (f"/run/{rid}/shapes_color/", f"/run/{rid}/shapes_color/?q=script"):
        page = web.get(url)
        assert page.status_code == 200
        assert "<script>" not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;" in page.text
        assert "Describe &lt;script&gt;" in page.text  # the prompt
        assert page.text.count("&lt;img src=x onerror=alert(1)&gt;") >= 4  # answer, filtered, prompt, doc field
    csp = web.get("/").headers["content-security-policy"]
    assert "script-src 'none'" in csp and "default-src 'none'" in csp
    assert web.get("/").headers["x-content-type-options"] == "nosniff"
    # a page asked for under another host name (DNS rebinding) is refused
    assert web.get("/", headers={"host": "attacker.example"}).status_code == 400
    everywhere = TestClient(create_app(Viewer(discover([hostile_run]), tmp_path / "cache", []), host="0.0.0.0"))
    assert everywhere.get("/", headers={"host": "192.0.2.7:8765"}).status_code == 200


def test_images_come_from_the_runs_dataset_by_digest(runs: list[Path], data_dir: Path, tmp_path: Path) -> None:
    web, _ = client([runs[0]], tmp_path / "cache")
    rid = folder_id(runs[0])
    page = web.get(f"/run/{rid}/shapes_color/").text
    thumbs = re.findall(r'src="\.\./\.\./\.\./(image/[^"]+)"', page)
    assert len(thumbs) == 3
    thumb = web.get("/" + thumbs[0].replace("&amp;", "&"))
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/png"
    assert thumb.content.startswith(b"\x89PNG")
    full = web.get("/" + thumbs[0].split("?")[0])
    assert full.status_code == 200 and full.content.startswith(b"\x89PNG")
    digest = thumbs[0].split("/")[-1].split(".")[0]
    # the digest found through the dataset's digest table when the doc id does not hold it
    assert web.get(f"/image/{rid}/shapes_color/2/{digest}.png").status_code == 200
    assert web.get(f"/image/{rid}/shapes_color/0/{'0' * 64}.png").status_code == 404
    assert web.get(f"/image/{rid}/shapes_color/0/..%2F..%2Fetc%2Fpasswd.png").status_code == 404


def test_a_task_name_that_is_a_path_names_no_file(runs: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs[0], copy)
    results = json.loads((copy / "results.json").read_text())
    results["results"]["../secret"] = {"exact_match,none": 1.0}
    (copy / "results.json").write_text(json.dumps(results))
    (tmp_path / "samples_..").mkdir()
    (tmp_path / "secret.jsonl").write_text("{}\n")
    _, viewer = client([copy], tmp_path / "cache")
    assert viewer.catalog.runs[folder_id(copy)].tasks == ["shapes_color", "shapes_kind"]


def test_sample_query_from_url_parameters_falls_back_to_defaults() -> None:
    q = sample_query("t", {"op": "drop table", "sort": "x", "per_page": "100000", "page": "-3", "value": "nan"})
    assert (q.op, q.sort, q.per_page, q.page, q.value) == ("any", "doc", 50, 1, None)
    q = sample_query("t", {"q": "x" * 1000, "op": "lt", "value": "0.5", "per_page": "200", "page": "4"})
    assert (len(q.search), q.op, q.value, q.per_page, q.page) == (200, "lt", 0.5, 200, 4)


def test_view_command_errors_are_one_line(tmp_path: Path) -> None:
    from harness.cli import main

    assert main(["view", str(tmp_path / "missing")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["view", str(tmp_path / "empty")]) == 2
    done = run_without("fastapi", "view", str(tmp_path))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "[view]" in lines[0], done.stderr


def test_protocol_and_audit_pages_and_their_files(runs: list[Path], tmp_path: Path) -> None:
    audit = tmp_path / "audit-vista-20260101-000000"
    audit.mkdir()
    (audit / "audit.json").write_text('{"not": "a vista report"}')
    (audit / "plot.png").write_bytes(b"<html><script>alert(1)</script>")  # not a PNG
    (audit / "notes.csv").write_text("a,b\n<script>,1\n")
    (tmp_path / "secret.txt").write_text("secret")
    (audit / "link.txt").symlink_to(tmp_path / "secret.txt")
    web, viewer = client([runs[0], audit], tmp_path / "cache")
    (found,) = viewer.catalog.audits.values()
    assert found.protocol is not None and found.protocol.name == "vista" and "audit.json" in str(found.problem)
    page = web.get(f"/audit/{found.id}")
    assert page.status_code == 200 and "notes.csv" in page.text and "link.txt" not in page.text
    assert web.get(f"/audit/{found.id}/files/plot.png").status_code == 415
    text = web.get(f"/audit/{found.id}/files/notes.csv")
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert web.get(f"/audit/{found.id}/files/link.txt").status_code == 404
    assert web.get(f"/audit/{found.id}/files/..%2Fsecret.txt").status_code == 404
    # a protocol page over runs that hold none of its tasks says so; its images are only those it named
    vista = web.get("/protocol/vista")
    assert vista.status_code == 200 and "VISTA" in vista.text
    assert web.get(f"/protocol/vista/image/{'a' * 20}.png").status_code == 404
    assert web.get("/protocol/no_such_protocol").status_code == 404
