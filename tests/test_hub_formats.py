"""The Hub's own formats: a build's eval.yaml (benchmark registration) and a run's .eval_results/*.yaml,
read back with huggingface_hub's own parser; everything up to the push, which cannot reach the Hub here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import all_builders, build_dataset
from builders.benchmark import benchmark_spec, check_benchmark_spec
from harness.cli import main
from harness.data import EVAL_YAML, load_task_dataset
from harness.errors import HarnessError
from harness.leaderboard.eval_results import FOLDER, write_eval_results
from harness.results.schema import read_run
from harness.taskspec.registry import TaskRegistry
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    running_server,
)

PROTOCOL_DATASETS = {"vista", "stealth", "mist", "diavlo", "fusion"}


def test_a_build_writes_eval_yaml_whose_tasks_load(tmp_path: Path) -> None:
    from datasets import load_dataset

    folder = build_dataset("shapes", tmp_path / "data" / "vlm-audit" / "shapes", n=8)
    spec = yaml.safe_load((folder / EVAL_YAML).read_text())
    check_benchmark_spec(spec)
    assert spec == {
        "name": "shapes",
        "description": spec["description"],
        "evaluation_framework": "lmms-eval",
        "tasks": [
            {"id": "shapes_color", "config": "default", "split": "test"},
            {"id": "shapes_kind", "config": "default", "split": "test"},
        ],
    }
    cache = str(tmp_path / "datasets-cache")  # datasets keys a folder's cached copy by its layout, not content
    for task in spec["tasks"]:  # each task's config and split is what the Hub (and load_dataset) reads
        assert len(load_dataset(str(folder), task["config"], split=task["split"], cache_dir=cache)) == 8
    # the registration describes the data: a run's dataset fingerprint is the same with it or without it
    config = TaskRegistry.discover([]).get("shapes_color")
    before = load_task_dataset(config, tmp_path / "data").fingerprint["sha256"]
    (folder / EVAL_YAML).unlink()
    assert load_task_dataset(config, tmp_path / "data").fingerprint["sha256"] == before


def test_each_protocol_dataset_is_a_benchmark_of_its_tasks() -> None:
    registry = TaskRegistry.discover([])
    builders = {b.name: b for b in all_builders()}
    assert set(builders) >= PROTOCOL_DATASETS
    for name in PROTOCOL_DATASETS:
        repo = builders[name].load().REPO_ID
        reading = {t: registry.get(t) for t in registry.tasks if registry.get(t).dataset_path == repo}
        splits = sorted({c.test_split or "test" for c in reading.values()})
        spec = benchmark_spec(repo, name, builders[name].description, splits)
        assert spec is not None, name
        assert {t["id"] for t in spec["tasks"]} == set(reading), name
    stealth = builders["stealth"].load().REPO_ID
    partial = benchmark_spec(stealth, "Stealth", "d", ["short", "long", "ocr"])  # built without SQuAD
    assert partial is not None and "stealth_vqa" not in {t["id"] for t in partial["tasks"]}
    assert benchmark_spec("vlm-audit/vista-implant", "x", "d", ["train"]) is None  # no task reads it


def test_an_eval_yaml_without_the_documented_fields_is_one_line() -> None:
    with pytest.raises(HarnessError) as caught:
        check_benchmark_spec({"name": "x", "evaluation_framework": "", "tasks": [{"id": "a", "split": "test"}]})
    assert str(caught.value) == (
        "eval.yaml: description must be text; evaluation_framework must be text; "
        "tasks[0] needs id, config and split as text"
    )


@pytest.fixture
def run_dir(tmp_path: Path, runs: list[Path]) -> Path:
    """A copy of a tiny model's run of the shapes group (shapes_color and shapes_kind)."""
    import shutil

    return Path(shutil.copytree(runs[0], tmp_path / "run"))


def _entry(path: Path, task: str) -> Any:
    from huggingface_hub import parse_eval_result_entries

    return next(e for e in parse_eval_result_entries(yaml.safe_load(path.read_text())) if e.task_id == task)


def test_a_runs_scores_in_the_hubs_eval_results_format(run_dir: Path, tmp_path: Path) -> None:
    run = read_run(run_dir)
    page = "http://127.0.0.1:8000/model/1.html"
    (path,) = write_eval_results(run_dir, tmp_path / "verified", {"shapes_color": "verified"}, page)
    assert path == tmp_path / "verified" / FOLDER / "shapes.yaml"
    entry = _entry(path, "shapes_color")
    assert (entry.dataset_id, entry.task_id) == ("vlm-audit/shapes", "shapes_color")
    assert entry.value == run.results["shapes_color"]["exact_match,none"]
    assert (entry.source_url, entry.source_name, entry.date) == (page, "harness leaderboard", run.provenance.started_at)
    assert entry.notes == (
        "exact_match (none filter); verified by the harness leaderboard (re-scored from the samples with its "
        "own task code)"
    )
    assert _entry(path, "shapes_kind").source_url is None  # the server's verdict on it was not given
    (partial,) = write_eval_results(run_dir, tmp_path / "partial", {"shapes_color": "partial"}, page)
    entry = _entry(partial, "shapes_color")
    assert entry.source_url is None and entry.notes.endswith("not verified: the harness leaderboard found it partial")
    (alone,) = write_eval_results(run_dir, tmp_path / "alone")
    assert _entry(alone, "shapes_color").notes.endswith("self-reported: not submitted to a harness leaderboard")


def test_submit_to_a_model_repo_goes_up_to_the_push(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", str(run_dir), "--to", "hf://org/model"]) == 2  # HF_HUB_OFFLINE in tests
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: cannot push to the Hub model org/model: ")
    staged = Path(err.split("(the files are in ")[1].split(":")[0])
    assert _entry(staged / "shapes.yaml", "shapes_color").dataset_id == "vlm-audit/shapes"
    assert main(["submit", str(run_dir), "--to", "hf://datasets/org/runs", "--leaderboard", "http://x"]) == 2
    assert capsys.readouterr().err.strip() == ("error: --leaderboard goes with a model repo target, --to hf://ORG/NAME")


def test_a_model_repo_submission_marks_what_the_leaderboard_verified(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through a real leaderboard on loopback: the run is submitted there first, and each entry says what
    the server found (its page as the source of a verified figure)."""
    from huggingface_hub import parse_eval_result_entries

    from harness.leaderboard.db import Database
    from harness.leaderboard.server import create_app
    from harness.leaderboard.service import Settings
    from harness.leaderboard.tokens import create_token

    db_url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = create_token(Database(db_url), "alice")
    with running_server(create_app(Settings(db_url=db_url, data_dir=data_dir))) as url:
        argv = ["submit", str(runs[0]), "--to", "hf://org/model", "--leaderboard", url, "--token", token]
        assert main(argv) == 2  # the push: HF_HUB_OFFLINE in tests
    err = capsys.readouterr().err.strip().splitlines()[-1]
    staged = Path(err.split("(the files are in ")[1].split(":")[0])
    entries = parse_eval_result_entries(yaml.safe_load((staged / "shapes.yaml").read_text()))
    assert {e.task_id for e in entries} == {"shapes_color", "shapes_kind"}
    for entry in entries:
        assert entry.source_url is not None and entry.source_url.startswith(f"{url}/model/")
        assert entry.notes is not None and "verified by the harness leaderboard" in entry.notes
