import pytest

from harness.engine.filters import apply_pipeline, check_filters, resolve_step
from harness.errors import TaskConfigError
from harness.taskspec.config import FilterPipeline, FilterStep


def _run(steps: tuple[FilterStep, ...], responses: list[str]) -> list:
    return apply_pipeline([resolve_step(s, "t.yaml") for s in steps], responses, {})


def test_filters_compose_in_order() -> None:
    regex = FilterStep("regex", {"regex_pattern": r"answer: (\w+)"})
    steps = (regex, FilterStep("lowercase"), FilterStep("take_first"))
    assert _run(steps, ["... answer: RED", "answer: blue"]) == ["red"]
    assert _run((FilterStep("regex", {"regex_pattern": r"(\d+)"}),), ["none"]) == ["[invalid]"]
    assert _run((FilterStep("majority_vote"),), ["a", "b", "b"]) == ["b"]
    assert _run((FilterStep("take_first_k", {"k": 2}),), ["a", "b", "c"]) == ["a", "b"]
    assert _run((FilterStep("uppercase"),), ["a"]) == ["A"]
    assert _run((FilterStep("map", {"mapping_dict": {"yes": 1}, "default_value": 0}),), ["yes", "no"]) == [1, 0]
    assert _run((FilterStep("remove_whitespace"),), ["  a"]) == [" a"]  # lmms-eval removes one leading space
    assert _run((), ["a", "b"]) == ["a", "b"]


def test_unknown_filter_is_rejected() -> None:
    with pytest.raises(TaskConfigError, match="filter 'magic' is not supported"):
        check_filters((FilterPipeline("x", (FilterStep("magic"),)),), "t.yaml")
