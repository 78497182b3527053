"""The leaderboard service on loopback: command-line submissions, pages, downloads, abuse, load, the
Hub layout and the static export (a protocol's after-submission job, VISTA's peer pool:
tests/protocols/vista/test_leaderboard_pool.py)."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from harness.cli import main
from harness.leaderboard.bundle import Limits, read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Quota, Settings
from harness.leaderboard.tokens import create_token
from harness.results.schema import read_run
from tests.conftest import ROOT
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    edited_run,
    running_server,
)


def _token(db_url: str, name: str, capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    assert main(["leaderboard", "token", "create", name, "--db", db_url]) == 0
    return capsys.readouterr().out.strip()


def _site_pages_with_working_links(site: Path) -> int:
    """How many pages a static export has; every relative link and image in them must exist."""
    pages = [site / "index.html", *sorted((site / "model").glob("*.html"))]
    for page in pages:
        for link in re.findall(r'(?:href|src)="([^"#]+)"', page.read_text()):
            assert (page.parent / link).resolve().is_file(), f"{page.name}: broken link {link}"
    return len(pages)


def _upload(url: str, files: dict[str, bytes], token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(
        f"{url}/api/submissions", files=[("files", (n, d)) for n, d in files.items()], headers=headers, timeout=120
    )


def test_runs_submitted_from_the_command_line_appear_with_numbers_provenance_and_plots(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = _token(db_url, "alice", capsys)
    with running_server(create_app(Settings(db_url=db_url, data_dir=data_dir))) as url:
        for run_dir in runs:
            assert main(["submit", str(run_dir), "--to", url, "--token", token]) == 0
            assert "verified (stored)" in capsys.readouterr().out
        assert main(["submit", str(runs[0]), "--to", url, "--token", token]) == 0
        assert "already on the leaderboard" in capsys.readouterr().out
        index = httpx.get(f"{url}/").text
        api = httpx.get(f"{url}/api/submissions").json()
        assert [s["model"] for s in api] == ["tiny:llava", "tiny:qwen2_vl"]
        for record, run_dir in zip(api, runs, strict=True):
            run = read_run(run_dir)
            assert f'href="model/{record["id"]}.html">{run.config.model}</a>' in index
            value = run.results["shapes_color"]["exact_match,none"]
            score = next(
                s for s in record["scores"] if s["task"] == "shapes_color" and s["metric"] == "exact_match,none"
            )
            assert score["value"] == pytest.approx(value) and score["claimed"] == pytest.approx(value)
            assert f"{value:.3f}" in index
            page = httpx.get(f"{url}/model/{record['id']}.html").text
            for item in (
                run.provenance.git_revision,
                run.provenance.model.fingerprint,
                run.provenance.datasets["shapes_color"].sha256,
                "alice",
                record["content_hash"],
            ):
                assert item in page
            plots = re.findall(r'<img class="plot" src="\.\./(files/\d+/[^"]+\.png)"', page)
            assert plots and all(httpx.get(f"{url}/{p}").content.startswith(b"\x89PNG") for p in plots)
            samples = httpx.get(f"{url}/files/{record['id']}/samples_shapes_color.jsonl")
            assert samples.content == (run_dir / "samples_shapes_color.jsonl").read_bytes()
        table = httpx.get(f"{url}/tables/shapes.json").json()
        assert [r["model"] for r in table["rows"]] == ["tiny:llava", "tiny:qwen2_vl"]
        csv_text = httpx.get(f"{url}/tables/shapes.csv").text
        assert csv_text.splitlines()[0].startswith("id,model,family,parameters,size,access")
        assert httpx.get(f"{url}/tables/nothing.csv").status_code == 404
        assert "default-src 'self'" in httpx.get(f"{url}/").headers["content-security-policy"]


def test_abuse_is_refused_and_submitted_strings_are_escaped(runs: list[Path], tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    good = read_run_files(runs[0])
    settings = Settings(limits=Limits(max_total_bytes=200_000))
    with running_server(create_app(settings, db)) as url:
        for bad in (None, "hlb_wrong"):
            answer = _upload(url, good, bad)
            assert answer.status_code == 401 and "valid submitter token" in answer.json()["error"]
        big = {**good, "samples_shapes_kind.jsonl": good["samples_shapes_kind.jsonl"] + b" " * 1_500_000}
        answer = _upload(url, big, token)
        assert answer.status_code == 413 and "over this server's limit" in answer.json()["error"]
        part = b'--b\r\nContent-Disposition: form-data; name="files"; filename="results.json"\r\n\r\n'
        chunked = httpx.post(
            f"{url}/api/submissions",  # no Content-Length: the server counts what arrives
            content=iter([part] + [b"x" * 65536] * 40 + [b"\r\n--b--\r\n"]),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "multipart/form-data; boundary=b"},
        )
        assert chunked.status_code == 413
        garbage = httpx.post(
            f"{url}/api/submissions",
            content=b"--xx\r\nnot multipart at all",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "multipart/form-data; boundary=xx"},
        )
        assert garbage.status_code == 400
        answer = _upload(url, {**good, "results.json": b'{"schema_version": 1}'}, token)
        assert answer.status_code == 422 and "results.json" in answer.json()["error"]
        answer = httpx.post(
            f"{url}/api/submissions", data={"files": "text"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 400

        def rename(results: dict) -> None:
            results["config"]["model"] = '<script>alert("x")</script><img src=x onerror=alert(1)>'

        hostile = edited_run(runs[0], tmp_path / "hostile", rename)
        answer = _upload(url, read_run_files(hostile), token)
        assert answer.status_code == 201
        for page in (httpx.get(f"{url}/").text, httpx.get(f"{url}/model/{answer.json()['id']}.html").text):
            assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
            assert "<script>alert" not in page and "<img src=x" not in page
        assert httpx.get(f"{url}/tables/shapes.csv").text.count("<script>") == 1  # data, served as text/csv

        def inflate(results: dict) -> None:
            results["results"]["shapes_kind"]["exact_match,none"] = 0.75

        answer = _upload(url, read_run_files(edited_run(runs[0], tmp_path / "forged", inflate)), token)
        assert answer.status_code == 201 and answer.json()["status"] == "flagged"
        page = httpx.get(f"{url}/model/{answer.json()['id']}.html").text
        assert "claimed 0.75, re-scored" in page and 'class="badge mismatch"' in page


def test_fifty_concurrent_submissions_none_lost_or_duplicated(runs: list[Path], tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "load")
    base = read_run_files(runs[0])
    variants = []
    for i in range(40):  # forty distinct runs (their provenance differs), ten of them sent twice
        results = json.loads(base["results.json"])
        results["provenance"]["started_at"] = f"2026-01-01T00:00:{i:02d}+00:00"
        variants.append({**base, "results.json": json.dumps(results).encode()})
    uploads = variants + variants[:10]
    with (
        running_server(create_app(Settings(quota=Quota(uploads_per_minute=50)), db)) as url,
        ThreadPoolExecutor(50) as pool,
    ):
        answers = list(pool.map(lambda files: _upload(url, files, token), uploads))
        assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers if a.status_code > 201]
        ids = [a.json()["id"] for a in answers]
        assert len(set(ids)) == 40 and ids[40:] == ids[:10]
        stored = httpx.get(f"{url}/api/submissions").json()
    assert sorted(s["id"] for s in stored) == sorted(set(ids))
    assert len({s["content_hash"] for s in stored}) == 40


def test_hub_layout_import_and_static_export(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    hub = tmp_path / "hub"
    for run_dir in runs:
        assert main(["submit", str(run_dir), "--to", str(hub)]) == 0
    folders = sorted(p.parent for p in hub.glob("runs/*/*/results.json"))
    assert [f.parent.name for f in folders] == ["tiny__llava", "tiny__qwen2_vl"] and (hub / "README.md").is_file()
    assert {p.name for p in folders[0].iterdir()} == set(read_run_files(runs[0]))
    assert main(["submit", str(runs[0]), "--to", "hf://models/x"]) == 2
    assert "hf://datasets/ORG/NAME" in capsys.readouterr().err
    assert main(["submit", str(runs[0]), "--to", "hf://datasets/org/runs"]) == 2  # HF_HUB_OFFLINE in tests
    assert "cannot push to the Hub dataset org/runs" in capsys.readouterr().err
    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    assert main(["leaderboard", "import", str(hub), "--db", db_url, "--data-dir", str(data_dir)]) == 0
    assert capsys.readouterr().out.count("verified") == 2
    broken = hub / "runs" / "broken" / "0"
    broken.mkdir(parents=True)
    (broken / "results.json").write_text("{}")
    assert main(["leaderboard", "import", str(hub), "--db", db_url]) == 1
    out, err = capsys.readouterr()
    assert out.count("(already stored)") == 2 and "broken/0: refused: results.json: schema_version None" in err
    site = tmp_path / "site"
    assert main(["leaderboard", "export", "--out", str(site), "--db", db_url]) == 0
    assert _site_pages_with_working_links(site) == 3
    assert json.loads((site / "api" / "submissions.json").read_text())[0]["model"] == "tiny:llava"
    assert (site / "tables" / "shapes.csv").read_text().count("tiny:") == 2


def test_the_serve_and_token_commands(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import os
    import subprocess
    import sys

    from tests.leaderboard_fixtures import free_port

    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = _token(db_url, "alice", capsys)
    assert main(["leaderboard", "token", "revoke", "alice", "--db", db_url]) == 0
    assert main(["leaderboard", "token", "list", "--db", db_url]) == 0
    assert "revoked" in capsys.readouterr().out
    assert main(["leaderboard", "token", "revoke", "alice", "--db", db_url]) == 2
    assert "no active token named 'alice'" in capsys.readouterr().err
    assert main(["leaderboard", "export", "--out", str(tmp_path / "site"), "--db", "not a url"]) == 2
    assert "not a database URL" in capsys.readouterr().err
    from harness.cli import build_parser
    from harness.cli.leaderboard import _leaderboard_settings

    args = build_parser().parse_args(
        ["leaderboard", "import", "hub", "--vista-task", "shapes_color", "--vista-theta", "0.3"]
    )  # flags generated from the protocol's hooks
    assert _leaderboard_settings(args).protocol_options == {"vista": {"task": "shapes_color", "theta": 0.3}}
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "leaderboard", "serve", "--db", db_url, "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/health").json()
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.time() < deadline, server.stdout.read().decode()
                time.sleep(0.3)
        assert health == {"ok": True, "database": "sqlite"}
        revoked = httpx.post(
            f"http://127.0.0.1:{port}/api/submissions",
            files=[("files", ("results.json", b"{}"))],
            headers={"Authorization": f"Bearer {token}"},
        )
        assert revoked.status_code == 401
        assert "No submissions yet" in httpx.get(f"http://127.0.0.1:{port}/").text
    finally:
        server.terminate()
        server.wait(timeout=30)
