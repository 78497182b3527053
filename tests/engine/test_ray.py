"""Data-parallel runs on a real local Ray cluster (started once for this module): the same samples as a
single-process run, nothing lost when a worker is killed, and reruns that generate only what is missing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness.cli import main
from harness.engine.distributed import RayBackend, RayOptions, ReplicaPool
from harness.engine.requests import make_request
from harness.models import GenerationParams, create_backend
from harness.models.messages import ChatMessage
from harness.tiny_models import tiny_model_path

ray = pytest.importorskip("ray")
TWO = RayOptions(workers=2)


@pytest.fixture(scope="module", autouse=True)
def cluster(harness_cache: Path) -> Iterator[None]:
    """One local cluster of two CPUs for the module; workers inherit the test cache from this process."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024 * 1024)
    yield
    ray.shutdown()


def ask(text: str, colour: tuple[int, int, int]) -> list[ChatMessage]:
    image = Image.new("RGB", (48, 40), colour)
    return [ChatMessage.user(text, [image])]


class KillAfterFirst(ReplicaPool):
    """A pool whose first actor is killed as soon as the first shard's result arrives (others still running)."""

    def map(self, work: Any, shards: list[Any]) -> Iterator[tuple[int, Any]]:
        stream = super().map(work, shards)
        yield next(stream)
        self.ray.kill(self.actors[0])
        yield from stream


