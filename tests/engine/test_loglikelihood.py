"""multiple_choice and loglikelihood tasks: teacher-forced choice scores (one prefix pass per prompt),
lmms-eval's acc / acc_norm, perplexity, the response store, and the one-line refusals."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from harness.engine.runner import EvalOptions, evaluate
from harness.engine.tasks import open_task
from harness.errors import TaskConfigError
from harness.metrics.choice import choice_metrics, gold_indices
from harness.models.hf import HFBackend
from harness.models.loglikelihood import score_continuations
from harness.models.messages import ChatMessage, from_lmms
from harness.taskspec.config import TaskConfig
from harness.tiny_models import tiny_model_path
from tests.conftest import ROOT, write

ARC_YAML = """\
task: arc_tiny
dataset_path: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices.label.index(answerKey)}}}}"
doc_to_choice: "{{{{choices.text}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""
ARC_ROWS = {
    "question": ["What color is the sky?", "Which one is a shape?", "How many legs has a dog?"],
    "choices": [
        {"text": ["blue", "green grass", "red"], "label": ["A", "B", "C"]},
        {"text": ["circle", "dog"], "label": ["A", "B"]},
        {"text": ["two", "four", "three", "one"], "label": ["1", "2", "3", "4"]},
    ],
    "answerKey": ["A", "A", "2"],
}


def arc_task(folder: Path) -> Path:
    """An ARC-Easy-format task and its three-row dataset, written under ``folder``."""
    import datasets

    datasets.Dataset.from_dict(ARC_ROWS).to_parquet(str(folder / "arc" / "data" / "test-00000-of-00001.parquet"))
    write(folder / "tasks" / "arc_tiny.yaml", ARC_YAML.format(data=folder / "arc"))
    return folder / "tasks"


@pytest.fixture(scope="module")
def text_backend() -> HFBackend:
    return HFBackend(str(tiny_model_path("qwen3")), {"device": "cpu"})


def _reference(backend: HFBackend, messages: list, continuation: str) -> tuple[float, int]:
    """Summed log-probability of the continuation from one plain full forward pass (no cache, no batch)."""
    prompt_text, images = backend._render(messages)
    full_text, _ = backend._render(
        [*messages, ChatMessage.of_text("assistant", continuation)],
        add_generation_prompt=False,
    )
    n_prompt = backend.encode([prompt_text], [images])["input_ids"].shape[1]
    encoded = backend.encode([full_text], [images])
    ids = encoded["input_ids"]
    with torch.no_grad():
        logprobs = torch.log_softmax(backend.model(**encoded).logits.float(), -1)[0]
    picked = logprobs[n_prompt - 1 : -1].gather(-1, ids[0, n_prompt:, None])
    return float(picked.sum()), ids.shape[1] - n_prompt


@pytest.mark.parametrize("arch", ["qwen3", "qwen2_vl"])
def test_prefix_reuse_scores_equal_one_full_pass_per_choice(text_backend: HFBackend, arch: str) -> None:
    """A text prompt: the prefix is shared (qwen3), or each choice runs whole (Qwen2-VL's multimodal rotary
    positions take no cached continuation pass, even without an image)."""
    backend = text_backend if arch == "qwen3" else HFBackend(str(tiny_model_path(arch)), {"device": "cpu"})
    messages = [ChatMessage.of_text("user", "What color is the sky? Answer:")]
    choices = [" blue", " green grass", " a"]
    scores = score_continuations(backend, messages, choices)
    for choice, score in zip(choices, scores, strict=True):
        ll, tokens = _reference(backend, messages, choice)
        assert score.tokens == tokens and score.continuation == choice
        assert score.loglikelihood == pytest.approx(ll, abs=1e-4)
        assert score.mean_loss == pytest.approx(-ll / tokens, abs=1e-5)


def test_choice_metrics_follow_lmms_eval() -> None:
    # losses 2.0, 1.5, 3.0 -> acc picks choice 1; per character 2/1, 1.5/6, 3/2 -> acc_norm picks 1 too
    assert choice_metrics([2.0, 1.5, 3.0], [False, True, False], ["a", "bbbbbb", "cc"], 1) == {
        "acc": 1.0,
        "acc_norm": 1.0,
        "exact_match": 1.0,
    }
    # losses 1.0, 1.5: acc picks 0; per character 1/1 = 1.0 vs 1.5/6 = 0.25: acc_norm picks 1
    assert choice_metrics([1.0, 1.5], [True, False], ["a", "bbbbbb"], "a") == {
        "acc": 1.0,
        "acc_norm": 0.0,
        "exact_match": 1.0,
    }
    assert gold_indices(5, ["a", "b"]) == [-100] and gold_indices("z", ["a"]) == [-100]
    assert gold_indices([0, 3], ["a", "b"]) == [0, -100]
    assert choice_metrics([1.0, 0.5], [False, False], ["a", "b"], [0, 1])["acc"] == 1.0


