"""A submission's one line from received files to the stored record, on a real tiny-model run: each file
read once into the bundle, each task opened once, one JSON form of the checks."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from harness.engine import tasks
from harness.leaderboard import rescoring
from harness.leaderboard.bundle import bundle_paths, parse_bundle, read_run_files
from harness.leaderboard.checks import UNVERIFIABLE, checks_json
from harness.leaderboard.db import Database, StoredFile, Submission
from harness.leaderboard.records import store_submission
from harness.leaderboard.rescoring import Rescoring
from harness.leaderboard.service import Settings, submit_files
from harness.results.metric_key import MetricKey
from harness.taskspec.registry import TaskRegistry
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
)


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """The real ``module.name``, each call's first argument's task noted."""
    calls: list[str] = []
    real = getattr(module, name)

    def counted(config: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(config.task)
        return real(config, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_record_is_stored_from_the_bundle_without_reading_the_files_again(
    runs: list[Path], data_dir: Path, tmp_path: Path
) -> None:
    received = shutil.copytree(runs[0], tmp_path / "received")
    original = read_run_files(received)
    bundle = parse_bundle(bundle_paths(received))
    shutil.rmtree(received)  # the worker's received files are gone: every later step reads the bundle
    assert {n: f.data for n, f in bundle.files.items()} == original
    verification = Rescoring.plan(bundle, TaskRegistry.discover()).verify(data_dir)
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    record_id, duplicate = store_submission(db, bundle, verification, "alice")
    assert not duplicate
    with db.session() as session:
        stored = {f.name: f for f in session.scalars(select(StoredFile).where(StoredFile.submission_id == record_id))}
        record = session.get(Submission, record_id)
        assert record is not None and record.checks == checks_json(verification.checks)
    for name, data in original.items():
        assert stored[name].content == data and stored[name].sha256 == hashlib.sha256(data).hexdigest()
        assert stored[name].kind == ("results" if name == "results.json" else "samples")
    db.close()


def test_each_task_is_opened_once_and_its_dataset_loaded_once(
    runs: list[Path], data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _counting(monkeypatch, rescoring, "open_task")
    loaded = _counting(monkeypatch, tasks, "load_task_dataset")
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    outcome = submit_files(db, read_run_files(runs[0]), "alice", Settings(data_dir=data_dir))
    assert outcome.status == "verified"
    assert sorted(opened) == sorted(loaded) == ["shapes_color", "shapes_kind"]
    with db.session() as session:
        record = session.get(Submission, outcome.id)
        assert record is not None and record.checks == outcome.checks  # the answer and the record: one form
    db.close()


def test_the_timeout_path_reads_the_same_plan_and_figures_keep_their_keys(runs: list[Path]) -> None:
    files = read_run_files(runs[0])
    results = json.loads(files["results.json"])
    results["results"]["shapes_kind"]["exact_match,none"] = 0.5  # a claim its samples do not give
    files["results.json"] = json.dumps(results).encode()
    plan = Rescoring.plan(parse_bundle(files), TaskRegistry.discover())
    late = plan.timed_out(9.0)
    assert {c.status for c in late.checks.values()} == {UNVERIFIABLE}
    assert "9 s budget" in late.checks["shapes_kind"].message
    assert late.results["shapes_kind"]["exact_match,none"] == 0.5  # the claim, shown as not re-scored
    check = plan.verify(None).checks["shapes_kind"]
    differing = {m.metric: m for m in check.mismatches}
    assert check.status == "mismatch" and differing[MetricKey("exact_match")].claimed == 0.5
    assert differing[MetricKey("exact_match")].as_json()["metric"] == "exact_match,none"
