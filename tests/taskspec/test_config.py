import logging
from pathlib import Path

import pytest

from harness.errors import TaskConfigError
from harness.taskspec.config import TaskConfig

BASE = {"task": "t", "doc_to_text": "q", "metric_list": [{"metric": "exact_match"}]}


def test_unknown_keys_warn_and_do_not_crash(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = TaskConfig.from_dict({**BASE, "frobnicate": 1}, Path("t.yaml"))
    assert cfg.task == "t"
    assert "unknown task key 'frobnicate'" in caplog.text


def test_metadata_dict_and_list_forms() -> None:
    assert TaskConfig.from_dict({**BASE, "metadata": {"version": 2}}, Path("x")).version == 2
    listed = TaskConfig.from_dict({**BASE, "metadata": [{"version": 3}, {"note": "n"}]}, Path("x"))
    assert listed.metadata == {"version": 3, "note": "n"}
    with pytest.raises(TaskConfigError, match="metadata must be"):
        TaskConfig.from_dict({**BASE, "metadata": "v1"}, Path("x"))


@pytest.mark.parametrize("form", ["dict", "list"])
def test_harness_hooks_are_typed_from_either_metadata_form(form: str) -> None:
    hooks = {"harness_audit": "vista", "harness_report": "utils.report", "harness_turns": ["Why?", "{{ q }}"]}
    metadata = hooks if form == "dict" else [{k: v} for k, v in hooks.items()]
    cfg = TaskConfig.from_dict({**BASE, "metadata": metadata}, Path("x"))
    assert (cfg.harness_audit, cfg.harness_report, cfg.harness_turns) == ("vista", "utils.report", ("Why?", "{{ q }}"))
    plain = TaskConfig.from_dict({**BASE, "metadata": [{"version": 0.0}]}, Path("x"))
    assert (plain.harness_audit, plain.harness_report, plain.harness_turns) == (None, None, ())


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        ({"harness_audit": ["vista"]}, "harness_audit must be a protocol's audit tag, got \\['vista'\\]"),
        ({"harness_report": "report"}, "harness_report must be 'module.function'"),
        ({"harness_turns": "one string"}, "harness_turns must be a list"),
        ({"harness_turns": [{"text": "a"}]}, "harness_turns must be a list"),
    ],
)
def test_bad_harness_hooks_fail_when_the_task_loads(hooks: dict, message: str) -> None:
    with pytest.raises(TaskConfigError, match=message):
        TaskConfig.from_dict({**BASE, "metadata": [hooks]}, Path("x"))


def test_cluster_key_and_score_key_are_typed_as_lmms_eval_reads_them(caplog: pytest.LogCaptureFixture) -> None:
    """lmms-eval's clustered standard error reads both from the task config; no warning calls them unknown."""
    plain = TaskConfig.from_dict(BASE, Path("x"))
    assert (plain.cluster_key, plain.score_key) == (None, "score")
    cfg = TaskConfig.from_dict({**BASE, "cluster_key": "videoID", "score_key": "correct"}, Path("x"))
    assert (cfg.cluster_key, cfg.score_key) == ("videoID", "correct")
    assert "unknown task key" not in caplog.text


def test_specific_kwargs_model_block_replaces_default_block() -> None:
    cfg = TaskConfig.from_dict(
        {**BASE, "lmms_eval_specific_kwargs": {"default": {"pre": "a", "post": "b"}, "qwen2_vl": {"post": "q"}}},
        Path("x"),
    )
    assert cfg.specific_kwargs("qwen2_vl") == {"post": "q"}
    assert cfg.specific_kwargs("llava_hf") == {"pre": "a", "post": "b"}
    assert TaskConfig.from_dict(BASE, Path("x")).specific_kwargs("qwen2_vl") is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"output_type": "loglikelihood_rolling"}, "output_type 'loglikelihood_rolling' is not supported: lmms"),
        ({"repeats": 0}, "repeats must be a positive integer"),
        ({"cluster_key": ["videoID"]}, "cluster_key must be a field name, got \\['videoID'\\]"),
        ({"score_key": ""}, "score_key must be a field name"),
        ({"num_fewshot": -2}, "num_fewshot must be a whole number"),
        ({"metric_list": [{"aggregation": "mean"}]}, "needs a 'metric' key"),
        ({"task": ["a", "b"]}, "'task' must be a task name"),
    ],
)
def test_invalid_settings_fail_with_one_line(extra: dict, message: str) -> None:
    with pytest.raises(TaskConfigError, match=message):
        TaskConfig.from_dict({**BASE, **extra}, Path("x"))
