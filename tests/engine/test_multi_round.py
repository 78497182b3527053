"""generate_until_multi_round as lmms-eval's models run it: after the first answer, doc_to_text is called
with the answers so far and says what to ask next, until its terminal signal; process_results gets the
tuple of round results it returned. Every round is a cached request of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engine import multi_round
from harness.engine.requests import make_request
from harness.engine.runner import EvalOptions, evaluate
from harness.errors import TaskConfigError, UnsupportedRequestError
from harness.models import GenerationParams, create_backend
from harness.models.messages import ChatMessage
from harness.results.sample_error import SampleError
from harness.taskspec.config import TaskConfig
from tests.conftest import write

TASK = """\
task: {name}
dataset_path: vlm-audit/shapes
test_split: test
output_type: generate_until_multi_round
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.{doc_to_text}
doc_to_target: color
process_results: !function utils.process_results
generation_kwargs:
  max_new_tokens: 5
metric_list:
  - metric: rounds
"""
UTILS = """
def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                previous_round_info=None):
    if round_idx is None:  # the first round, as for any task
        return "What color is the shape?"
    if round_idx == 3:
        return None, None, True, previous_output, None
    info = (previous_round_info or 0) + 1
    return [], f"Round {round_idx}: you said {previous_output[-1]!r}. Again?", False, previous_output, info


def bad_shape(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None, previous_round_info=None):
    return "What color?" if round_idx is None else "not a tuple"


def endless(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None, previous_round_info=None):
    return "What color?" if round_idx is None else ([], "More?", False, previous_output, None)


def process_results(doc, results):
    (rounds,) = results
    assert isinstance(rounds, tuple)
    return {"rounds": len(rounds)}
"""


def _tasks(folder: Path) -> Path:
    for name, fn in (("rounds", "doc_to_text"), ("rounds_bad", "bad_shape"), ("rounds_endless", "endless")):
        write(folder / f"{name}.yaml", TASK.format(name=name, doc_to_text=fn))
    write(folder / "utils.py", UTILS)
    return folder


def test_rounds_follow_doc_to_text_and_are_cached(data_dir: Path, tmp_path: Path) -> None:
    backend = create_backend("tiny:llava")
    opts = EvalOptions(
        tasks=["rounds"],
        include_paths=[str(_tasks(tmp_path / "tasks"))],
        limit=2,
        data_dir=data_dir,
        store_path=tmp_path / "store.sqlite",
        show_progress=False,
    )
    run, samples, _ = evaluate(backend, "tiny:llava", opts)
    params = GenerationParams.from_kwargs({"max_new_tokens": 5})
    for record in samples["rounds"]:
        assert record.error is None and len(record.responses) == 3 and len(record.turns) == 2
        assert record.metrics == {"rounds,none": 3}
        answers = record.responses
        for round_idx, (turn, previous, answer) in enumerate(
            zip(record.turns, answers[:-1], answers[1:], strict=True), start=1
        ):
            assert turn.prompt == f"Round {round_idx}: you said {previous!r}. Again?"
            messages = [ChatMessage.of_text("user", turn.prompt)]
            request = make_request(messages, params, 1, 0)  # each round asked on its own, with no image
            assert turn.request_keys == [request.key] and turn.responses == [answer]
            assert backend.generate([request]) == [[answer]]
    assert run.provenance.requests.follow_up_generated == 4 and run.results["rounds"]["rounds,none"] == 3
    again, cached, _ = evaluate(backend, "tiny:llava", opts)
    assert again.provenance.requests.follow_up_generated == 0 and again.provenance.requests.follow_up_cached == 4
    assert [r.responses for r in cached["rounds"]] == [r.responses for r in samples["rounds"]]


def test_a_bad_round_is_that_docs_error(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multi_round, "MAX_ROUNDS", 3)
    backend = create_backend("tiny:llava")
    opts = EvalOptions(
        tasks=["rounds_bad", "rounds_endless"],
        include_paths=[str(_tasks(tmp_path / "tasks"))],
        limit=1,
        use_cache=False,
        show_progress=False,
        data_dir=data_dir,
    )
    _, samples, _ = evaluate(backend, "tiny:llava", opts)
    (bad,), (endless,) = samples["rounds_bad"], samples["rounds_endless"]
    assert (
        str(bad.error)
        == (
            "bad input: doc_to_text: round 1 returned str, not (visuals, context, terminal_signal, "
            "round_results, round_info)"
        )
        and bad.metrics == {}
    )
    assert (
        endless.error == SampleError("bad input", "doc_to_text gave no terminal signal in 3 rounds")
        and len(endless.turns) == 3
    )
    twice = EvalOptions(
        tasks=["rounds"],
        include_paths=opts.include_paths,
        limit=1,
        data_dir=data_dir,
        repeats=2,
        use_cache=False,
        show_progress=False,
    )
    with pytest.raises(UnsupportedRequestError, match=r"answers once per doc .* got repeats 2"):
        evaluate(backend, "tiny:llava", twice)


def test_multi_round_config_errors_are_one_line(tmp_path: Path) -> None:
    raw = {"task": "r", "output_type": "generate_until_multi_round", "doc_to_text": "question"}
    with pytest.raises(TaskConfigError, match="needs doc_to_text as a !function"):
        TaskConfig.from_dict(raw, tmp_path / "r.yaml")
    folder = _tasks(tmp_path / "tasks")
    from harness.taskspec.yaml_loader import load_yaml_config

    loaded = load_yaml_config(folder / "rounds.yaml")
    with pytest.raises(TaskConfigError, match="filter_list does not apply"):
        TaskConfig.from_dict(
            {**loaded, "filter_list": [{"name": "x", "filter": [{"function": "take_first"}]}]}, folder / "rounds.yaml"
        )
