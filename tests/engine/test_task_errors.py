"""Task code that fails on one doc, and fields that are null, are that sample's error: the run goes on,
results are written, and nothing is scored as a wrong answer; a target that is a literal warns once."""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.rescore import score_run
from harness.engine.runner import EvalOptions, evaluate, validate_tasks
from harness.errors import TaskConfigError
from harness.models import create_backend
from harness.models.base import Backend
from harness.results import read_run, read_samples
from harness.results.sample_error import SampleError
from tests.conftest import ROOT, write

TASK = """\
task: fragile
dataset_path: vlm-audit/shapes
test_split: test
process_docs: !function utils.{process_docs}
doc_to_visual: !function utils.doc_to_visual
doc_to_text: {text}
doc_to_target: {target}
process_results: !function utils.{process_results}
metric_list:
  - metric: exact_match
    aggregation: {aggregation}
generation_kwargs:
  max_new_tokens: 4
metadata:
  - version: 1.0
"""
UTILS = """\
from tasks_shapes_utils import doc_to_visual  # noqa: F401


def process_docs(docs):
    # doc 1 has no answer (a null field), as in datasets whose labels are partly missing
    return docs.map(lambda d, i: {"answer": None if i == 1 else d["color"]}, with_indices=True)


def drops_a_column(docs):
    return docs.remove_columns(["nonexistent"])


def doc_to_text(doc):
    if doc["id"] == "shape-0002":
        raise ValueError("this doc's question is garbled")
    return "What color?"


def doc_to_target(doc):
    return doc["no_such_column"] if doc["id"] == "shape-0000" else doc["color"]


def fails_on_one(doc, results):
    if doc["id"] == "shape-0003":
        raise ZeroDivisionError("scoring bug")
    return {"exact_match": float(results[0].strip() == doc["color"])}


def reads_missing_column(doc, results):
    return {"exact_match": float(results[0] == doc["label"])}


def not_a_dict(doc, results):
    return [1.0]


def pairs_only(values):
    assert len(values) % 2 == 0, "only supports pairwise evaluation"  # as MME's aggregation does
    return sum(values) / len(values)


def scores(doc, results):
    return {"exact_match": float(results[0].strip() == doc["color"])}


def doc_to_messages(doc):
    if doc["id"] == "shape-0001":
        return [{"role": "user", "content": [{"type": "video", "url": "clip.mp4"}]}]
    image = doc_to_visual(doc)[0]
    return [{"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": "What color?"}]}]


def report(records, out_dir, metadata):
    return {"n": len(records)}


def report_without_metadata(records, out_dir):
    return {}
"""


@cache
def qwen() -> Backend:
    return create_backend("tiny:qwen2_vl")


def task_dir(
    tmp_path: Path,
    text: str = '"What color?"',
    target: str = "color",
    process_results: str = "scores",
    aggregation: str = "mean",
    process_docs: str = "process_docs",
) -> Path:
    folder = tmp_path / "fragile"
    write(
        folder / "fragile.yaml",
        TASK.format(
            text=text,
            target=target,
            process_results=process_results,
            aggregation=aggregation,
            process_docs=process_docs,
        ),
    )
    write(folder / "utils.py", UTILS)
    write(folder / "tasks_shapes_utils.py", (ROOT / "tasks" / "shapes" / "utils.py").read_text())
    return folder


def run(tmp_path: Path, data_dir: Path, folder: Path, limit: int = 5) -> tuple:
    opts = EvalOptions(
        tasks=["fragile"],
        include_paths=[str(folder)],
        data_dir=data_dir,
        limit=limit,
        output=tmp_path / "out",
        store_path=tmp_path / "store.sqlite",
        show_progress=False,
    )
    return evaluate(qwen(), "tiny:qwen2_vl", opts)