def samples(run_root: Path, task: str) -> dict[str, list[list[str]]]:
    """Each model's samples (per doc) under a run root: {model folder: [[responses of doc 0], ...]}."""
    out = {}
    for path in sorted(run_root.glob(f"*/*/samples_{task}.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        out[path.parent.parent.name] = [r["responses"] for r in sorted(rows, key=lambda r: r["doc_id"])]
    return out


def requests_of(run_root: Path) -> dict[str, tuple[int, int]]:
    """Each model's (generated, from the store) request counts."""
    out = {}
    for path in sorted(run_root.glob("*/*/results.json")):
        counts = json.loads(path.read_text())["provenance"]["requests"]
        out[path.parent.parent.name] = (counts["generated"], counts["cached"])
    return out


def test_a_sampled_run_on_two_workers_equals_the_single_process_run(data_dir: Path, tmp_path: Path) -> None:
    common = [
        "eval",
        "--model",
        "tiny:llava",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "shapes_color",
        "--limit",
        "4",
        "--gen-kwargs",
        "temperature=0.9,max_new_tokens=6",
        "--repeats",
        "2",
        "--batch-size",
        "2",
        "--verbosity",
        "quiet",
        "--no-cache",
    ]
    assert main([*common, "--output", str(tmp_path / "single")]) == 0
    assert main([*common, "--ray", "--workers", "2", "--output", str(tmp_path / "ray")]) == 0
    single, on_ray = samples(tmp_path / "single", "shapes_color"), samples(tmp_path / "ray", "shapes_color")
    assert set(single) == {"tiny__llava", "tiny__qwen2_vl"} and on_ray == single
    assert all(len(doc) == 2 for docs in single.values() for doc in docs)
    assert requests_of(tmp_path / "ray") == {"tiny__llava": (4, 0), "tiny__qwen2_vl": (4, 0)}
    info = json.loads(next((tmp_path / "ray").glob("tiny__llava/*/results.json")).read_text())["provenance"]["model"]
    assert info["ray_workers"] == 2 and info["fingerprint"] == create_backend("tiny:llava").fingerprint
    for run in (tmp_path / "ray").glob("*/*/results.json"):  # a run made on replicas verifies as any other
        verified = ["score", str(run.parent), "--verify", "--data-dir", str(data_dir), "--output"]
        assert main([*verified, str(tmp_path / "rescored" / run.parent.parent.name)]) == 0


def test_a_killed_worker_loses_nothing_and_a_rerun_generates_only_what_is_missing(
    data_dir: Path, tmp_path: Path
) -> None:
    from harness.engine.runner import EvalOptions, evaluate

    def run(backend: Any, limit: int, store: Path | None) -> tuple[list[list[str]], tuple[int, int]]:
        opts = EvalOptions(
            tasks=["shapes_color"],
            data_dir=data_dir,
            limit=limit,
            store_path=store,
            use_cache=store is not None,
            gen_overrides={"temperature": 1.0, "max_new_tokens": 5},
            repeats=2,
            show_progress=False,
        )
        result, by_task, _ = evaluate(backend, "tiny:llava", opts)
        counts = result.provenance.requests
        return [r.responses for r in by_task["shapes_color"]], (counts.generated, counts.cached)

    local = create_backend("tiny:llava")
    expected, _ = run(local, 4, None)
    params = GenerationParams(max_new_tokens=5, temperature=1.0)
    reqs = [
        make_request(ask(f"what is it {i}", (40 * i, 90, 200 - 30 * i)), params, n=2, base_seed=3) for i in range(6)
    ]
    backend = RayBackend("tiny:llava", {}, TWO)
    try:
        # a run that stopped after 2 docs (as a crashed driver leaves the store), then the rerun: 2 more generated
        store = tmp_path / "store.sqlite"
        assert run(backend, 2, store) == (expected[:2], (2, 0))
        assert run(backend, 4, store) == (expected, (2, 2))
        # an actor killed while its shards run: they run again elsewhere and a replacement actor joins
        stream = backend.answer(reqs, 1)
        first = next(stream)
        victim = backend.pool.actors[0]
        ray.kill(victim)
        answers = dict([(first[0].key, first[1]), *((r.key, out) for r, out in stream)])
        assert backend.pool.resent >= 1 and victim not in backend.pool.actors and len(backend.pool.actors) == 2
    finally:
        backend.close()
    assert answers == {r.key: local.generate([r])[0] for r in reqs}


def test_ray_flags_are_checked_before_any_model_loads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["eval", "--model", "tiny:llava", "--tasks", "shapes_color"]
    assert main([*base, "--workers", "2"]) == 2
    assert "--workers needs --ray" in capsys.readouterr().err
    assert main([*base, "--ray", "--workers", "0"]) == 2
    assert "--workers must be at least 1, got 0" in capsys.readouterr().err
    assert main(["attack", "--model", "tiny:llava", "--workers", "2"]) == 2
    assert "--workers needs --ray" in capsys.readouterr().err
    assert main([*base, "--ray", "127.0.0.1:1"]) == 2
    assert "--ray 127.0.0.1:1: no Ray cluster answers there" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # as without the extra
    assert main([*base, "--ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and 'pip install "vlm-audit-harness[ray]"' in err and "--ray" in err


def test_a_model_that_cannot_load_on_the_workers_is_one_line(tmp_path: Path) -> None:
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="no such folder") as caught:
        RayBackend(f"hf:{tmp_path / 'nothing-here'}", {}, RayOptions(workers=1))
    assert "\n" not in str(caught.value)


def test_multiple_choice_scores_on_two_workers_equal_the_single_process_run(tmp_path: Path) -> None:
    from tests.engine.test_loglikelihood import arc_task

    tasks = arc_task(tmp_path)
    model = f"hf:{tiny_model_path('qwen3')}"
    common = [
        "eval",
        "--model",
        model,
        "--tasks",
        "arc_tiny",
        "--include-path",
        str(tasks),
        "--verbosity",
        "quiet",
        "--no-cache",
    ]
    assert main([*common, "--output", str(tmp_path / "single")]) == 0
    assert main([*common, "--ray", "--workers", "2", "--output", str(tmp_path / "ray")]) == 0

    def scores(root: Path) -> list[list[float]]:
        lines = next(root.glob("*/*/samples_arc_tiny.jsonl")).read_text().split("\n")
        return [[c["loglikelihood"] for c in json.loads(line)["choices"]] for line in lines if line]

    single = scores(tmp_path / "single")
    assert [len(doc) for doc in single] == [3, 2, 4] and scores(tmp_path / "ray") == single
    results = json.loads(next((tmp_path / "ray").glob("*/*/results.json")).read_text())
    assert results["provenance"]["model"]["ray_workers"] == 2 and results["provenance"]["requests"]["scored"] == 3
