"""Multi-turn tasks (metadata harness_turns): each follow-up turn continues each sample's conversation,
is cached under its own request key, reaches process_results, and survives re-scoring."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from harness.engine.rescore import score_run
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.store import ResponseStore
from harness.errors import TaskConfigError
from harness.models import create_backend
from harness.models.base import Backend
from harness.results import read_samples
from tests.conftest import ROOT, write

UTILS = """
def process_results(doc, results):
    turns = doc.get("harness_turns", [])
    return {"turns_seen": float(len(turns)),
            "chains": float(sum(len(t["responses"]) for t in turns)),
            "same_prompt": float(all(t["prompt"].endswith(doc["color"] + "?") for t in turns[:1]))}
"""

YAML = """
task: two_more_turns
include: {template}
doc_to_target: color
lmms_eval_specific_kwargs:
  default: {{question: "What color?", post_prompt: ""}}
process_results: !function utils.process_results
metric_list:
  - metric: turns_seen
    aggregation: mean
  - metric: chains
    aggregation: mean
  - metric: same_prompt
    aggregation: mean
generation_kwargs: {{max_new_tokens: 6, temperature: 0.8, do_sample: true}}
repeats: 2
metadata:
  version: 1
  harness_turns:
    - "Why do you say so? Is it {{{{ color }}}}?"
    - "Now list that as (subject, relation, object) triplets."
"""


@cache
def qwen() -> Backend:
    return create_backend("tiny:qwen2_vl")


def _task_dir(tmp_path: Path, harness_turns: str | None = None) -> Path:
    folder = tmp_path / "tasks"
    write(folder / "utils.py", UTILS)
    text = YAML.format(template=ROOT / "tasks" / "shapes" / "_default_template_yaml")
    if harness_turns is not None:
        text = text.split("  harness_turns:")[0] + f"  harness_turns: {harness_turns}\n"
    write(folder / "two_more_turns.yaml", text)
    return folder


def _opts(tmp_path: Path, data_dir: Path, **kw) -> EvalOptions:
    if "include_paths" not in kw:
        kw["include_paths"] = [str(_task_dir(tmp_path))]
    base = {
        "tasks": ["two_more_turns"],
        "data_dir": data_dir,
        "limit": 2,
        "output": tmp_path / "out",
        "store_path": tmp_path / "store.sqlite",
        "show_progress": False,
    }
    return EvalOptions(**{**base, **kw})


def test_follow_up_turns_continue_each_sample_and_are_cached(tmp_path: Path, data_dir: Path) -> None:
    run, samples, run_dir = evaluate(qwen(), "tiny:qwen2_vl", _opts(tmp_path, data_dir))
    records = samples["two_more_turns"]
    assert all(r.error is None and len(r.responses) == 2 for r in records)
    for record in records:
        assert [t.prompt for t in record.turns] == [
            f"Why do you say so? Is it {record.doc['color']}?",
            "Now list that as (subject, relation, object) triplets.",
        ]
        assert all(len(t.responses) == 2 and len(t.request_keys) == 2 and t.error is None for t in record.turns)
        # each turn is its own request, distinct from turn 1 and from the other turn
        keys = {record.request_key, *(k for t in record.turns for k in t.request_keys)}
        assert len(keys) == 5
    assert run.results["two_more_turns"]["turns_seen,none"] == 2.0
    assert run.results["two_more_turns"]["chains,none"] == 4.0
    assert run.results["two_more_turns"]["same_prompt,none"] == 1.0
    stats = run.provenance.requests
    assert stats.generated == 2 and stats.follow_up_generated == 8 and stats.follow_up_cached == 0
    # every turn is in the store under its own key: the rerun generates nothing and answers the same
    store = ResponseStore(tmp_path / "store.sqlite")
    assert store.get(
        qwen().fingerprint, records[0].turns[1].request_keys[1], _seed(records[0].turns[1].request_keys[1]), 1
    ) == [records[0].turns[1].responses[1]]
    store.close()
    again, samples2, _ = evaluate(qwen(), "tiny:qwen2_vl", _opts(tmp_path, data_dir))
    assert again.provenance.requests.generated == 0 and again.provenance.requests.follow_up_generated == 0
    assert [r.turns for r in samples2["two_more_turns"]] == [r.turns for r in records]
    # saved turns reach process_results again when a run is re-scored without the model
    rescored, _ = score_run(run_dir, include_paths=[tmp_path / "tasks"])
    assert rescored.results["two_more_turns"]["chains,none"] == 4.0
    assert read_samples(run_dir, "two_more_turns")[0].turns == records[0].turns


def _seed(key: str) -> int:
    from harness.hashing import derive_seed

    return derive_seed(0, key)


def test_single_turn_tasks_are_unchanged(tmp_path: Path, data_dir: Path) -> None:
    _, samples, _ = evaluate(
        qwen(), "tiny:qwen2_vl", _opts(tmp_path, data_dir, tasks=["shapes_color"], include_paths=[])
    )
    assert all(r.turns == [] for r in samples["shapes_color"])


def test_follow_up_generation_errors_are_recorded_on_the_turn(tmp_path: Path, data_dir: Path) -> None:
    class FailsLater(Backend):
        fingerprint = "fails-later"

        def info(self) -> dict:
            return {"model": "fails-later"}

        def generate(self, requests):
            return [RuntimeError("boom") if len(r.messages) > 1 else ["red"] * r.n for r in requests]

    run, samples, _ = evaluate(FailsLater(), "fails-later", _opts(tmp_path, data_dir, store_path=None, use_cache=False))
    record = samples["two_more_turns"][0]
    assert record.responses == ["red", "red"] and record.error is None
    assert len(record.turns) == 1 and "boom" in str(record.turns[0].error) and record.turns[0].responses == []
    assert run.results["two_more_turns"]["turns_seen,none"] == 1.0


def test_harness_turns_must_be_a_list(tmp_path: Path, data_dir: Path) -> None:
    folder = _task_dir(tmp_path, harness_turns='"just one string"')
    with pytest.raises(TaskConfigError, match="harness_turns must be a list"):
        evaluate(qwen(), "tiny:qwen2_vl", _opts(tmp_path, data_dir, include_paths=[str(folder)]))


def test_a_follow_up_template_error_is_that_doc_s_error(tmp_path: Path, data_dir: Path) -> None:
    folder = _task_dir(tmp_path, harness_turns='["Is it {{ no_such_column }}?"]')
    _, samples, _ = evaluate(qwen(), "tiny:qwen2_vl", _opts(tmp_path, data_dir, include_paths=[str(folder)]))
    assert all(r.error and "no_such_column" in r.error.message and r.turns == [] for r in samples["two_more_turns"])