def test_arc_format_task_runs_and_is_cached(tmp_path: Path, text_backend: HFBackend) -> None:
    tasks = arc_task(tmp_path)
    opts = EvalOptions(
        tasks=["arc_tiny"], include_paths=[str(tasks)], store_path=tmp_path / "store.sqlite", show_progress=False
    )
    run, samples, _ = evaluate(text_backend, "tiny:qwen3", opts)
    records = samples["arc_tiny"]
    assert [r.target for r in records] == [0, 0, 1]
    assert [len(r.choices) for r in records] == [3, 2, 4]
    messages = records[0].prompt
    for record in records:
        row = ARC_ROWS["choices"][record.doc_id]["text"]
        assert [c.continuation for c in record.choices] == [f" {t}" for t in row]
        losses = [c.mean_loss for c in record.choices]
        ll, _ = _reference(text_backend, from_lmms(record.prompt), record.choices[0].continuation)
        assert record.choices[0].loglikelihood == pytest.approx(ll, abs=1e-4)
        best = min(range(len(losses)), key=losses.__getitem__)
        best_norm = min(range(len(losses)), key=lambda i: losses[i] / len(row[i]))
        assert record.metrics == {
            "acc,none": float(best == record.target),
            "acc_norm,none": float(best_norm == record.target),
        }
    assert messages[0]["content"][-1]["text"] == "Question: What color is the sky?\nAnswer:"
    assert run.results["arc_tiny"]["acc,none"] == pytest.approx(sum(r.metrics["acc,none"] for r in records) / 3)
    assert run.provenance.requests.scored == 3
    again, cached, _ = evaluate(text_backend, "tiny:qwen3", opts)
    assert again.provenance.requests.scored == 0
    assert [r.choices for r in cached["arc_tiny"]] == [r.choices for r in records]


SHAPES_MC = """\
task: shapes_color_mc
dataset_path: vlm-audit/shapes
test_split: test
output_type: multiple_choice
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is the shape? Answer:"
doc_to_target: color
doc_to_choice: ["red", "green", "blue", "yellow"]
metric_list:
  - metric: acc
  - metric: acc_norm
"""


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_image_multiple_choice_scores_equal_one_full_pass(tmp_path: Path, data_dir: Path, arch: str) -> None:
    """The image goes with the shared prefix (LLaVA) or with every choice (Qwen2-VL's image-shaped positions);
    either way each choice's score is the plain full-pass one."""
    write(tmp_path / "shapes_mc.yaml", SHAPES_MC)
    write(tmp_path / "utils.py", (ROOT / "tasks" / "shapes" / "utils.py").read_text())
    backend = HFBackend(str(tiny_model_path(arch)), {"device": "cpu"})
    _, samples, _ = evaluate(
        backend,
        f"tiny:{arch}",
        EvalOptions(
            tasks=["shapes_color_mc"],
            include_paths=[str(tmp_path)],
            data_dir=data_dir,
            limit=2,
            use_cache=False,
            show_progress=False,
        ),
    )
    opened = open_task("shapes_color_mc", backend.model_family, data_dir, [tmp_path])  # the prompts, images decoded
    for record in samples["shapes_color_mc"]:
        assert record.error is None and isinstance(record.target, str)
        prompt = opened.prompts.build_messages(opened.docs[record.doc_id])
        for choice in record.choices:
            ll, tokens = _reference(backend, prompt, choice.continuation)
            assert choice.tokens == tokens and choice.loglikelihood == pytest.approx(ll, abs=1e-4)
        losses = [c.mean_loss for c in record.choices]
        gold = ["red", "green", "blue", "yellow"].index(record.target)
        assert record.metrics["acc,none"] == float(min(range(4), key=losses.__getitem__) == gold)


TARGET_YAML = """\
task: arc_target
dataset_path: {data}
test_split: test
output_type: loglikelihood
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices.text[0]}}}}"
metric_list:
  - metric: perplexity
    higher_is_better: false
  - metric: acc
"""


def test_loglikelihood_task_scores_its_target(tmp_path: Path, text_backend: HFBackend) -> None:
    """output_type loglikelihood: the target as it is (no delimiter) scored after the prompt; per sample
    perplexity holds the summed log-probability and acc whether greedy decoding gives it; the task's
    perplexity is exp(-mean) of those (by hand below). A process_results gets [(mean loss, is_greedy)]."""
    tasks = arc_task(tmp_path)
    write(tasks / "arc_target.yaml", TARGET_YAML.format(data=tmp_path / "arc"))
    run, samples, _ = evaluate(
        text_backend,
        "tiny:qwen3",
        EvalOptions(tasks=["arc_target"], include_paths=[str(tasks)], use_cache=False, show_progress=False),
    )
    records = samples["arc_target"]
    lls = []
    for record in records:
        (choice,) = record.choices
        assert choice.continuation == ARC_ROWS["choices"][record.doc_id]["text"][0]
        ll, tokens = _reference(text_backend, from_lmms(record.prompt), choice.continuation)
        assert choice.loglikelihood == pytest.approx(ll, abs=1e-4) and choice.tokens == tokens
        assert record.metrics == {"perplexity,none": choice.loglikelihood, "acc,none": float(choice.is_greedy)}
        lls.append(choice.loglikelihood)
    assert run.results["arc_target"]["perplexity,none"] == pytest.approx(math.exp(-sum(lls) / 3))
    write(
        tasks / "utils.py",
        "def pr(doc, results):\n    (loss, greedy), = results\n"
        "    return {'perplexity': -loss, 'acc': float(greedy)}\n",
    )
    text = (tasks / "arc_target.yaml").read_text() + "process_results: !function utils.pr\n"
    write(tasks / "arc_target.yaml", text)
    _, custom, _ = evaluate(
        text_backend,
        "tiny:qwen3",
        EvalOptions(tasks=["arc_target"], include_paths=[str(tasks)], use_cache=False, show_progress=False),
    )
    for record in custom["arc_target"]:
        assert record.metrics["perplexity,none"] == pytest.approx(-record.choices[0].mean_loss)


