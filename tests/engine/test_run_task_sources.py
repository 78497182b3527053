"""Scoring trusts a run's answers, never its code: `harness score` and the audits open tasks from the bundled
tasks plus the include paths named on the command line; a run's recorded include paths are provenance only."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.tasks import run_include_paths
from harness.errors import TaskConfigError
from harness.results import read_run
from harness.taskspec.registry import TaskRegistry, bundled_tasks_dir
from tests.conftest import ROOT, run_harness


def hostile_tasks(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the bundled shapes tasks (same names) whose utils.py writes a marker file when imported."""
    folder = tmp_path / "evil"
    shutil.copytree(ROOT / "tasks" / "shapes", folder)
    marker = tmp_path / "code-ran"
    with (folder / "utils.py").open("a", encoding="utf-8") as utils:
        utils.write(f"\nfrom pathlib import Path as _Path\n_Path({str(marker)!r}).write_text('ran')\n")
    return folder, marker


def received_run(tmp_path: Path, files: dict[str, bytes], include_paths: list[str]) -> Path:
    """The run as someone else sent it: its results.json records ``include_paths``."""
    run_dir = tmp_path / "received"
    run_dir.mkdir()
    for name, data in files.items():
        (run_dir / name).write_bytes(data)
    raw = json.loads((run_dir / "results.json").read_text())
    raw["config"]["include_paths"] = include_paths
    (run_dir / "results.json").write_text(json.dumps(raw))
    return run_dir


@pytest.mark.parametrize("recorded", ["relative", "absolute", "root"])
def test_score_never_runs_a_received_runs_task_code(tmp_path: Path, saved_run: dict[str, bytes], recorded: str) -> None:
    folder, marker = hostile_tasks(tmp_path)
    paths = {"relative": ["evil"], "absolute": [str(folder)], "root": ["/"]}[recorded]
    run_dir = received_run(tmp_path, saved_run, paths)
    done = run_harness("score", str(run_dir), cwd=tmp_path)  # "evil" would resolve against this folder
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    warnings = [line for line in done.stderr.splitlines() if "not used" in line]
    assert len(warnings) == 1 and paths[0] in warnings[0] and "--trust-run-include-paths" in warnings[0]
    assert "Traceback" not in done.stderr and "shadows" not in done.stderr
    assert read_run(run_dir).results["shapes_color"] == json.loads(saved_run["results.json"])["results"]["shapes_color"]


def test_trusting_the_runs_include_paths_is_an_opt_in_that_names_them(
    tmp_path: Path, saved_run: dict[str, bytes]
) -> None:
    folder, marker = hostile_tasks(tmp_path)
    run_dir = received_run(tmp_path, saved_run, [str(folder)])
    done = run_harness("score", str(run_dir), "--trust-run-include-paths", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert marker.exists()  # asked for: the run's folder is used, and said so
    lines = done.stderr.splitlines()
    assert [line for line in lines if "trusting the run's include paths" in line and str(folder) in line]
    shadow = [line for line in lines if "'shapes_color' shadows the bundled task" in line]
    assert len(shadow) == 1 and str(folder / "shapes_color.yaml") in shadow[0]


def test_an_include_path_named_on_the_command_line_is_used_without_a_provenance_warning(
    tmp_path: Path, saved_run: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    folder, marker = hostile_tasks(tmp_path)
    run_dir = received_run(tmp_path, saved_run, [str(folder)])
    with caplog.at_level(logging.WARNING):
        assert main(["score", str(run_dir), "--include-path", str(folder)]) == 0
    assert marker.exists() and not [r for r in caplog.records if "not used" in r.getMessage()]


def test_run_include_paths_keeps_what_the_user_gave(tmp_path: Path, saved_run: dict[str, bytes]) -> None:
    run_dir = received_run(tmp_path, saved_run, ["/a", "/b"])
    run = read_run(run_dir)
    assert run_include_paths(run, run_dir, []) == []
    assert run_include_paths(run, run_dir, ["/a"]) == ["/a"]
    assert run_include_paths(run, run_dir, ["/a"], trust_run=True) == ["/a", "/b"]


def test_a_task_shadowing_a_bundled_one_warns_once_and_the_leaderboard_refuses_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder, _ = hostile_tasks(tmp_path)
    with caplog.at_level(logging.WARNING):
        TaskRegistry.discover([folder])
        registry = TaskRegistry.discover([folder])
    shadows = [r.getMessage() for r in caplog.records if "'shapes_color' shadows" in r.getMessage()]
    assert len(shadows) == 1 and len(shadows[0].splitlines()) == 1
    assert registry.get("shapes_color").source == (folder / "shapes_color.yaml").resolve()
    with pytest.raises(TaskConfigError, match="has the name of a bundled task") as refused:
        TaskRegistry.discover([folder], shadowing="error")
    assert len(str(refused.value).splitlines()) == 1
    TaskRegistry.discover([bundled_tasks_dir()], shadowing="error")  # the bundled folder itself shadows nothing


def test_leaderboard_import_refuses_an_include_path_that_shadows_a_bundled_task(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, marker = hostile_tasks(tmp_path)
    hub = tmp_path / "hub" / "runs" / "tiny" / "0"
    hub.mkdir(parents=True)
    for name, data in saved_run.items():
        (hub / name).write_bytes(data)
    argv = [
        "leaderboard",
        "import",
        str(tmp_path / "hub"),
        "--db",
        f"sqlite:///{tmp_path / 'lb.sqlite'}",
        "--include-path",
        str(folder),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "has the name of a bundled task" in err[-1] and not marker.exists()
