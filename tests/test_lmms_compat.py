"""Both ways compatible: the bundled shapes tasks run unchanged under lmms-eval itself, and lmms-eval and
this harness produce the same per-sample outputs for the same tiny model under greedy decoding.

lmms-eval lives in its own environment (its pins differ); point ``LMMS_EVAL_PYTHON`` at that
environment's python (``.ci/run`` builds it). lmms-eval's ``llava_hf`` model passes images as they are
(its ``qwen2_vl`` re-encodes them as JPEG and loads in bf16, which would change a random model's outputs)
and ignores ``until``, so the task's stop strings are applied to its outputs before comparing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.engine.runner import EvalOptions, evaluate
from harness.models import create_backend
from harness.models.base import finished_text
from harness.taskspec.registry import TaskRegistry
from harness.tiny_models import tiny_model_path
from tests.conftest import ROOT

LMMS_PYTHON = os.environ.get("LMMS_EVAL_PYTHON")
pytestmark = [
    pytest.mark.lmms,
    pytest.mark.skipif(not LMMS_PYTHON and not os.environ.get("CI"), reason="LMMS_EVAL_PYTHON is not set"),
]
LIMIT = 6


def test_lmms_eval_and_harness_agree_per_sample(tmp_path: Path, data_dir: Path) -> None:
    assert LMMS_PYTHON, "CI must provide lmms-eval (LMMS_EVAL_PYTHON) for the compatibility test"
    model = tiny_model_path("llava")
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [
            LMMS_PYTHON,
            "-m",
            "lmms_eval",
            "--model",
            "llava_hf",
            "--model_args",
            f"pretrained={model},device=cpu,device_map=cpu",
            "--tasks",
            "shapes",
            "--include_path",
            str(ROOT / "tasks"),
            "--batch_size",
            "1",
            "--limit",
            str(LIMIT),
            "--output_path",
            str(tmp_path / "lmms"),
            "--log_samples",
            "--process_docs_parallel",
            "1",
            "--verbosity",
            "DEBUG",
        ],
        cwd=data_dir,  # lmms-eval reads dataset_path vlm-audit/shapes relative to the working directory
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ours = evaluate(
        create_backend(f"hf:{model}"),
        f"hf:{model}",
        EvalOptions(tasks=["shapes"], data_dir=data_dir, limit=LIMIT, use_cache=False, show_progress=False),
    )[1]
    registry = TaskRegistry.discover()
    for task in ("shapes_color", "shapes_kind"):
        until = tuple(registry.get(task).generation_kwargs.get("until", ()))
        (samples_file,) = (tmp_path / "lmms").rglob(f"*_samples_{task}.jsonl")
        theirs = {r["doc_id"]: r for r in map(json.loads, samples_file.read_text().splitlines())}
        assert sorted(theirs) == list(range(LIMIT))
        for record in ours[task]:
            lmms = theirs[record.doc_id]
            response = lmms["filtered_resps"]
            response = response[0] if isinstance(response, list) else response
            # lmms-eval keeps a trailing cut-off character as U+FFFD; the harness drops it (finished_text)
            assert record.responses[0].strip() == finished_text(response, until).strip(), (task, record.doc_id)
            assert record.metrics["exact_match,none"] == lmms["exact_match"]