def test_multiple_choice_config_errors_are_one_line(tmp_path: Path) -> None:
    base = {"task": "t", "output_type": "multiple_choice", "doc_to_text": "q"}
    with pytest.raises(TaskConfigError, match="needs doc_to_choice"):
        TaskConfig.from_dict(base, tmp_path / "t.yaml")
    with pytest.raises(TaskConfigError, match="target_delimiter must be a string"):
        TaskConfig.from_dict({**base, "doc_to_choice": "c", "target_delimiter": 3}, tmp_path / "t.yaml")
    with pytest.raises(TaskConfigError, match="tool-using agent loop"):
        TaskConfig.from_dict({**base, "output_type": "generate_until_agentic"}, tmp_path / "t.yaml")
    with pytest.raises(TaskConfigError, match=r"loglikelihood needs doc_to_target \(the scored text\)$"):
        TaskConfig.from_dict({**base, "output_type": "loglikelihood"}, tmp_path / "t.yaml")
    with pytest.raises(TaskConfigError, match=r"lmms-eval 0\.7\.3 has no such output type"):
        TaskConfig.from_dict({**base, "output_type": "loglikelihood_rolling"}, tmp_path / "t.yaml")
    # perplexity aggregates as exp(-mean) unless the entry names another aggregation
    specs = TaskConfig.from_dict(
        {
            **base,
            "output_type": "loglikelihood",
            "doc_to_target": "a",
            "metric_list": [{"metric": "perplexity"}, {"metric": "acc"}],
        },
        tmp_path / "t.yaml",
    ).metric_list
    assert [m.aggregation for m in specs] == ["perplexity", "mean"]


def test_bad_choices_are_that_docs_error(tmp_path: Path, text_backend: HFBackend) -> None:
    tasks = arc_task(tmp_path)
    text = (tasks / "arc_tiny.yaml").read_text().replace('"{{choices.text}}"', '"{{question}}"')
    write(tasks / "arc_tiny.yaml", text)
    _, samples, _ = evaluate(
        text_backend,
        "tiny:qwen3",
        EvalOptions(tasks=["arc_tiny"], include_paths=[str(tasks)], limit=1, use_cache=False, show_progress=False),
    )
    (record,) = samples["arc_tiny"]
    assert record.error is not None and str(record.error).startswith("bad input: doc_to_choice:")


def test_openai_refuses_multiple_choice_in_one_line(tmp_path: Path) -> None:
    """Chat completions give log-probabilities of generated tokens only: refused before any request is sent."""
    from harness.errors import UnsupportedRequestError
    from harness.models.openai_api import OpenAIBackend

    backend = OpenAIBackend("tiny", {"base_url": "http://127.0.0.1:9/v1", "max_retries": "0"})
    opts = EvalOptions(
        tasks=["arc_tiny"], include_paths=[str(arc_task(tmp_path))], use_cache=False, show_progress=False
    )
    with pytest.raises(UnsupportedRequestError, match=r"^openai: multiple_choice tasks need log-probabilities") as info:
        evaluate(backend, "openai:tiny", opts)
    assert "\n" not in str(info.value)


def test_harness_score_rescores_saved_choices(tmp_path: Path, text_backend: HFBackend) -> None:
    """A multiple_choice run folder re-scores from its saved choice scores alone (no model)."""
    from harness.engine.rescore import score_run

    tasks = arc_task(tmp_path)
    run, _, run_dir = evaluate(
        text_backend,
        "tiny:qwen3",
        EvalOptions(
            tasks=["arc_tiny"],
            include_paths=[str(tasks)],
            use_cache=False,
            show_progress=False,
            output=tmp_path / "out",
        ),
    )
    assert run_dir is not None
    rescored, samples = score_run(run_dir, output=tmp_path / "rescored", include_paths=[tasks])
    assert rescored.results["arc_tiny"] == run.results["arc_tiny"]
    assert all(len(r.choices) == len(ARC_ROWS["choices"][r.doc_id]["text"]) for r in samples["arc_tiny"])
