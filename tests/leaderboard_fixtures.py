"""Helpers for the leaderboard tests: real tiny-model runs (made once per session), run-folder edits,
and a real server on loopback."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.leaderboard.db import Database
    from harness.leaderboard.service import Settings

_RUNS: dict[str, list[Path]] = {}
_DATA: dict[str, Path] = {}
SHAPES_DOCS = 3


def small_data_dir(factory: Any) -> Path:
    """A data dir whose shapes dataset has 3 docs (made once per session), so that the tests' runs cover
    whole tasks (a run cut by --limit is only ever ``partial``) and stay quick."""
    if "shapes" not in _DATA:
        from builders import build_dataset

        root = factory.getbasetemp() / "leaderboard-data"
        build_dataset("shapes", root / "vlm-audit" / "shapes", seed=0, n=SHAPES_DOCS)
        _DATA["shapes"] = root
    return _DATA["shapes"]


@pytest.fixture(scope="module", name="data_dir")
def board_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The leaderboard tests' data dir (import this fixture into a test module)."""
    return small_data_dir(tmp_path_factory)


@pytest.fixture(scope="module", name="runs")
def board_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The two tiny-model runs over ``data_dir`` (import this fixture into a test module)."""
    return tiny_runs(data_dir, tmp_path_factory.mktemp("lb-runs"))


def tiny_runs(data_dir: Path, out: Path) -> list[Path]:
    """Runs of tiny:llava and tiny:qwen2_vl on the shapes group of ``data_dir`` through the real ``harness
    eval`` (3 docs, 3 sampled answers each, so the VISTA pool has something to cluster); made once per
    session and data dir. Over ``small_data_dir`` a run covers the whole group; over a larger data dir it
    is cut to 3 docs by --limit."""
    key = str(data_dir)
    if key not in _RUNS:
        from harness.cli import main

        limit = [] if data_dir == _DATA.get("shapes") else ["--limit", str(SHAPES_DOCS)]
        for spec in ("tiny:llava", "tiny:qwen2_vl"):
            code = main(
                [
                    "eval",
                    "--model",
                    spec,
                    "--tasks",
                    "shapes",
                    *limit,
                    "--repeats",
                    "3",
                    "--gen-kwargs",
                    "temperature=1.0,max_new_tokens=5",
                    "--data-dir",
                    str(data_dir),
                    "--output",
                    str(out),
                    "--no-cache",
                    "--verbosity",
                    "quiet",
                ]
            )
            assert code == 0
        _RUNS[key] = sorted(p.parent for p in out.glob("*/*/results.json"))
    return _RUNS[key]


def edited_run(run_dir: Path, dest: Path, edit: Any) -> Path:
    """A copy of a run folder whose results.json went through ``edit(results_dict)``."""
    shutil.copytree(run_dir, dest)
    results = json.loads((dest / "results.json").read_text())
    edit(results)
    (dest / "results.json").write_text(json.dumps(results, indent=2))
    return dest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the leaderboard server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def answered_run(run_dir: Path, dest: Path, model: str, right: dict[str, set[int]]) -> Path:
    """A copy of a run whose every answer to the docs in ``right[task]`` is the doc's target, rescored with
    ``harness score`` (so its figures are its samples') and renamed ``model``: a model that gets those
    docs right, whose submission the server verifies."""
    from harness.cli import main

    edited = edited_run(run_dir, dest.with_name(dest.name + "-edited"), lambda r: r["config"].update(model=model))
    for task, docs in right.items():
        path = edited / f"samples_{task}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            if row["doc_id"] in docs:
                row["responses"] = [row["target"]] * len(row["responses"])
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["score", str(edited), "--output", str(dest), "--verbosity", "quiet"]) == 0
    return dest


@pytest.fixture(scope="module", name="ranked")
def ranked_board(
    runs: list[Path], data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Database, Settings, Path]:
    """(database, settings, the third run) of three verified submissions on shapes: tiny:llava,
    tiny:qwen2_vl and a copy of the latter that answers the colour of docs 0 and 1 right (import this
    fixture into a test module)."""
    from harness.leaderboard.bundle import read_run_files
    from harness.leaderboard.db import Database
    from harness.leaderboard.service import Settings, submit_files

    tmp = tmp_path_factory.mktemp("ranks")
    right = answered_run(runs[1], tmp / "right", "tiny:qwen2_vl-right", {"shapes_color": {0, 1}})
    db_url = f"sqlite:///{tmp / 'board.sqlite'}"
    db, settings = Database(db_url), Settings(db_url=db_url, data_dir=data_dir)
    for run_dir in (*runs, right):
        assert submit_files(db, read_run_files(run_dir), "alice", settings).status == "verified"
    return db, settings, right


def upload(url: str, files: dict[str, bytes], token: str) -> Any:
    """``POST /api/submissions`` of ``files`` with ``token``, as ``harness submit`` sends them."""
    import httpx

    return httpx.post(
        f"{url}/api/submissions",
        files=[("files", (n, d)) for n, d in files.items()],
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