def test_process_results_raising_on_one_doc_is_that_sample_s_error(tmp_path: Path, data_dir: Path) -> None:
    results, samples, run_dir = run(tmp_path, data_dir, task_dir(tmp_path, process_results="fails_on_one"))
    records = samples["fragile"]
    assert [r.error is None for r in records] == [True, True, True, False, True]
    assert records[3].error == SampleError("scoring failed", "process_results: ZeroDivisionError: scoring bug")
    assert records[3].responses and records[3].metrics == {}  # the answer is kept, not scored
    counts = results.counts["fragile"]
    assert (counts.samples, counts.scored, counts.errors) == (5, 4, 1)
    assert read_run(run_dir).results["fragile"]["exact_match,none"] is not None


@pytest.mark.parametrize(
    "process_results, message",
    [
        ("reads_missing_column", "process_results: KeyError: 'label'"),
        ("not_a_dict", "process_results: returned list, not a dict of metric values"),
    ],
)
def test_scoring_that_fails_on_every_doc_still_writes_results(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture, process_results: str, message: str
) -> None:
    folder = task_dir(tmp_path, process_results=process_results)
    argv = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "fragile",
        "--include-path",
        str(folder),
        "--data-dir",
        str(data_dir),
        "--limit",
        "2",
        "--output",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "store.sqlite"),
        "--verbosity",
        "quiet",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "every sample failed" in err
    (results_file,) = (tmp_path / "out").rglob("results.json")
    assert json.loads(results_file.read_text())["counts"]["fragile"]["errors"] == 2
    records = read_samples(results_file.parent, "fragile")
    assert all(r.error == SampleError("scoring failed", message) and r.responses for r in records)


def test_rescoring_retries_a_sample_whose_scoring_failed(tmp_path: Path, data_dir: Path) -> None:
    folder = task_dir(tmp_path, process_results="fails_on_one")
    _, _, run_dir = run(tmp_path, data_dir, folder)
    utils = folder / "utils.py"
    utils.write_text(utils.read_text().replace('raise ZeroDivisionError("scoring bug")', "pass"))
    (folder / "fragile.yaml").write_text((folder / "fragile.yaml").read_text().replace("fails_on_one", "scores"))
    rescored, samples = score_run(run_dir, include_paths=[folder])
    assert all(r.error is None for r in samples["fragile"]) and rescored.counts["fragile"].errors == 0


def test_doc_functions_raising_on_one_doc_are_per_sample_errors(tmp_path: Path, data_dir: Path) -> None:
    folder = task_dir(tmp_path, text="!function utils.doc_to_text", target="!function utils.doc_to_target")
    results, samples, _ = run(tmp_path, data_dir, folder)
    errors = [r.error for r in samples["fragile"]]
    assert errors[0] == SampleError("bad input", "doc_to_target: KeyError: 'no_such_column'")
    assert errors[2] == SampleError("bad input", "doc_to_text: ValueError: this doc's question is garbled")
    assert [e is None for e in errors] == [False, True, False, True, True]
    assert results.counts["fragile"].errors == 2


def test_doc_to_messages_in_lmms_eval_s_format_is_read_typed_and_keyed_as_doc_to_text_s(
    tmp_path: Path, data_dir: Path
) -> None:
    """The same prompt from doc_to_messages and from doc_to_visual + doc_to_text is one request; an item of
    a kind no backend takes is that doc's bad input, named by the step."""
    _, by_text, _ = run(tmp_path / "text", data_dir, task_dir(tmp_path / "text"), limit=3)
    folder = task_dir(tmp_path / "messages")
    yaml = folder / "fragile.yaml"
    yaml.write_text(
        yaml.read_text().replace(
            "doc_to_visual: !function utils.doc_to_visual", "doc_to_messages: !function utils.doc_to_messages"
        )
    )
    _, by_messages, _ = run(tmp_path / "messages", data_dir, folder, limit=3)
    text_records, message_records = by_text["fragile"], by_messages["fragile"]
    assert [r.request_key for r in message_records] == [text_records[0].request_key, None, text_records[2].request_key]
    assert message_records[0].prompt == text_records[0].prompt
    assert message_records[1].error == SampleError(
        "bad input",
        "doc_to_messages: ValueError: message 1 item 1: 'video' is not a text or image item (lmms-eval's format)",
    )


