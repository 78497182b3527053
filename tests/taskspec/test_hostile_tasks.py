"""Hostile task files are refused in one line when the registry loads them, before any model runs:
YAML alias bombs, names that are paths or hold control or bidi characters; and an unknown-task error names
the file that defines the task asked for."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.errors import TaskConfigError
from harness.taskspec.names import name_problem
from harness.taskspec.registry import TaskRegistry
from harness.taskspec.yaml_loader import MAX_ALIAS_NODES, MAX_ALIASES, read_yaml
from tests.conftest import ROOT, run_harness, write

TEMPLATE = (ROOT / "tasks" / "shapes" / "_default_template_yaml").as_posix()


def alias_bomb(levels: int, width: int) -> str:
    """``levels`` lists, each holding ``width`` aliases of the one before: width**levels leaves when expanded."""
    lines = ['l0: &l0 "lol"']
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "task: bomb\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "levels, width, why",
    [
        (9, 9, f"more than {MAX_ALIASES} aliases"),  # 81 aliases, 9**9 leaves
        (6, 10, "expand to"),  # 60 aliases (within the count), a million nodes
    ],
)
def test_an_alias_bomb_is_refused_quickly_in_one_line(tmp_path: Path, levels: int, width: int, why: str) -> None:
    path = write(tmp_path / "bomb.yaml", alias_bomb(levels, width))
    started = time.perf_counter()
    with pytest.raises(TaskConfigError) as refused:
        read_yaml(path)
    assert time.perf_counter() - started < 2.0
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and str(path) in message and why in message


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "loop.yaml", "task: loop\nx: &x [1, *x]\n")
    with pytest.raises(TaskConfigError, match="an alias refers to a node that holds it"):
        read_yaml(path)


def test_aliases_within_the_budget_load(tmp_path: Path) -> None:
    kwargs = "\n".join(f"  family{i}: *prompt" for i in range(20))
    path = write(
        tmp_path / "ok.yaml",
        f"task: ok\nbase: &prompt {{question: Q, post_prompt: P}}\nlmms_eval_specific_kwargs:\n{kwargs}\n",
    )
    data = read_yaml(path)
    assert data["lmms_eval_specific_kwargs"]["family19"] == {"question": "Q", "post_prompt": "P"}
    assert MAX_ALIAS_NODES >= 20 * 5


def test_eval_of_an_alias_bomb_stops_before_any_model_runs(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "bomb.yaml", alias_bomb(9, 9))
    done = run_harness(
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "bomb",
        "--include-path",
        "tasks",
        "--output",
        "out",
        "--no-cache",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: task 'bomb' cannot be loaded: ") and "bomb.yaml" in line and "aliases" in line
    assert not list(tmp_path.rglob("*.jsonl"))  # no model answered: no run folder was written


@pytest.mark.parametrize(
    "name, shown",
    [
        ("../../x", "'../../x'"),
        ("a\\0b", "'a\\x00b'"),  # YAML's escape for NUL, in a double-quoted scalar
        ("safe\\u202Etxt.exe", "'safe\\u202etxt.exe'"),  # a right-to-left override
        ("dir/name", "'dir/name'"),
        (".hidden", "'.hidden'"),
    ],
)
def test_bad_task_names_are_refused_in_one_line_naming_the_file(tmp_path: Path, name: str, shown: str) -> None:
    path = write(tmp_path / "bad.yaml", f'task: "{name}"\ninclude: {TEMPLATE}\n')
    registry = TaskRegistry.discover([tmp_path])
    assert all(name_problem("task", t) is None for t in registry.tasks)
    (problem,) = registry.broken
    assert len(problem.splitlines()) == 1 and str(path) in problem and f"task name {shown} is not allowed" in problem
    assert "\x00" not in problem and "\u202e" not in problem


@pytest.mark.parametrize("field", ["tag: [ok, '../up']", 'group: "a\\u202Eb"'])
def test_bad_tag_and_group_names_are_refused(tmp_path: Path, field: str) -> None:
    write(tmp_path / "t.yaml", f"task: fine_name\n{field}\ninclude: {TEMPLATE}\n")
    registry = TaskRegistry.discover([tmp_path])
    assert "fine_name" not in registry.tasks and "not allowed" in registry.broken[0]
    with pytest.raises(TaskConfigError, match=r"task 'fine_name' cannot be loaded: .*t\.yaml: tag name"):
        registry.get("fine_name")


def test_bad_group_file_name_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "g.yaml", "group: ../g\ntask: [shapes_color]\n")
    registry = TaskRegistry.discover([tmp_path])
    assert "../g" not in registry.groups and "group name '../g' is not allowed" in registry.broken[0]


def test_good_names_pass() -> None:
    for name in ("shapes_color", "MMMU-val", "v1.2_x", "_private", "9lives"):
        assert name_problem("task", name) is None
    assert name_problem("task", "x" * 129) is not None and name_problem("task", "") is not None


def test_eval_of_a_path_like_task_name_writes_nothing_outside(tmp_path: Path) -> None:
    work = tmp_path / "a" / "b"
    write(work / "tasks" / "up.yaml", f'task: "../../x"\ninclude: {TEMPLATE}\n')
    done = run_harness(
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "../../x",
        "--include-path",
        "tasks",
        "--output",
        "out",
        "--no-cache",
        cwd=work,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "task name '../../x' is not allowed" in line and "up.yaml" in line
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob("*.jsonl"))


def test_unknown_task_error_names_the_file_that_defines_it(tmp_path: Path) -> None:
    write(tmp_path / "a_first.yaml", "task: [unrelated\n")  # broken, and found first
    write(tmp_path / "z_wanted.yaml", f"task: wanted\ninclude: {TEMPLATE}\ndoc_to_text: [unclosed\n")
    registry = TaskRegistry.discover([tmp_path])
    with pytest.raises(TaskConfigError) as refused:
        registry.expand(["wanted"])
    message = str(refused.value)
    assert "z_wanted.yaml" in message and "a_first.yaml" not in message and "malformed YAML" in message
    with pytest.raises(TaskConfigError) as other:
        registry.get("nothing_defines_this")
    assert "2 other task file(s) could not be read" in str(other.value) and "a_first" not in str(other.value)
