"""Bounds on what a run folder, an upload or a task may make the harness do: nesting in ``results.json``
is one line (as in the JSONL readers), the upload rate limit is kept in the database, and per-request
lists (stop strings) are capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.task_prompts import MAX_CHOICES, BadInputError
from harness.engine.tasks import open_task_code
from harness.errors import UnsupportedRequestError
from harness.models.base import GenerationParams
from harness.results.generation import MAX_UNTIL
from harness.taskspec.config import MAX_TURNS, TaskConfig
from tests.cli.test_score import run_copy
from tests.conftest import ROOT, write


@pytest.mark.parametrize("depth", [500, 2000])
def test_score_on_a_deeply_nested_results_json_is_one_line_and_writes_nothing(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    raw = (run_dir / "results.json").read_text()
    nested = raw.replace('"configs": {', '"nested": ' + "[" * depth + "]" * depth + ', "configs": {', 1)
    assert nested != raw
    (run_dir / "results.json").write_text(nested)
    before = sorted(p.name for p in run_dir.iterdir())
    assert main(["score", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "results.json: JSON nested deeper than 64 levels; refused" in err
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no original/ left behind


def test_stop_strings_are_capped_with_one_line() -> None:
    """200,000 stop strings cost 75 s a doc; past the cap they are refused before any request is made."""
    with pytest.raises(UnsupportedRequestError) as caught:
        GenerationParams.from_kwargs({"until": [f"s{i}" for i in range(200_000)]})
    assert str(caught.value) == f"generation_kwargs: until holds 200000 stop strings; at most {MAX_UNTIL} are allowed"
    with pytest.raises(UnsupportedRequestError, match="a stop string of 5000 characters; at most 1000"):
        GenerationParams.from_kwargs({"until": ["x" * 5000]})
    assert GenerationParams.from_kwargs({"until": ["\n"] * MAX_UNTIL}).until == ("\n",) * MAX_UNTIL
    with pytest.raises(UnsupportedRequestError) as caught:
        GenerationParams.from_kwargs({"until": [1] * 100_000})
    assert len(str(caught.value)) < 200  # the value shown cut, not 100,000 items long


def test_a_task_with_too_many_stop_strings_choices_or_turns_fails_in_one_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stops = json.dumps([f"stop{i}" for i in range(MAX_UNTIL + 1)])
    write(
        tmp_path / "tasks" / "many_stops.yaml",
        f"task: many_stops\ninclude: {ROOT / 'tasks' / 'shapes' / 'shapes_color.yaml'}\n"
        f"generation_kwargs:\n  until: {stops}\n  max_new_tokens: 4\n",
    )
    write(
        tmp_path / "tasks" / "many_turns.yaml",
        f"task: many_turns\ninclude: {ROOT / 'tasks' / 'shapes' / 'shapes_color.yaml'}\n"
        f"metadata:\n  harness_turns: {json.dumps(['again?'] * (MAX_TURNS + 1))}\n",
    )
    for task, expected in (
        ("many_stops", f"until holds {MAX_UNTIL + 1} stop strings; at most {MAX_UNTIL} are allowed"),
        ("many_turns", f"harness_turns holds {MAX_TURNS + 1} turns; at most {MAX_TURNS}"),
    ):
        argv = ["eval", "--model", "tiny:qwen2_vl", "--tasks", task, "--include-path", str(tmp_path / "tasks")]
        assert main([*argv, "--data-dir", str(data_dir), "--limit", "1", "--no-cache"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err and "Traceback" not in err


def test_a_doc_with_too_many_choices_is_that_docs_error() -> None:
    config = TaskConfig.from_dict(
        {"task": "mc", "output_type": "multiple_choice", "doc_to_text": "q", "doc_to_choice": "options"},
        Path("mc.yaml"),
    )
    prompts = open_task_code(config, None).prompts
    with pytest.raises(BadInputError, match=f"{MAX_CHOICES + 1} choices; at most {MAX_CHOICES}"):
        prompts.choices({"options": ["a"] * (MAX_CHOICES + 1)})
    assert prompts.choices({"options": ["a", "b"]}) == ["a", "b"]


def test_score_submit_and_import_bound_their_reading(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--read-timeout``: reading past it stops in one line naming the file (0 s: at the first line)."""
    run_dir = run_copy(tmp_path, saved_run)
    hub = tmp_path / "hub"
    for argv in (
        ["score", str(run_dir), "--read-timeout", "0"],
        ["submit", str(run_dir), "--to", str(hub), "--read-timeout", "0"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "samples_shapes_color.jsonl: reading took longer than 0 s" in err
    assert not hub.exists() and not (run_dir / "original").exists()
    assert main(["submit", str(run_dir), "--to", str(hub)]) == 0  # the default bound reads it
    capsys.readouterr()
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    assert main(["leaderboard", "import", str(hub), "--db", db, "--read-timeout", "0"]) == 1
    err = capsys.readouterr().err
    assert "refused: samples_shapes_color.jsonl: reading took longer than 0 s (--read-timeout)" in err