@pytest.mark.parametrize("target", ["answer", '"{{ answer }}"'])
def test_a_null_target_field_is_bad_input_not_the_string_none(tmp_path: Path, data_dir: Path, target: str) -> None:
    _, samples, _ = run(tmp_path, data_dir, task_dir(tmp_path, target=target), limit=3)
    records = samples["fragile"]
    assert records[1].error is not None and str(records[1].error).startswith("bad input: doc_to_target:")
    assert "null" in records[1].error.message and records[1].target is None and records[1].request_key is None
    assert [r.target for r in records if r.error is None] == [records[0].doc["color"], records[2].doc["color"]]


def test_a_literal_target_warns_once_naming_task_and_value(
    tmp_path: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        _, samples, _ = run(tmp_path, data_dir, task_dir(tmp_path, target='"colour"'), limit=3)
    warnings = [r.getMessage() for r in caplog.records if "doc_to_target" in r.getMessage()]
    assert warnings == [
        "task fragile: doc_to_target 'colour' names no column and is no template; every doc gets it as a literal target"
    ]
    assert [r.target for r in samples["fragile"]] == ["colour"] * 3


def test_an_aggregation_that_raises_gives_a_null_value_and_one_warning(
    tmp_path: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        folder = task_dir(tmp_path, aggregation="!function utils.pairs_only")
        _, samples, run_dir = run(tmp_path, data_dir, folder, limit=3)
    assert read_run(run_dir).results["fragile"]["exact_match,none"] is None
    assert all(r.error is None and "exact_match,none" in r.metrics for r in samples["fragile"])  # samples kept
    warnings = [r.getMessage() for r in caplog.records if "aggregation" in r.getMessage()]
    assert warnings == [
        "task fragile: aggregation of exact_match,none failed (AssertionError: only supports "
        "pairwise evaluation); its value is null"
    ]


def test_process_docs_that_raises_stops_with_one_line(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = task_dir(tmp_path, process_docs="drops_a_column")
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "fragile",
                "--include-path",
                str(folder),
                "--data-dir",
                str(data_dir),
                "--limit",
                "2",
                "--verbosity",
                "quiet",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: task fragile: process_docs failed (ValueError: ") and "nonexistent" in err


@pytest.mark.parametrize(
    "report, message",
    [
        ("utils.repotr", "!function utils.repotr: "),
        ("nowhere.report", "!function nowhere.report: no "),
        (
            "utils.report_without_metadata",
            "harness_report utils.report_without_metadata must take (records, out_dir, metadata)",
        ),
    ],
)
def test_a_wrong_report_name_fails_before_the_model_loads(
    tmp_path: Path, data_dir: Path, report: str, message: str, capsys: pytest.CaptureFixture
) -> None:
    folder = task_dir(tmp_path)
    yaml = folder / "fragile.yaml"
    yaml.write_text(yaml.read_text() + f"  - harness_report: {report}\n")
    opts = EvalOptions(tasks=["fragile"], include_paths=[str(folder)], data_dir=data_dir, show_progress=False)
    with pytest.raises(TaskConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_tasks(opts)
    # the command line stops there, in one line, with no model loaded and no run folder written
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:no_such_arch",
                "--tasks",
                "fragile",
                "--include-path",
                str(folder),
                "--data-dir",
                str(data_dir),
                "--output",
                str(tmp_path / "out"),
                "--verbosity",
                "quiet",
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err and not list((tmp_path / "out").rglob("results.json"))


def test_a_report_named_correctly_runs_after_scoring(tmp_path: Path, data_dir: Path) -> None:
    folder = task_dir(tmp_path)
    yaml = folder / "fragile.yaml"
    yaml.write_text(yaml.read_text() + "  - harness_report: utils.report\n")
    results, _, _ = run(tmp_path, data_dir, folder, limit=2)
    assert results.reports == {"fragile": {"n": 2}}
