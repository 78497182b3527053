"""Trust boundaries and resource limits of the leaderboard, on a real server on loopback with real
SQLite: a run whose requests are not the server's task is ``modified`` (never verified), the quota holds
under concurrent uploads, a resend over the quota gets its record, uploads are rate limited (refused
ones too), samples are read line by line within limits in a memory-capped worker, nesting is bounded,
an abandoned upload is one log line, every error body is ``{"error": ...}``, and symbolic links never
carry a file out of its folder."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from harness.cli import main
from harness.engine.requests import prompt_key
from harness.errors import HarnessError
from harness.hashing import derive_seed
from harness.leaderboard.bundle import Limits, bundle_paths, content_hash, parse_bundle, read_run_files
from harness.leaderboard.client import hub_runs, write_hub_layout
from harness.leaderboard.db import Database, Reservation, Submission
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Quota, Settings, import_runs
from harness.leaderboard.tokens import create_token
from harness.models.base import GenerationParams
from harness.results.jsonl import MAX_JSON_DEPTH, json_depth, read_jsonl
from harness.results.schema import read_samples
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    running_server,
)

TASKS = ("shapes_color", "shapes_kind")


def _upload(url: str, files: dict[str, bytes], token: str) -> httpx.Response:
    return httpx.post(
        f"{url}/api/submissions",
        files=[("files", (n, d)) for n, d in files.items()],
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


def _board(tmp_path: Path, **settings: Any) -> tuple[Database, str, Settings]:
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    return db, create_token(db, "alice"), Settings(**settings)


def _forged(run: Path, dest: Path, text_suffix: str = "", max_new_tokens: int | None = None) -> Path:
    """A copy of ``run`` as an edited copy of its tasks would have made it: each prompt's text extended
    and/or the requests made with another ``max_new_tokens``, keys, seeds and provenance kept consistent
    (the figures are unchanged: the tiny model's answers score as before)."""
    shutil.copytree(run, dest)
    results = json.loads((dest / "results.json").read_text())
    seed, overrides = results["config"]["seed"], results["config"]["gen_overrides"]
    for task in TASKS:
        generation = results["provenance"]["generation"][task]
        if max_new_tokens is not None:
            generation["max_new_tokens"] = max_new_tokens
        params = GenerationParams.from_kwargs({**overrides, "max_new_tokens": generation["max_new_tokens"]})
        rows = [json.loads(line) for line in (dest / f"samples_{task}.jsonl").read_text().splitlines()]
        for row in rows:
            row["prompt"][0]["content"][-1]["text"] += text_suffix
            row["request_key"] = prompt_key(row["prompt"], params, generation["n"])
            row["seed"] = derive_seed(seed, row["request_key"])
        (dest / f"samples_{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (dest / "results.json").write_text(json.dumps(results))
    return dest


def test_a_run_of_an_edited_task_is_modified_with_its_first_differing_field(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db, token, settings = _board(tmp_path, data_dir=data_dir)
    prompt = _forged(runs[0], tmp_path / "prompt", text_suffix=" Answer in one word.")
    shorter = _forged(runs[1], tmp_path / "shorter", max_new_tokens=3)
    with running_server(create_app(settings, db)) as url:
        honest = _upload(url, read_run_files(runs[0]), token).json()
        edited = _upload(url, read_run_files(prompt), token).json()
        short = _upload(url, read_run_files(shorter), token).json()
    assert honest["status"] == "verified"
    assert edited["status"] == "modified" and short["status"] == "modified"
    check = edited["checks"]["shapes_color"]
    assert check["status"] == "modified"
    assert "prompt[0].content[1].text" in check["message"] and "Answer in one word." in check["message"]
    assert "3 sample request(s) differ" in check["message"]
    assert "generation.max_new_tokens: submitted 3, expected 5" in short["checks"]["shapes_color"]["message"]
    assert edited["checks"]["shapes"]["status"] == "modified"  # the group is as bad as its worst task

    assert (
        main(["score", str(runs[0]), "--verify", "--data-dir", str(data_dir), "--output", str(tmp_path / "rescored")])
        == 0
    )
    assert "shapes_color: requests as the task builds them (3 samples)" in capsys.readouterr().out
    assert main(["score", str(prompt), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "shapes_color: requests modified (3 of 3; first: doc 0: prompt[0].content[1].text" in out
    assert main(["score", str(shorter), "--verify"]) == 1
    assert "first: provenance generation.max_new_tokens: submitted 3, expected 5" in capsys.readouterr().out


def test_six_concurrent_uploads_against_a_quota_of_two_store_two(runs: list[Path], tmp_path: Path) -> None:
    db, token, settings = _board(tmp_path, quota=Quota(submissions_per_day=2))
    base = read_run_files(runs[0])
    variants = []
    for i in range(6):  # six distinct runs (their provenance differs)
        results = json.loads(base["results.json"])
        results["provenance"]["started_at"] = f"2026-01-01T00:00:{i:02d}+00:00"
        variants.append({**base, "results.json": json.dumps(results).encode()})
    with running_server(create_app(settings, db)) as url, ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda files: _upload(url, files, token), variants))
        codes = sorted(a.status_code for a in answers)
        assert codes == [201, 201, 429, 429, 429, 429], [a.text for a in answers]
        assert all("quota" in a.json()["error"] for a in answers if a.status_code == 429)
        resent = _upload(url, variants[[a.status_code for a in answers].index(201)], token)
        assert resent.status_code == 200 and resent.json()["duplicate"]  # a resend gets its record, not 429
        assert _upload(url, variants[[a.status_code for a in answers].index(429)], token).status_code == 429
    with db.session() as session:
        assert session.scalar(select(func.count(Submission.id))) == 2
        assert session.scalar(select(func.count(Reservation.id))) == 0  # every reservation released


def test_the_rate_limit_counts_refused_uploads(runs: list[Path], tmp_path: Path) -> None:
    db, token, settings = _board(tmp_path, quota=Quota(uploads_per_minute=3))
    with running_server(create_app(settings, db)) as url:
        for _ in range(3):
            assert _upload(url, {"notes.txt": b"x"}, token).status_code == 400
        answer = _upload(url, read_run_files(runs[0]), token)
        assert answer.status_code == 429 and "rate limit" in answer.json()["error"]
        assert int(answer.headers["Retry-After"]) > 0
        assert _upload(url, read_run_files(runs[0]), create_token(db, "bob")).status_code == 201


def _samples(run: Path, task: str) -> bytes:
    return (run / f"samples_{task}.jsonl").read_bytes()


def test_samples_are_read_within_the_line_count_and_memory_limits(runs: list[Path], tmp_path: Path) -> None:
    files = read_run_files(runs[0])
    longest = max(len(line) for task in TASKS for line in _samples(runs[0], task).split(b"\n"))
    with pytest.raises(
        HarnessError,
        match=rf"samples_shapes_\w+.jsonl line \d: over this server's "
        rf"{longest - 1}-byte limit for one line",
    ):
        parse_bundle(files, Limits(max_line_bytes=longest - 1))
    assert parse_bundle(files, Limits(max_line_bytes=longest)).samples  # the longest line at the limit
    with pytest.raises(
        HarnessError,
        match=r"samples_shapes_kind.jsonl line 2: over this server's limit of 4 "
        r"sample records per submission",
    ):
        parse_bundle(files, Limits(max_samples=4))
    # a received file is read from disk, line by line, to the same bundle and hash as its bytes
    streamed = parse_bundle(bundle_paths(runs[0]))
    in_memory = parse_bundle(files)
    assert (
        streamed.content_hash
        == in_memory.content_hash
        == content_hash(
            json.loads(files["results.json"]),
            {t: [json.loads(x) for x in _samples(runs[0], t).decode().splitlines()] for t in in_memory.samples},
        )
    )

    db, token, settings = _board(tmp_path, limits=Limits(max_samples=4))
    with running_server(create_app(settings, db)) as url:
        answer = _upload(url, files, token)
        assert answer.status_code == 413 and "limit of 4 sample records" in answer.json()["error"]
    record = json.loads(_samples(runs[0], "shapes_color").split(b"\n")[0])
    many = "".join(json.dumps({**record, "doc_id": i}) + "\n" for i in range(40_000)).encode()
    with running_server(create_app(Settings(rescore_memory_mb=320), db)) as url:
        answer = _upload(url, {**files, "samples_shapes_color.jsonl": many}, token)
        assert answer.status_code == 413, answer.text
        assert "more memory" in answer.json()["error"] and "--rescore-memory-mb 320" in answer.json()["error"]
        assert httpx.get(f"{url}/api/health").json()["ok"]  # the worker failed, the server did not


def _nested(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep, as text (``json.dumps`` itself cannot write one past
    Python's recursion limit)."""
    return '{"d":' * (depth - 1) + '{"leaf":1}' + "}" * (depth - 1)


def _with_doc(line: str, doc: str) -> str:
    """A samples line whose doc is replaced by the JSON text ``doc``."""
    record = json.loads(line)
    record["doc"] = "DOC"
    return json.dumps(record).replace('"DOC"', doc)


def test_json_nested_past_the_documented_depth_is_refused_in_one_line(runs: list[Path], tmp_path: Path) -> None:
    assert json_depth('{"a": [1, {"b": "[[[{{{"}], "c": "\\"]"}') == 3  # brackets in strings do not count
    assert json_depth("[]") == 1 and json_depth('"[["') == 0 and json_depth("7") == 0
    assert MAX_JSON_DEPTH == 64
    deep = tmp_path / "deep"
    shutil.copytree(runs[0], deep)
    rows = _samples(deep, "shapes_color").decode().splitlines()
    (deep / "samples_shapes_color.jsonl").write_text("\n".join([_with_doc(rows[0], _nested(600)), *rows[1:]]) + "\n")
    with pytest.raises(HarnessError, match=r"line 1: JSON nested deeper than 64 levels; refused$"):
        read_samples(deep, "shapes_color")
    (tmp_path / "rows.jsonl").write_text(_nested(65) + "\n")
    with pytest.raises(HarnessError, match=r"rows.jsonl line 1: JSON nested deeper than 64 levels"):
        read_jsonl(tmp_path / "rows.jsonl")
    (tmp_path / "rows.jsonl").write_text(_nested(64) + "\n")
    assert read_jsonl(tmp_path / "rows.jsonl")[0]["d"]["d"]["d"]

    db, token, settings = _board(tmp_path)
    with running_server(create_app(settings, db)) as url:
        for doc in (_nested(350), _nested(500), _nested(960), "[" * 100_000 + "]" * 100_000):
            line = _with_doc(rows[0], doc)
            answer = _upload(
                url,
                {**read_run_files(runs[0]), "samples_shapes_color.jsonl": "\n".join([line, *rows[1:]]).encode()},
                token,
            )
            assert answer.status_code == 422, answer.text
            assert answer.json() == {
                "error": "samples_shapes_color.jsonl line 1: JSON nested deeper than 64 levels; refused"
            }
        results = b'{"schema_version": 2, "x": ' + b"[" * 500 + b"]" * 500 + b"}"
        answer = _upload(url, {**read_run_files(runs[0]), "results.json": results}, token)
        assert answer.status_code == 422 and "nested deeper than 64" in answer.json()["error"]


def test_an_abandoned_upload_is_one_log_line_and_every_error_is_json(
    runs: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db, token, settings = _board(tmp_path)
    body = _samples(runs[0], "shapes_color")
    with running_server(create_app(settings, db)) as url:
        port = int(url.rsplit(":", 1)[1])
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", port)) as sock:
                    head = (
                        f"POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                        "Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 500000\r\n\r\n"
                    )
                    sock.sendall(
                        head.encode() + b'--B\r\nContent-Disposition: form-data; name="files"; '
                        b'filename="samples_shapes_color.jsonl"\r\n\r\n' + body
                    )
            assert httpx.get(f"{url}/api/health").json()["ok"]
        for path, method, status in (
            ("/no/such/page", "GET", 404),
            ("/api/submissions", "DELETE", 405),
            ("/api/health", "POST", 405),
            ("/api/submissions/abc", "GET", 422),
        ):
            answer = httpx.request(method, url + path)
            assert answer.status_code == status and set(answer.json()) == {"error"}, (path, answer.text)
    abandoned = [r for r in caplog.records if "abandoned" in r.getMessage()]
    assert len(abandoned) == 3 and all("\n" not in r.getMessage() and not r.exc_info for r in abandoned)
    assert not [r for r in caplog.records if "Exception in ASGI application" in r.getMessage()]
    with db.session() as session:
        assert session.scalar(select(func.count(Reservation.id))) == 0


def test_symbolic_links_never_carry_a_file_out_of_its_folder(runs: list[Path], tmp_path: Path) -> None:
    secret = _write_png(tmp_path / "server-secret.png")  # a file of the server's, outside any run
    run = tmp_path / "run"
    shutil.copytree(runs[0], run)
    os.symlink(secret, run / "plot.png")
    with pytest.raises(HarnessError, match=r"plot.png: a symbolic link; a run folder's files must be regular"):
        read_run_files(run)
    with pytest.raises(HarnessError, match=r"plot.png: a symbolic link"):
        write_hub_layout(run, tmp_path / "hub-out")  # publishing refuses it too

    hub = tmp_path / "hub"
    folder = write_hub_layout(runs[0], hub)
    os.symlink(secret, folder / "plot.png")
    db, _, settings = _board(tmp_path)
    ((_, refused),) = import_runs(db, hub_runs(hub), "hub import", settings)
    assert "plot.png: a symbolic link" in str(refused)
    (folder / "plot.png").unlink()
    outside = tmp_path / "elsewhere"
    shutil.copytree(folder, outside / "abc")
    os.symlink(outside / "abc", folder.parent / "linked")
    with pytest.raises(HarnessError, match=r"linked: a symbolic link or a folder outside"):
        hub_runs(hub)
    assert main(["leaderboard", "import", str(hub), "--db", f"sqlite:///{tmp_path / 'b2.sqlite'}"]) != 0


def _write_png(path: Path) -> Path:
    from PIL import Image

    Image.new("RGB", (4, 4)).save(path)
    return path
