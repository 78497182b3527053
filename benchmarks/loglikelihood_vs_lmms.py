"""Wall time of a ``multiple_choice`` task: ``harness eval`` (hf:) against lmms-eval (``llava_hf``).

Same requests in both: an ARC-Easy-format task of ``--docs`` docs (a long question, four choices each) on
the tiny LLaVA saved to disk, text only, each run as a fresh CLI process (start-up included). lmms-eval
scores one full forward pass per choice; the harness runs each prompt once and its choices together on the
prompt's repeated key/value cache. lmms-eval 0.7.3 cannot run multiple_choice as shipped; it runs through
the two-fix driver of tests/test_loglikelihood_lmms.py. Target ratio (harness / lmms-eval) <= 0.5.

Usage: python benchmarks/loglikelihood_vs_lmms.py [--docs 64] [--lmms-python .venv-lmms/bin/python]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.tiny_models import tiny_model_path  # noqa: E402
from tests.test_loglikelihood_lmms import LMMS_DRIVER, TASK  # noqa: E402

WORDS = "the red square is left of a small blue circle and the green star is on top of the large tree".split()


def write_task(folder: Path, docs: int) -> Path:
    """The dataset and the two copies of the task (lmms-eval's, and the harness's with llava_hf's ``\\n``)."""
    import datasets

    rows = {
        "question": [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(80)) + "?" for i in range(docs)],
        "choices": [
            {
                "text": ["a red square", "the blue circle on the left", "green", "a large tree"],
                "label": ["A", "B", "C", "D"],
            }
        ]
        * docs,
        "answerKey": ["ABCD"[i % 4] for i in range(docs)],
    }
    datasets.Dataset.from_dict(rows).to_parquet(str(folder / "arc" / "data" / "test-00000-of-00001.parquet"))
    tasks = folder / "tasks"
    tasks.mkdir()
    (tasks / "utils.py").write_text("def no_visual(doc):\n    return []\n")
    (tasks / "arc_lmms.yaml").write_text(TASK.format(name="arc_lmms", prefix=""))
    (tasks / "arc_ours.yaml").write_text(TASK.format(name="arc_ours", prefix="\\n"))
    return tasks


def timed(argv: list[str], cwd: Path) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--lmms-python", default=os.environ.get("LMMS_EVAL_PYTHON", ".venv-lmms/bin/python"))
    args = parser.parse_args()
    model = tiny_model_path("llava")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tasks = write_task(folder, args.docs)
        ours = timed(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "eval",
                "--model",
                f"hf:{model}",
                "--model-args",
                "device=cpu",
                "--tasks",
                "arc_ours",
                "--include-path",
                str(tasks),
                "--data-dir",
                str(folder),
                "--no-cache",
                "--verbosity",
                "quiet",
            ],
            folder,
        )
        theirs = timed(
            [
                args.lmms_python,
                "-c",
                LMMS_DRIVER,
                "--model",
                "llava_hf",
                "--model_args",
                f"pretrained={model},device=cpu,device_map=cpu",
                "--tasks",
                "arc_lmms",
                "--include_path",
                str(tasks),
                "--batch_size",
                "1",
                "--output_path",
                str(folder / "lmms"),
                "--process_docs_parallel",
                "1",
                "--force_simple",
            ],
            folder,
        )
    print(f"multiple_choice, {args.docs} docs x 4 choices, tiny LLaVA on CPU (fresh processes)")
    print(f"  harness eval (hf:)  {ours:8.2f} s")
    print(f"  lmms-eval llava_hf  {theirs:8.2f} s")
    print(f"  ratio harness / lmms-eval = {ours / theirs:.2f}x (target <= 0.5x)")


if __name__ == "__main__":
    main()
