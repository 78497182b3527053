import pytest

from harness.engine.filters import apply_pipeline, check_filters
from harness.errors import TaskConfigError
from harness.taskspec.config import FilterPipeline, FilterStep


def test_filters_compose_in_order() -> None:
    regex = FilterStep("regex", {"regex_pattern": r"answer: (\w+)"})
    steps = (regex, FilterStep("lowercase"), FilterStep("take_first"))
    assert apply_pipeline(steps, ["... answer: RED", "answer: blue"]) == ["red"]
    assert apply_pipeline((FilterStep("regex", {"regex_pattern": r"(\d+)"}),), ["none"]) == ["[invalid]"]
    assert apply_pipeline((FilterStep("majority_vote"),), ["a", "b", "b"]) == ["b"]
    assert apply_pipeline((FilterStep("take_first_k", {"k": 2}),), ["a", "b", "c"]) == ["a", "b"]
    assert apply_pipeline((), ["a", "b"]) == ["a", "b"]


def test_unknown_filter_is_rejected() -> None:
    with pytest.raises(TaskConfigError, match="filter 'magic' is not supported"):
        check_filters((FilterPipeline("x", (FilterStep("magic"),)),), "t.yaml")
