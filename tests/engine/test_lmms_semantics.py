"""lmms-eval 0.7.3's task semantics, each checked against a hand-computed value: aggregation ``args`` and
isolated aggregation state, built-in metrics (``exact_match`` with its options, ``anls``), stripped answers,
``!function`` and built-in filters, ``model_specific_target_kwargs``, per-family default answer lengths and
``--lmms-model``, and the one-line error for task code that needs lmms-eval."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from harness.engine.filters import apply_pipeline, resolve_step
from harness.engine.lmms_args import aggregation_args
from harness.engine.lmms_models import check_lmms_model
from harness.engine.settings import RunFlags, resolve_settings
from harness.engine.task_scoring import TaskScorer
from harness.engine.tasks import open_task_code
from harness.errors import HarnessError, TaskConfigError
from harness.metrics.lmms_builtin import anls, exact_match
from harness.results.schema import SampleRecord
from harness.taskspec.config import FilterStep, TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config
from tests.conftest import write

BASE = """\
task: {name}
dataset_path: x/y
test_split: test
doc_to_text: "{{{{question}}}}"
"""


def _config(folder: Path, name: str, body: str, utils: str = "") -> TaskConfig:
    if utils:
        write(folder / "utils.py", utils)
    path = write(folder / f"{name}.yaml", BASE.format(name=name) + body)
    return TaskConfig.from_dict(load_yaml_config(path), path)


def _scored(scorer: TaskScorer, doc: dict[str, Any], response: str) -> SampleRecord:
    record = SampleRecord(task=scorer.config.task, doc_id=0, doc_hash="h", doc=doc, responses=[response])
    return scorer.score(record, doc)


def test_exact_match_options_as_lmms_eval_applies_them() -> None:
    assert exact_match(["Red"], ["red."]) == 0.0
    assert exact_match(["Red"], ["red."], ignore_case=True, ignore_punctuation=True) == 1.0
    assert exact_match(["the cat"], ["a cat"], regexes_to_ignore=["^the ", "^a "]) == 1.0
    assert exact_match(["7 cats"], ["cats"], ignore_numbers=True, regexes_to_ignore=[" "]) == 1.0
    # one reference against two predictions: the share that match
    assert exact_match(["a"], ["a", "b"]) == 0.5


def test_anls_hand_computed() -> None:
    # "hello" vs "hallo": distance 1, length 5 -> 0.8; the best of two references counts
    assert anls(["nothing alike", "Hello"], ["hallo"]) == pytest.approx(0.8)
    # "abc" vs "xyz": 1 - 3/3 = 0, and anything under the 0.5 threshold is 0
    assert anls(["abc"], ["xyz"]) == 0.0
    assert anls(["abcd"], ["abxy"]) == pytest.approx(0.5)
    assert anls(["abcd"], ["abxy"], thresh_hold=0.6) == 0.0


def test_builtin_metrics_without_process_results(tmp_path: Path) -> None:
    """gqa-style exact_match options, docvqa-style anls over a list of answers, and a stripped answer."""
    em = _config(
        tmp_path / "em",
        "em",
        """\
doc_to_target: answer
metric_list:
  - metric: exact_match
    ignore_case: true
    ignore_punctuation: true
""",
    )
    record = _scored(open_task_code(em, None).scorer, {"question": "q", "answer": "Red"}, " red.")
    assert record.metrics == {"exact_match,none": 1.0}
    listed = _config(tmp_path / "anls", "anls", "doc_to_target: answers\nmetric_list:\n  - metric: anls\n")
    record = _scored(open_task_code(listed, None).scorer, {"question": "q", "answers": ["Paris", "hello"]}, "hallo\n")
    assert record.metrics == {"anls,none": pytest.approx(0.8)}
    several = _config(tmp_path / "any", "any", "doc_to_target: answers\nmetric_list:\n  - metric: exact_match\n")
    assert _scored(open_task_code(several, None).scorer, {"question": "q", "answers": ["a", "b"]}, "b").metrics == {
        "exact_match,none": 1.0
    }
    # generate_until with doc_to_choice: the target index stands for its choice
    chosen = _config(
        tmp_path / "choice",
        "choice",
        """\
