"""The leaderboard answers every bad request with a 4xx and one line: image bombs, ids past the
database's integer range, a group carried without all its tasks, and a corpus of malformed bodies."""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

import httpx
import pytest

from harness.leaderboard.bundle import read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Quota, Settings
from harness.leaderboard.tokens import create_token
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    edited_run,
    running_server,
)

HUGE = 10**30


@pytest.fixture()
def board(tmp_path: Path) -> tuple[str, str]:
    """A running server (its URL) and a valid token."""
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    with running_server(create_app(Settings(), db)) as url:
        yield url, token


def _upload(url: str, files: dict[str, bytes], token: str) -> httpx.Response:
    return httpx.post(
        f"{url}/api/submissions",
        files=[("files", (n, d)) for n, d in files.items()],
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels (its data is a few bytes: a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = chunk(b"IDAT", zlib.compress(b"\0" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + data + chunk(b"IEND", b"")


def test_a_400_megapixel_png_is_413(board: tuple[str, str], runs: list[Path]) -> None:
    url, token = board
    answer = _upload(url, {**read_run_files(runs[0]), "bomb.png": _png_header(20_000, 20_000)}, token)
    assert answer.status_code == 413 and "bomb.png" in answer.json()["error"]


def test_ids_past_the_integer_range_are_404(board: tuple[str, str]) -> None:
    url, _ = board
    for path in (
        f"/api/submissions/{HUGE}",
        f"/model/{HUGE}.html",
        f"/files/{HUGE}/results.json",
        f"/api/submissions/{-HUGE}",
        f"/files/{2**63}/results.json",
    ):
        assert httpx.get(url + path).status_code == 404, path


def test_a_group_carried_without_all_its_tasks_is_422(board: tuple[str, str], runs: list[Path], tmp_path: Path) -> None:
    url, token = board

    def drop_kind(results: dict) -> None:
        for key in ("configs", "results", "counts", "versions", "n-shot", "higher_is_better", "n-samples"):
            if isinstance(results.get(key), dict):
                results[key].pop("shapes_kind", None)

    run = edited_run(runs[0], tmp_path / "partial", drop_kind)
    (run / "samples_shapes_kind.jsonl").unlink()
    answer = _upload(url, read_run_files(run), token)
    assert answer.status_code == 422, answer.text
    assert "shapes" in answer.json()["error"] and "shapes_kind" in answer.json()["error"]


def _corpus(good: dict[str, bytes]) -> list[tuple[bytes | dict[str, bytes], str | None]]:
    """(body, content type) pairs: a dict is sent as multipart `files`; bytes are sent raw."""
    results = json.loads(good["results.json"])
    samples = good["samples_shapes_kind.jsonl"].splitlines()
    first = json.loads(samples[0])

    def with_results(**changes: object) -> dict[str, bytes]:
        return {**good, "results.json": json.dumps({**results, **changes}).encode()}

    def with_sample(**changes: object) -> dict[str, bytes]:
        lines = [json.dumps({**first, **changes}).encode(), *samples[1:]]
        return {**good, "samples_shapes_kind.jsonl": b"\n".join(lines)}

    multipart = "multipart/form-data; boundary=b"
    return [
        (b"", multipart),
        (b"--b--\r\n", multipart),
        (b"--b\r\n\r\n\r\n--b--", multipart),
        (b'--b\r\nContent-Disposition: form-data; name="files"; filename="results.json"\r\n\r\n{', multipart),
        (b"x" * 1000, "multipart/form-data"),
        (b"x" * 1000, "multipart/form-data; boundary="),
        (b'{"files": []}', "application/json"),
        (b"\xff\xfe\x00", "application/octet-stream"),
        (b"", None),
        ({"results.json": b""}, None),
        ({"results.json": b"\xff\xfe\xfa"}, None),
        ({"results.json": b"[]"}, None),
        ({"results.json": b"1e999"}, None),
        ({"results.json": b"[" * 100_000}, None),
        ({"results.json": b'{"schema_version": ' + b"9" * 5000 + b"}"}, None),
        ({**good, "samples_shapes_kind.jsonl": b""}, None),
        ({**good, "samples_shapes_kind.jsonl": b"\xff\n"}, None),
        ({**good, "samples_shapes_kind.jsonl": b"[]\n"}, None),
        ({**good, "plot.png": b""}, None),
        ({**good, "plot.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 40}, None),
        ({**good, "../x.png": b""}, None),
        ({**good, "r\u00e9sultats.json": b"{}"}, None),
        ({**good, "": b"x"}, None),
        (with_results(configs=5), None),
        (with_results(results="x"), None),
        (with_results(counts=[1]), None),
        (with_results(versions={"shapes_kind": HUGE, "shapes_color": None}), None),
        (with_results(groups={"shapes": {"acc,none": HUGE}}), None),
        (with_results(group_subtasks={"x": 5}), None),
        (with_results(group_subtasks={"shapes": ["nope"]}), None),
        (with_results(config=None), None),
        (with_sample(doc_id=HUGE), None),
        (with_sample(doc_id=-1), None),
        (with_sample(doc_id="a"), None),
        (with_sample(metrics={"exact_match": HUGE}), None),
        (with_sample(metrics=None), None),
        (with_sample(responses=[HUGE]), None),
        (with_sample(task=None), None),
        (with_sample(doc=[1] * 3), None),
        (with_sample(filtered_responses={"x": "y"}), None),
        (with_sample(doc_hash=HUGE), None),
    ]


def test_a_corpus_of_malformed_bodies_gets_no_5xx(board: tuple[str, str], runs: list[Path]) -> None:
    url, token = board
    good = read_run_files(runs[0])
    failures = []
    for body, content_type in _corpus(good):
        if isinstance(body, dict):
            answer = _upload(url, body, token)
        else:
            headers = {"Authorization": f"Bearer {token}", **({"Content-Type": content_type} if content_type else {})}
            answer = httpx.post(f"{url}/api/submissions", content=body, headers=headers, timeout=120)
        if answer.status_code >= 500 or ("error" not in answer.json() and answer.status_code >= 400):
            failures.append((str(body)[:120], answer.status_code, answer.text[:200]))
    assert not failures


def test_a_submission_over_its_budget_is_refused_at_the_budget_and_others_flow(
    runs: list[Path], tmp_path: Path
) -> None:
    """A budget too short even to read the upload: refused when it ends (re-scoring past its share is stored
    unverifiable: tests/leaderboard/test_leaderboard_trust.py)."""
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    with running_server(create_app(Settings(rescore_timeout_s=0.001), db)) as url:
        answer = _upload(url, read_run_files(runs[0]), token)
        assert answer.status_code == 503 and "within this server's 0.001 s budget" in answer.json()["error"]
        assert httpx.get(f"{url}/api/submissions").json() == []
    with running_server(create_app(Settings(), db)) as url:
        start = time.perf_counter()
        answer = _upload(url, read_run_files(runs[1]), token)
        assert answer.status_code == 201 and answer.json()["status"] == "rescored", answer.text
        assert time.perf_counter() - start < 30


def test_a_token_over_its_daily_quota_gets_429(runs: list[Path], tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    with running_server(create_app(Settings(quota=Quota(submissions_per_day=1)), db)) as url:
        assert _upload(url, read_run_files(runs[0]), token).status_code == 201
        answer = _upload(url, read_run_files(runs[1]), token)
        assert answer.status_code == 429 and "quota" in answer.json()["error"]
    with running_server(create_app(Settings(quota=Quota(bytes_per_day=1000)), db)) as url:
        answer = _upload(url, read_run_files(runs[1]), create_token(db, "bob"))
        assert answer.status_code == 429 and "1000 bytes" in answer.json()["error"]
