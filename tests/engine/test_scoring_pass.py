"""Scoring gives the same figures on every pass: it runs under lmms-eval 0.7.3's seeds (random 0, numpy
1234, torch 1234) and in its order (the ``--tasks`` names sorted, then reversed by its ``ChainMap``; each
filter pipeline over every doc), so a scorer that draws makes lmms-eval's picks, the seeds are recorded,
and scoring one run twice, in one process or two, writes identical files."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from harness.engine.rescore import score_run
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.scoring_pass import LMMS_SCORING_SEEDS, scoring_order, seeded_scoring
from harness.models.base import Backend, GenerationRequest
from harness.results.schema import ScoringSeeds, read_run, read_samples
from harness.taskspec.registry import TaskRegistry
from tests.conftest import run_harness, write

#: A task whose scorer draws from all three generators, as MMMU's parser guesses with random.choice; two
#: filter pipelines, so the order of the draws shows lmms-eval's (each pipeline over every doc in turn).
PICK = """\
task: {name}
dataset_path: vlm-audit/shapes
test_split: test
output_type: generate_until
doc_to_text: "Pick one."
doc_to_target: color
process_results: !function utils.pick
filter_list:
  - name: first
    filter:
      - function: take_first
  - name: again
    filter:
      - function: take_first
metric_list:
  - metric: choice
    aggregation: mean
  - metric: digit
    aggregation: mean
  - metric: draw
    aggregation: mean
generation_kwargs:
  max_new_tokens: 4
metadata:
  version: 1
"""
UTILS = """
import random

import numpy as np
import torch


def pick(doc, results):
    return {
        "choice": float(random.choice(range(100))),
        "digit": float(np.random.randint(0, 1000)),
        "draw": float(torch.randint(0, 1000, (1,)).item()),
    }
"""
DOCS = 3


class SilentBackend(Backend):
    """A model that answers every prompt with the same word at once: the scorers under test ignore it."""

    @property
    def fingerprint(self) -> str:
        return "silent"

    def info(self) -> dict[str, Any]:
        return {"backend": "silent", "model": "silent"}

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        return [["red"] * r.n for r in requests]


@pytest.fixture(scope="module")
def picks(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Path]:
    """The task folder (pick_a, pick_b) and a run of both (``--tasks pick_a,pick_b``, 3 docs each)."""
    tasks = tmp_path_factory.mktemp("picks")
    for name in ("pick_a", "pick_b"):
        write(tasks / f"{name}.yaml", PICK.format(name=name))
    write(tasks / "utils.py", UTILS)
    opts = EvalOptions(
        tasks=["pick_a", "pick_b"],
        include_paths=[str(tasks)],
        data_dir=data_dir,
        limit=DOCS,
        output=tmp_path_factory.mktemp("runs"),
        use_cache=False,
        show_progress=False,
    )
    _, _, run_dir = evaluate(SilentBackend(), "silent:model", opts)
    assert run_dir is not None
    return tasks, run_dir


def _lmms_eval_draws(tasks_in_order: list[str]) -> dict[str, list[tuple[float, float, float]]]:
    """What lmms-eval's evaluator draws: seeded once, then per task each filter over every doc."""
    random.seed(0)
    np.random.seed(1234)
    torch.manual_seed(1234)
    out: dict[str, list[tuple[float, float, float]]] = {}
    for task in tasks_in_order:
        for _ in ("first", "again"):
            for _ in range(DOCS):
                draw = (
                    float(random.choice(range(100))),
                    float(np.random.randint(0, 1000)),
                    float(torch.randint(0, 1000, (1,)).item()),
                )
                out.setdefault(task, []).append(draw)
    return out


def _drawn(run_dir: Path, task: str) -> list[tuple[float, float, float]]:
    """The draws a run's samples record, in lmms-eval's order (filter, then doc)."""
    records = read_samples(run_dir, task)
    return [
        (r.metrics[f"choice,{name}"], r.metrics[f"digit,{name}"], r.metrics[f"draw,{name}"])
        for name in ("first", "again")
        for r in records
    ]


def test_a_scorer_that_draws_makes_lmms_evals_picks_and_the_seeds_are_recorded(picks: tuple[Path, Path]) -> None:
    _, run_dir = picks
    expected = _lmms_eval_draws(["pick_b", "pick_a"])  # lmms-eval scores --tasks pick_a,pick_b as b, then a
    assert _drawn(run_dir, "pick_b") == expected["pick_b"]
    assert _drawn(run_dir, "pick_a") == expected["pick_a"]
    assert read_run(run_dir).provenance.seeds.scoring == ScoringSeeds(random=0, numpy=1234, torch=1234)


def test_scoring_a_run_twice_in_one_process_or_two_writes_identical_files(
    picks: tuple[Path, Path], tmp_path: Path
) -> None:
    """Each pass writes to the same folder, so even the rescoring's own record (its source and command
    line) is the same; across the two ways only that record differs."""
    tasks, run_dir = picks
    out = tmp_path / "rescored"

    def files() -> dict[str, bytes]:
        made = {p.name: p.read_bytes() for p in out.iterdir()}
        shutil.rmtree(out)
        return made

    in_process = []
    for _ in range(2):
        score_run(run_dir, output=out, include_paths=[tasks])
        in_process.append(files())
    two_processes = []
    for _ in range(2):
        done = run_harness("score", str(run_dir), "--output", str(out), "--include-path", str(tasks), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        two_processes.append(files())
    assert sorted(in_process[0]) == ["results.json", "samples_pick_a.jsonl", "samples_pick_b.jsonl"]
    assert in_process[0] == in_process[1] and two_processes[0] == two_processes[1]
    for name in ("samples_pick_a.jsonl", "samples_pick_b.jsonl"):
        assert in_process[0][name] == two_processes[0][name] == (run_dir / name).read_bytes()

    def computed(data: bytes) -> dict[str, Any]:
        results: dict[str, Any] = json.loads(data)
        results["provenance"].pop("rescored")
        return results

    assert computed(in_process[0]["results.json"]) == computed(two_processes[0]["results.json"])


def test_a_scoring_pass_leaves_the_callers_generators_as_they_were() -> None:
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    with seeded_scoring() as seeds:
        assert seeds == LMMS_SCORING_SEEDS
        random.random(), np.random.rand(), torch.rand(1)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


def test_tasks_are_scored_in_lmms_evals_order(tmp_path: Path) -> None:
    """Names sorted, then reversed; a group's tasks in their listed order, each once; a task no name
    covers goes last."""
    for name in ("t_a", "t_b", "t_c"):
        write(tmp_path / f"{name}.yaml", PICK.format(name=name))
    write(tmp_path / "g.yaml", "group: g\ntask:\n  - t_c\n  - t_a\n")
    registry = TaskRegistry.discover([tmp_path])
    assert scoring_order(registry, ["t_a", "t_b"], ["t_a", "t_b"]) == ["t_b", "t_a"]
    assert scoring_order(registry, ["t_b", "g"], ["t_c", "t_a", "t_b"]) == ["t_b", "t_c", "t_a"]
    assert scoring_order(registry, ["g", "t_a"], ["t_c", "t_a"]) == ["t_a", "t_c"]
    assert scoring_order(registry, ["gone"], ["t_a"]) == ["t_a"]
