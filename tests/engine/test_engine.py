"""The engine end to end on a tiny Qwen2-VL: outputs, caching, resume, re-scoring, bad input."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from harness.engine.rescore import score_run
from harness.engine.runner import EvalOptions, evaluate
from harness.models import create_backend
from harness.models.base import Backend
from harness.results import read_run, read_samples
from tests.conftest import ROOT, write


@cache
def qwen() -> Backend:
    return create_backend("tiny:qwen2_vl")


def opts(tmp_path: Path, data_dir: Path, **kw) -> EvalOptions:
    base = {
        "tasks": ["shapes"],
        "data_dir": data_dir,
        "limit": 4,
        "output": tmp_path / "out",
        "store_path": tmp_path / "store.sqlite",
        "show_progress": False,
    }
    return EvalOptions(**{**base, **kw})


def test_eval_writes_results_and_samples_and_rerun_generates_nothing(tmp_path: Path, data_dir: Path) -> None:
    _run, samples, run_dir = evaluate(qwen(), "tiny:qwen2_vl", opts(tmp_path, data_dir))
    assert run_dir is not None and (run_dir / "results.json").is_file()
    on_disk = read_run(run_dir)
    assert set(on_disk.results) == {"shapes_color", "shapes_kind"}
    assert set(on_disk.groups) == {"shapes"} and on_disk.group_subtasks["shapes"] == ["shapes_color", "shapes_kind"]
    raw = json.loads((run_dir / "results.json").read_text())
    for key in ("results", "configs", "versions", "n-samples", "config", "provenance"):
        assert key in raw
    assert raw["n-samples"]["shapes_color"] == {"original": 96, "effective": 4}
    color = raw["results"]["shapes_color"]
    assert "exact_match,none" in color and "exact_match_stderr,none" in color
    prov = raw["provenance"]
    assert prov["model"]["smoke_test_model"] is True and prov["datasets"]["shapes_color"]["kind"] == "local"
    assert prov["generation"]["shapes_color"]["max_new_tokens"] == 16 and prov["harness_version"]
    assert prov["requests"]["generated"] == 8
    records = read_samples(run_dir, "shapes_color")
    assert [r.doc_id for r in records] == [0, 1, 2, 3]
    assert all(len(r.responses) == 1 and r.error is None for r in records)
    assert records[0].doc == {"id": "shape-0000", "color": "red", "kind": "circle"}  # image stripped
    assert records[0].prompt[0]["content"][0]["url"]["image_sha256"]
    # exact_match is hand-checkable from the saved responses
    expected = sum(r.responses[0].strip().lower().rstrip(".") == r.target for r in records) / 4
    assert color["exact_match,none"] == expected

    again, samples2, _ = evaluate(qwen(), "tiny:qwen2_vl", opts(tmp_path, data_dir))
    assert again.provenance.requests.generated == 0 and again.provenance.requests.cached == 8
    assert [r.responses for r in samples2["shapes_color"]] == [r.responses for r in samples["shapes_color"]]


def test_score_recomputes_the_same_numbers_without_a_model(tmp_path: Path, data_dir: Path) -> None:
    run, _, run_dir = evaluate(qwen(), "tiny:qwen2_vl", opts(tmp_path, data_dir))
    results_file = run_dir / "results.json"
    tampered = json.loads(results_file.read_text())
    tampered["results"]["shapes_color"]["exact_match,none"] = 0.99
    results_file.write_text(json.dumps(tampered))
    rescored, _ = score_run(run_dir)
    assert rescored.results == run.results
    assert read_run(run_dir).results == run.results


SAMPLED_TASK = """\
task: shapes_sampled
dataset_path: vlm-audit/shapes
test_split: test
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is the {{ kind }}?"
doc_to_target: color
process_results: !function utils.process_color
metric_list:
  - metric: exact_match
    aggregation: mean
repeats: 3
generation_kwargs:
  max_new_tokens: 6
  temperature: 1.0
