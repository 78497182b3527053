from pathlib import Path

import pytest

from harness.errors import TaskConfigError
from harness.taskspec.registry import TaskRegistry
from tests.conftest import write


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    write(tmp_path / "_template_yaml", "doc_to_text: q\nmetric_list:\n  - metric: exact_match\n")
    write(tmp_path / "alpha.yaml", "task: alpha_one\ntag: letters\ninclude: _template_yaml\n")
    write(tmp_path / "beta.yaml", "task: beta_two\ntag: [letters, second]\ninclude: _template_yaml\n")
    write(
        tmp_path / "group.yaml",
        "group: greek\ntask: [alpha_one, beta_two]\naggregate_metric_list:\n"
        "  - metric: exact_match\n    weight_by_size: true\n",
    )
    write(tmp_path / "broken.yaml", "task: [oops\n")
    return tmp_path


def test_discovers_tasks_groups_tags_and_bundled_tasks(tasks_dir: Path) -> None:
    reg = TaskRegistry.discover([tasks_dir])
    assert {"alpha_one", "beta_two", "shapes_color", "shapes_kind"} <= set(reg.tasks)
    assert reg.groups["greek"].tasks == ("alpha_one", "beta_two")
    assert reg.tags["letters"] == ["alpha_one", "beta_two"]
    assert reg.expand(["greek", "alpha_one", "second"]) == ["alpha_one", "beta_two"]
    assert reg.get("alpha_one").doc_to_text == "q"
    assert len(reg.broken) == 1 and "broken.yaml:2: malformed YAML" in reg.broken[0]


def test_unknown_name_suggests_close_matches(tasks_dir: Path) -> None:
    reg = TaskRegistry.discover([tasks_dir])
    with pytest.raises(TaskConfigError, match="did you mean alpha_one"):
        reg.expand(["alpha_onee"])
    with pytest.raises(TaskConfigError, match="`harness tasks` lists them"):
        reg.get("zzzzzzzz")


def test_missing_include_path_fails(tmp_path: Path) -> None:
    with pytest.raises(TaskConfigError, match="not a folder"):
        TaskRegistry.discover([tmp_path / "nope"])


def test_group_aggregate_metric_list_is_typed(tasks_dir: Path) -> None:
    (spec,) = TaskRegistry.discover([tasks_dir]).groups["greek"].aggregate_metric_list
    assert (spec.metric, spec.filter_list, spec.weight_by_size) == ("exact_match", ("none",), True)


@pytest.mark.parametrize(
    "entry, message",
    [
        ("  - weight_by_size: true\n", "each aggregate_metric_list entry needs a 'metric' name"),
        ("  - metric: exact_match\n    weight_by_size: maybe\n", "weight_by_size must be true or false, got 'maybe'"),
        ("  - metric: exact_match\n    filter_list: [1]\n", "filter_list must be a filter name or a list of them"),
    ],
)
def test_a_bad_aggregate_metric_list_names_the_group_file(tasks_dir: Path, entry: str, message: str) -> None:
    write(tasks_dir / "group.yaml", "group: greek\ntask: [alpha_one, beta_two]\naggregate_metric_list:\n" + entry)
    reg = TaskRegistry.discover([tasks_dir])
    assert "greek" not in reg.groups and any("group.yaml" in b and message in b for b in reg.broken)
