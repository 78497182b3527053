import re
from pathlib import Path

import pytest

from harness.errors import TaskConfigError
from harness.taskspec.yaml_loader import FunctionRef, load_yaml_config, read_yaml
from tests.conftest import write


def test_include_chain_first_listed_include_wins_and_including_file_wins_over_all(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "x: a\ny: a\nz: a\n")
    write(tmp_path / "sub" / "b.yaml", "x: b\ny: b\nw: b\n")
    main = write(tmp_path / "main.yaml", "include: [a.yaml, sub/b.yaml]\nx: main\n")
    assert load_yaml_config(main) == {"x": "main", "y": "a", "z": "a", "w": "b"}


def test_nested_include_is_relative_to_the_including_file(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "base.yaml", "k: base\n")
    write(tmp_path / "sub" / "mid.yaml", "include: base.yaml\nm: mid\n")
    top = write(tmp_path / "top.yaml", "include: sub/mid.yaml\n")
    assert load_yaml_config(top) == {"k": "base", "m": "mid"}


def test_include_cycle_and_missing_include_fail_clearly(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "include: b.yaml\n")
    write(tmp_path / "b.yaml", "include: a.yaml\n")
    with pytest.raises(TaskConfigError, match="include cycle"):
        load_yaml_config(tmp_path / "a.yaml")
    write(tmp_path / "c.yaml", "include: nope.yaml\n")
    with pytest.raises(TaskConfigError, match=re.escape("include 'nope.yaml' not found")):
        load_yaml_config(tmp_path / "c.yaml")


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "task: x\nmetric_list:\n  - metric: [unclosed\n")
    with pytest.raises(TaskConfigError) as err:
        read_yaml(bad)
    assert f"{bad}:4" in str(err.value) or f"{bad}:3" in str(err.value)
    assert "\n" not in str(err.value)


def test_function_resolves_beside_yaml_then_dotted_import(tmp_path: Path) -> None:
    write(tmp_path / "utils.py", "def f(doc):\n    return doc * 2\n")
    cfg = read_yaml(write(tmp_path / "t.yaml", "a: !function utils.f\nb: !function os.path.join\n"))
    assert isinstance(cfg["a"], FunctionRef)
    assert cfg["a"].resolve()(21) == 42
    import os.path

    assert cfg["b"].resolve() is os.path.join


def test_missing_function_fails_with_its_name(tmp_path: Path) -> None:
    write(tmp_path / "utils.py", "def f(doc):\n    return doc\n")
    cfg = read_yaml(write(tmp_path / "t.yaml", "a: !function utils.nothere\nb: !function nomodule_xyz.f\n"))
    with pytest.raises(TaskConfigError, match="has no 'nothere'"):
        cfg["a"].resolve()
    with pytest.raises(TaskConfigError, match="cannot import 'nomodule_xyz'"):
        cfg["b"].resolve()


def test_two_tasks_utils_modules_do_not_clash(tmp_path: Path) -> None:
    write(tmp_path / "one" / "utils.py", "def f():\n    return 1\n")
    write(tmp_path / "two" / "utils.py", "def f():\n    return 2\n")
    one = FunctionRef("utils.f", tmp_path / "one").resolve()
    two = FunctionRef("utils.f", tmp_path / "two").resolve()
    assert (one(), two()) == (1, 2)