"""
SAME_PROMPT_TASK = SAMPLED_TASK.replace("task: shapes_sampled", "task: shapes_sampled_twin")


@pytest.fixture
def sampled_tasks(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    write(folder / "sampled.yaml", SAMPLED_TASK)
    write(folder / "twin.yaml", SAME_PROMPT_TASK)
    bundled = ROOT / "tasks" / "shapes" / "utils.py"
    write(folder / "utils.py", bundled.read_text())
    return folder


def test_native_n_samples_are_cached_seeded_and_deduplicated(
    tmp_path: Path, data_dir: Path, sampled_tasks: Path
) -> None:
    o = opts(
        tmp_path, data_dir, tasks=["shapes_sampled", "shapes_sampled_twin"], include_paths=[str(sampled_tasks)], limit=3
    )
    run, samples, _ = evaluate(qwen(), "tiny:qwen2_vl", o)
    assert run.provenance.requests.unique_requests == 3  # identical prompts across tasks generate once
    assert run.provenance.requests.generated_samples == 9
    first = [r.responses for r in samples["shapes_sampled"]]
    assert all(len(r) == 3 for r in first) and any(len(set(r)) > 1 for r in first)
    assert [r.responses for r in samples["shapes_sampled_twin"]] == first
    # sampled requests are cached too ...
    cached, _again, _ = evaluate(qwen(), "tiny:qwen2_vl", o)
    assert cached.provenance.requests.generated == 0
    # ... and reproducible from the seed alone, without the cache
    fresh = evaluate(qwen(), "tiny:qwen2_vl", EvalOptions(**{**o.__dict__, "use_cache": False}))[1]
    assert [r.responses for r in fresh["shapes_sampled"]] == first
    reseeded = evaluate(qwen(), "tiny:qwen2_vl", EvalOptions(**{**o.__dict__, "use_cache": False, "seed": 1}))[1]
    assert [r.responses for r in reseeded["shapes_sampled"]] != first


def test_repeats_override_gives_n_responses_per_doc(tmp_path: Path, data_dir: Path) -> None:
    run, samples, _ = evaluate(
        qwen(), "tiny:qwen2_vl", opts(tmp_path, data_dir, tasks=["shapes_color"], limit=2, repeats=3)
    )
    assert all(len(r.responses) == 3 and len(set(r.responses)) == 1 for r in samples["shapes_color"])  # greedy
    assert run.provenance.generation["shapes_color"].n == 3


def test_refresh_regenerates_and_no_cache_leaves_store_untouched(tmp_path: Path, data_dir: Path) -> None:
    o = opts(tmp_path, data_dir, tasks=["shapes_color"], limit=2)
    evaluate(qwen(), "tiny:qwen2_vl", EvalOptions(**{**o.__dict__, "use_cache": False}))
    assert not (tmp_path / "store.sqlite").exists()
    evaluate(qwen(), "tiny:qwen2_vl", o)
    refreshed = evaluate(qwen(), "tiny:qwen2_vl", EvalOptions(**{**o.__dict__, "refresh": True}))[0]
    assert refreshed.provenance.requests.generated == 2


def test_corrupt_image_becomes_a_per_sample_error_and_the_run_goes_on(tmp_path: Path, data_dir: Path) -> None:
    from datasets import Dataset, Features, Image, Value

    good = (data_dir / "vlm-audit" / "shapes" / "data").glob("*.parquet")
    shapes = Dataset.from_parquet(str(next(good))).select(range(3))
    rows = shapes.cast_column("image", Image(decode=False)).to_dict()
    rows["image"][1] = {"bytes": b"this is not a png", "path": None}
    broken = Dataset.from_dict(
        rows,
        features=Features({"id": Value("string"), "image": Image(), "color": Value("string"), "kind": Value("string")}),
    )
    local = tmp_path / "data" / "test" / "broken"
    (local / "data").mkdir(parents=True)
    broken.to_parquet(str(local / "data" / "test-00000-of-00001.parquet"))
    folder = tmp_path / "tasks"
    greedy_task = SAMPLED_TASK.replace("repeats: 3", "repeats: 1").replace("temperature: 1.0", "temperature: 0")
    write(
        folder / "b.yaml",
        greedy_task.replace("shapes_sampled", "broken_images").replace("vlm-audit/shapes", "test/broken"),
    )
    write(folder / "utils.py", (ROOT / "tasks/shapes/utils.py").read_text())
    run, samples, _ = evaluate(
        qwen(), "tiny:qwen2_vl", opts(tmp_path, tmp_path / "data", tasks=["broken_images"], include_paths=[str(folder)])
    )
    records = samples["broken_images"]
    assert [r.error is None for r in records] == [True, False, True]
    assert records[1].error.kind == "bad input" and records[1].metrics == {}
    counts = run.counts["broken_images"]
    assert (counts.samples, counts.scored, counts.errors) == (3, 2, 1)
    expected = sum(float(r.responses[0].strip().lower().rstrip(".") == r.target) for r in records if not r.error) / 2
    assert run.results["broken_images"]["exact_match,none"] == expected


def test_generation_errors_are_recorded_not_scored(tmp_path: Path, data_dir: Path) -> None:
    text_only = create_backend("tiny:qwen3")
    run, samples, _ = evaluate(text_only, "tiny:qwen3", opts(tmp_path, data_dir, tasks=["shapes_color"], limit=2))
    assert all(r.error and "text-only model" in r.error.message for r in samples["shapes_color"])
    assert run.counts["shapes_color"].scored == 0
    assert run.results["shapes_color"]["exact_match,none"] is None


@pytest.mark.parametrize("where", ["a-file", "a-file/runs"])
def test_unwritable_output_fails_before_the_model_loads(tmp_path: Path, data_dir: Path, capsys, where: str) -> None:
    from harness.cli import main

    write(tmp_path / "a-file", "not a folder")
    # the model does not exist: reaching its load would fail with another message
    code = main(
        [
            "eval",
            "--model",
            f"hf:{tmp_path / 'no-model'}",
            "--tasks",
            "shapes_color",
            "--limit",
            "2",
            "--data-dir",
            str(data_dir),
            "--output",
            str(tmp_path / where),
            "--no-cache",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "cannot load model" not in err
    assert f"--output {tmp_path / where}: cannot write a run folder there" in err


def test_a_store_locked_by_another_writer_neither_fails_nor_loses_the_run(
    tmp_path: Path, data_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging
    import sqlite3

    from harness.engine import store as store_module

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    run_opts = opts(tmp_path, data_dir, tasks=["shapes_color"], limit=2)
    store_module.ResponseStore(run_opts.store_path).close()
    other = sqlite3.connect(run_opts.store_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with caplog.at_level(logging.WARNING, logger="harness.engine.store"):
        _run, _samples, run_dir = evaluate(qwen(), "tiny:qwen2_vl", run_opts)
    assert run_dir is not None and all(r.responses for r in read_samples(run_dir, "shapes_color"))
    assert any("locked by another process" in r.getMessage() for r in caplog.records)
    assert list(tmp_path.glob("store.sqlite.pending-*.jsonl"))
    other.rollback()
    other.close()
    again, _, _ = evaluate(qwen(), "tiny:qwen2_vl", run_opts)  # the kept answers were merged: nothing to generate
    assert again.provenance.requests.generated == 0 and again.provenance.requests.cached == 2
