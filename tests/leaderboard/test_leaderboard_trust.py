"""What the leaderboard takes and shows: a run that still holds a credential is refused by ``harness
submit``, ``harness leaderboard import`` and the server in one line naming the field, and one stored
before that is shown with the marker; names with control or bidi characters are refused where they are
given and shown escaped on every page, table, CSV and API answer; the upload rate limit lives in the
database, shared by two server processes and kept across a restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.leaderboard import bundle as bundle_module
from harness.leaderboard.bundle import SubmissionError, read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Quota, Settings, submit_files
from harness.leaderboard.tokens import create_token
from harness.secrets import SECRET_MARKER
from tests.conftest import ROOT, write
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    edited_run,
    free_port,
    running_server,
    upload,
)

KEY = "sk-live-0123456789abcdef"
BIDI = "tiny:\u202eavlle\u2066x\x00"  # shows as another name where U+202E is honoured


def _with_key(results: dict) -> None:
    results["config"]["model_args"] = {"api_key": KEY}


def _with_key_in_command(results: dict) -> None:
    results["provenance"]["command"] += ["--model-args", f"base_url=http://h/v1,api_key={KEY}"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [(_with_key, "config.model_args.api_key"), (_with_key_in_command, "provenance.command[")],
)
def test_a_run_holding_a_credential_is_refused_by_submit_import_and_the_server(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, field: str
) -> None:
    leaky = edited_run(runs[0], tmp_path / "leaky", edit)
    assert main(["submit", str(leaky), "--to", str(tmp_path / "hub")]) == 2  # the Hub layout, as for hf://
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "holds a credential" in err and KEY not in err
    assert not (tmp_path / "hub").exists()

    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    with pytest.raises(SubmissionError, match=f"results.json: {field.replace('[', '.')}"):
        submit_files(db, read_run_files(leaky), "alice", Settings(data_dir=data_dir))
    with running_server(create_app(Settings(data_dir=data_dir), db)) as url:
        answer = upload(url, read_run_files(leaky), token)
        assert answer.status_code == 422 and field in answer.json()["error"] and KEY not in answer.text
        assert httpx.get(f"{url}/api/submissions").json() == []
    hub = tmp_path / "clone" / "runs" / "m" / "abc"
    hub.parent.mkdir(parents=True)
    leaky.rename(hub)
    assert main(["leaderboard", "import", str(tmp_path / "clone"), "--db", db.url, "--data-dir", str(data_dir)]) != 0
    out = capsys.readouterr()
    assert field in out.out + out.err and KEY not in out.out + out.err


def test_a_run_stored_before_runs_were_cleared_is_shown_with_the_marker(
    runs: list[Path], data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def both(results: dict) -> None:
        _with_key(results)
        _with_key_in_command(results)

    leaky = edited_run(runs[0], tmp_path / "leaky", both)
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    monkeypatch.setattr(bundle_module, "find_secret", lambda raw: None)  # as a server before the check did
    outcome = submit_files(db, read_run_files(leaky), "alice", Settings(data_dir=data_dir))
    monkeypatch.undo()
    with running_server(create_app(Settings(data_dir=data_dir), db)) as url:
        for path in (f"files/{outcome.id}/results.json", f"model/{outcome.id}.html", "api/submissions", ""):
            shown = httpx.get(f"{url}/{path}").text
            assert KEY not in shown, path
        served = httpx.get(f"{url}/files/{outcome.id}/results.json").json()
        assert served["config"]["model_args"] == {"api_key": SECRET_MARKER}
        assert f"api_key={SECRET_MARKER}" in served["provenance"]["command"][-1]
        assert "secret: given" in httpx.get(f"{url}/model/{outcome.id}.html").text  # the run config, as JSON


def test_names_with_control_or_bidi_characters_are_refused_and_shown_escaped(
    runs: list[Path], data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    with pytest.raises(HarnessError, match=r"holds a control or bidi character \(\\u202e\)"):
        create_token(db, "mallory\u202e")
    hostile = edited_run(runs[0], tmp_path / "bidi", lambda r: r["config"].update(model=BIDI))
    with pytest.raises(SubmissionError, match=r"config.model 'tiny:\\u202eavlle\\u2066x\\x00' holds a control"):
        submit_files(db, read_run_files(hostile), "alice", Settings(data_dir=data_dir))
    # stored before names were checked (a model name and a submitter name): shown escaped everywhere
    monkeypatch.setattr(bundle_module, "display_problem", lambda kind, text: None)
    outcome = submit_files(db, read_run_files(hostile), "eve\u202etxt.exe", Settings(data_dir=data_dir))
    monkeypatch.undo()
    with running_server(create_app(Settings(data_dir=data_dir), db)) as url:
        for path in ("", f"model/{outcome.id}.html", "api/submissions", "tables/shapes.csv", "tables/shapes.json"):
            shown = httpx.get(f"{url}/{path}").text
            assert "\u202e" not in shown and "\u2066" not in shown and "\x00" not in shown, path
            assert "\\u202e" in shown, path
        api = httpx.get(f"{url}/api/submissions").json()
        assert api[0]["model"] == "tiny:\\u202eavlle\\u2066x\\x00" and api[0]["submitter"] == "eve\\u202etxt.exe"


def _serve(db_url: str, port: int) -> subprocess.Popen[bytes]:
    """``harness leaderboard serve`` in a process of its own, on the same database."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = ["leaderboard", "serve", "--db", db_url, "--port", str(port), "--rate-per-minute", "3"]
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *command], env=env, stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise RuntimeError("harness leaderboard serve exited during start-up") from None
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("harness leaderboard serve did not start")