doc_to_target: "{{label}}"
doc_to_choice: ["cat", "dog"]
metric_list:
  - metric: exact_match
""",
    )
    assert _scored(open_task_code(chosen, None).scorer, {"question": "q", "label": 1}, "dog ").metrics == {
        "exact_match,none": 1.0
    }


def test_a_metric_no_code_computes_is_refused_in_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, "nope", "doc_to_target: answer\nmetric_list:\n  - metric: relaxed_overall\n")
    with pytest.raises(TaskConfigError, match="metric 'relaxed_overall' needs a process_results") as err:
        open_task_code(config, None)
    assert "\n" not in str(err.value)


def test_process_results_gets_stripped_answers(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "strip",
        """\
doc_to_target: answer
process_results: !function utils.echo
metric_list:
  - metric: seen
    aggregation: !function utils.first
""",
        "def echo(doc, results):\n    return {'seen': results[0]}\n\n\ndef first(items):\n    return items[0]\n",
    )
    record = _scored(open_task_code(config, None).scorer, {"question": "q", "answer": "a"}, "  42\n")
    assert record.metrics == {"seen,none": "42"}


OCR_UTILS = """\
SCORES = {"total": 0}


def process(doc, results):
    return {"acc": {"score": int(results[0] == doc["answer"])}}


def aggregate(results, args):
    for r in results:
        SCORES["total"] += r["score"]
    with open(f"{args.output_path}/written.txt", "w") as f:
        f.write(str(SCORES["total"]))
    return SCORES["total"]
"""


def test_aggregation_with_args_and_state_that_never_leaks(tmp_path: Path) -> None:
    """OCRBench's shape: an aggregation taking ``args`` that adds into a module-level dict. Two scorers (two
    models, or the same task again) each count only their own samples."""
    config = _config(
        tmp_path / "task",
        "ocr",
        """\
doc_to_target: answer
process_results: !function utils.process
metric_list:
  - metric: acc
    aggregation: !function utils.aggregate
""",
        OCR_UTILS,
    )
    docs = [{"question": "q", "answer": "a"}, {"question": "q", "answer": "b"}]
    for run in ("first", "second"):
        scorer = open_task_code(config, None).scorer
        records = [_scored(scorer, d, "a") for d in docs]
        out = tmp_path / run
        out.mkdir()
        results, _ = scorer.aggregate(records, aggregation_args(out, "m", ["ocr"]))
        assert results["acc,none"] == 1
        assert (out / "written.txt").read_text() == "1"
    # with no run folder the task's files go to a temporary folder, never the working directory
    scorer = open_task_code(config, None).scorer
    assert scorer.aggregate([_scored(scorer, docs[0], "a")])[0]["acc,none"] == 1


MC_UTILS = """\
import re


class LetterFilter:
    def __init__(self, regex_pattern):
        self.regex = re.compile(regex_pattern)

    def apply(self, resps, docs):
        out = []
        for r, doc in zip(resps, docs):
            found = [m.group(1) if m else doc["fallback"] for m in (self.regex.search(x) for x in r)]
            out.append(found[0])
        return out


def target(doc, kind):
    return "ABC"[doc["answer"]] if kind == "mcq" else doc["options"][doc["answer"]]
