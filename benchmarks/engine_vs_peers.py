"""Wall-time ratios of ``harness eval`` against a bare transformers loop and against lmms-eval.

Same requests everywhere: the bundled ``shapes_color`` task on the tiny LLaVA smoke model (lmms-eval's
``llava_hf`` runs it on CPU without re-encoding images), ``--docs`` docs, two workloads:

- n=1, greedy, batch size 1: harness vs a bare loop (chat template -> processor -> generate -> decode)
  in this process, same loaded model, best of ``--rounds``; target ratio <= 1.10.
- n=10 at temperature 0.7: harness (native n samples per call) vs lmms-eval (``--repeats 10``), each
  as a fresh CLI process, so both ratios include start-up; target ratio <= 0.5.

Usage: python benchmarks/engine_vs_peers.py [--docs 64] [--lmms-python .venv-lmms/bin/python]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from builders import build_dataset  # noqa: E402
from harness.data import default_data_dir  # noqa: E402
from harness.engine.runner import EvalOptions, evaluate  # noqa: E402
from harness.models import Backend, create_backend  # noqa: E402
from harness.models.hf import HFBackend  # noqa: E402
from harness.tiny_models import tiny_model_path  # noqa: E402

if TYPE_CHECKING:
    from datasets import Dataset

TASK = "shapes_color"
NEW_TOKENS = 16


def bare_loop(backend: HFBackend, docs: Dataset) -> float:
    """The plainest correct transformers loop over the same prompts, one doc per generate call."""
    import torch

    processor, model = backend.processor, backend.model
    text = "What color is the shape?\nAnswer with one word: red, green, blue or yellow."
    start = time.perf_counter()
    for i in range(len(docs)):
        image = docs[i]["image"].convert("RGB")
        chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        inputs = processor(text=[prompt], images=[[image]], return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(
                **inputs, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id
            )
        processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    return time.perf_counter() - start


def harness_in_process(backend: Backend, docs_n: int, data_dir: Path) -> float:
    opts = EvalOptions(
        tasks=[TASK],
        data_dir=data_dir,
        limit=docs_n,
        use_cache=False,
        show_progress=False,
        gen_overrides={"max_new_tokens": NEW_TOKENS, "until": []},
    )
    start = time.perf_counter()
    evaluate(backend, "tiny:llava", opts)
    return time.perf_counter() - start


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lmms-python", default=os.environ.get("LMMS_EVAL_PYTHON"))
    args = parser.parse_args()

    build_dataset("shapes", None)
    data_dir = default_data_dir()
    model = tiny_model_path("llava")
    greedy_ratio(model, data_dir, args.docs, args.rounds)
    if not args.lmms_python:
        print("n=10: skipped (pass --lmms-python or set LMMS_EVAL_PYTHON)")
        return
    sampling_ratio(model, data_dir, args.docs, args.lmms_python)


def greedy_ratio(model: Path, data_dir: Path, n_docs: int, rounds: int) -> None:
    """n=1 greedy in one process: the harness's engine against the bare transformers loop, best of ``rounds``."""
    backend = create_backend(f"hf:{model}", {"dtype": "float32"})
    assert isinstance(backend, HFBackend)  # the bare loop drives its processor and model directly
    from datasets import load_dataset

    docs = load_dataset(str(data_dir / "vlm-audit/shapes"), split="test").select(range(n_docs))
    harness_in_process(backend, 2, data_dir)  # warm-up
    bare_loop(backend, docs.select(range(2)))
    ours, bare = [], []
    for _ in range(rounds):
        ours.append(harness_in_process(backend, n_docs, data_dir))
        bare.append(bare_loop(backend, docs))
    print(
        f"n=1 greedy, batch 1, {n_docs} docs: harness {min(ours):.2f}s, bare transformers loop "
        f"{min(bare):.2f}s, ratio {min(ours) / min(bare):.3f} (target <= 1.10)"
    )


def sampling_ratio(model: Path, data_dir: Path, n_docs: int, lmms_python: str) -> None:
    """n=10 sampled, fresh processes: ``harness eval`` against ``lmms_eval`` on the same task and model."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    gen = f"temperature=0.7,max_new_tokens={NEW_TOKENS}"
    with tempfile.TemporaryDirectory() as tmp:
        env["HF_HOME"] = str(Path(tmp) / "hf")
        ours_n10 = timed(harness_command(model, data_dir, n_docs, gen), data_dir, env)
        lmms_n10 = timed(lmms_command(lmms_python, model, n_docs, gen, Path(tmp) / "out"), data_dir, env)
    print(
        f"n=10, temperature 0.7, {n_docs} docs (fresh processes, start-up included): harness {ours_n10:.1f}s, "
        f"lmms-eval {lmms_n10:.1f}s, ratio {ours_n10 / lmms_n10:.3f} (target <= 0.5)"
    )


def harness_command(model: Path, data_dir: Path, n_docs: int, gen: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harness.cli",
        "eval",
        "--model",
        f"hf:{model}",
        "--model-args",
        "dtype=float32",
        "--tasks",
        TASK,
        "--limit",
        str(n_docs),
        "--repeats",
        "10",
        "--gen-kwargs",
        f"{gen},until=[]",
        "--no-cache",
        "--data-dir",
        str(data_dir),
        "--verbosity",
        "quiet",
    ]


def lmms_command(lmms_python: str, model: Path, n_docs: int, gen: str, out: Path) -> list[str]:
    return [
        lmms_python,
        "-m",
        "lmms_eval",
        "--model",
        "llava_hf",
        "--model_args",
        f"pretrained={model},device=cpu,device_map=cpu",
        "--tasks",
        TASK,
        "--include_path",
        str(ROOT / "tasks"),
        "--batch_size",
        "1",
        "--limit",
        str(n_docs),
        "--repeats",
        "10",
        "--gen_kwargs",
        gen,
        "--process_docs_parallel",
        "1",
        "--output_path",
        str(out),
    ]


if __name__ == "__main__":
    main()