def test_the_rate_limit_is_shared_by_two_server_processes_and_kept_across_a_restart(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    db = Database(db_url)
    token = create_token(db, "alice")
    refused = {"notes.txt": b"x"}  # a 400 after the rate check: it still spends the allowance
    port = free_port()
    other = _serve(db_url, port)
    try:
        with running_server(create_app(Settings(quota=Quota(uploads_per_minute=3)), Database(db_url))) as url:
            assert upload(url, refused, token).status_code == 400
            assert upload(f"http://127.0.0.1:{port}", refused, token).status_code == 400
            assert upload(url, refused, token).status_code == 400
            answer = upload(f"http://127.0.0.1:{port}", refused, token)
            assert answer.status_code == 429 and "rate limit" in answer.json()["error"]
    finally:
        other.terminate()
        other.wait(timeout=30)
    with running_server(create_app(Settings(quota=Quota(uploads_per_minute=3)), Database(db_url))) as url:
        answer = upload(url, refused, token)  # a restarted server: the same minute, the same allowance
        assert answer.status_code == 429 and 0 < int(answer.headers["Retry-After"]) <= 60
        assert upload(url, refused, create_token(db, "bob")).status_code == 400
    db.close()


SLOW_UTILS = """
import time
from pathlib import Path


def process_color(doc, results):
    if Path(__file__).with_name("SLOW").exists():  # on the server only: its re-scoring outlasts any budget
        time.sleep(120)
    correct = float(results[0].strip().lower() == doc["color"])
    return {"exact_match": correct, "answer_accuracy": correct}
"""


def test_an_uploads_whole_work_is_bounded_by_one_budget(data_dir: Path, tmp_path: Path) -> None:
    """Reading, re-scoring and storing one upload take at most ``--rescore-timeout`` in all: re-scoring that
    runs past its share is stopped in the worker, which stores what it has read as unverifiable; no second
    worker reads the upload again past the budget (as one did, for up to 60 s more)."""
    tasks = tmp_path / "slow"
    write(tasks / "slow_utils.py", SLOW_UTILS)
    write(
        tasks / "slow_color.yaml",
        f"task: slow_color\ninclude: {ROOT / 'tasks' / 'shapes' / 'shapes_color.yaml'}\n"
        "process_results: !function slow_utils.process_color\n",
    )
    argv = ["eval", "--model", "tiny:qwen2_vl", "--tasks", "slow_color", "--include-path", str(tasks)]
    assert main([*argv, "--data-dir", str(data_dir), "--output", str(tmp_path / "runs"), "--no-cache"]) == 0
    (run_dir,) = {p.parent for p in (tmp_path / "runs").rglob("results.json")}
    (tasks / "SLOW").touch()
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    budget = 20.0
    settings = Settings(include_paths=(str(tasks),), data_dir=data_dir, rescore_timeout_s=budget)
    with running_server(create_app(settings, db)) as url:
        start = time.perf_counter()
        answer = upload(url, read_run_files(run_dir), token)
        took = time.perf_counter() - start
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"] == "unverifiable"
    assert "unverifiable (timeout)" in answer.json()["checks"]["slow_color"]["message"]
    assert took < budget  # re-scoring stopped at three quarters of it, the store within the rest