"""


def test_function_filter_class_and_model_specific_target_kwargs(tmp_path: Path) -> None:
    """ai2d's shape: a filter class from the task's utils.py built with the step's keys and applied with the
    doc; ``doc_to_target`` called with the model's ``model_specific_target_kwargs`` value."""
    config = _config(
        tmp_path,
        "mc",
        """\
doc_to_target: !function utils.target
model_specific_target_kwargs:
  default: mcq
  qwen_vl: qa
filter_list:
  - name: flexible
    filter:
      - function: !function utils.LetterFilter
        regex_pattern: "([A-Z])\\\\."
metric_list:
  - metric: exact_match
""",
        MC_UTILS,
    )
    doc = {"question": "q", "answer": 1, "options": ["x", "y", "z"], "fallback": "?"}
    assert _scored(open_task_code(config, None).scorer, doc, "B. y").metrics == {"exact_match,flexible": 1.0}
    assert _scored(open_task_code(config, None).scorer, doc, "none").filtered == {"flexible": "?"}
    assert open_task_code(config, "qwen_vl").prompts.target(doc) == "y"


def test_multi_choice_regex_as_lmms_eval_reads_it() -> None:
    step = resolve_step(
        FilterStep(
            "multi_choice_regex", {"regex_pattern": r"(\([A-D]\))", "ignore_case": True, "ignore_punctuation": True}
        ),
        "t",
    )
    doc = {"choices": ["red car", "Blue sky", "green"]}
    assert apply_pipeline([step], ["I pick (C)"], doc) == ["(C)"]
    assert apply_pipeline([step], ["It is the BLUE SKY!"], doc) == ["(B)"]
    assert apply_pipeline([step], ["answer: A"], doc) == ["(A)"]
    assert apply_pipeline([step], ["no idea"], doc) == ["[invalid]"]


def test_default_answer_length_per_family_and_lmms_model(tmp_path: Path) -> None:
    config = _config(tmp_path, "gen", "doc_to_target: answer\nmetric_list:\n  - metric: exact_match\n")

    def resolved(
        family: str | None, overrides: dict[str, Any], lmms_model: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The resolved answer length and stop strings, and the defaults applied."""
        settings = resolve_settings(config, family, RunFlags(overrides, lmms_model))
        kept = {k: v for k, v in settings.params.as_dict().items() if k in {"max_new_tokens", "until"}}
        return kept, settings.applied_defaults

    assert resolved("llava_hf", {}) == (
        {"max_new_tokens": 1024, "until": []},
        {"max_new_tokens": {"value": 1024, "from": "lmms-eval model llava_hf"}},
    )
    assert resolved("qwen2_vl", {})[0]["max_new_tokens"] == 128
    assert resolved("qwen2_vl", {"max_new_tokens": 9}) == ({"max_new_tokens": 9, "until": []}, {})
    assert resolved("blip-2", {}) == ({"max_new_tokens": 256, "until": []}, {})  # no lmms-eval class: 256
    # compatibility mode: qwen2_vl stops at the task's fewshot_delimiter, llava_hf ignores until, gemma3 drops \n\n
    assert resolved(None, {}, "qwen2_vl")[0] == {"max_new_tokens": 128, "until": ["\n\n"]}
    assert resolved(None, {}, "llava_hf")[0] == {"max_new_tokens": 1024, "until": []}
    assert resolved(None, {}, "gemma3")[0] == {"max_new_tokens": 128, "until": []}
    with pytest.raises(HarnessError, match="--lmms-model 'llava' is not one of"):
        check_lmms_model("llava")


def test_task_code_that_imports_lmms_eval_fails_in_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "lmms_eval", None)  # as if lmms-eval were not installed
    config = _config(
        tmp_path,
        "needs",
        """\
doc_to_target: answer
process_results: !function utils.process
metric_list:
  - metric: acc
""",
        "from lmms_eval.tasks._task_utils.file_utils import generate_submission_file\n\n\n"
        "def process(doc, results):\n    return {}\n",
    )
    with pytest.raises(
        TaskConfigError,
        match=r"imports lmms_eval, which is not installed: pip install "
        r"\"vlm-audit-harness\[lmms\]\"",
    ) as err:
        open_task_code(config, None)
    assert "\n" not in str(err.value)
