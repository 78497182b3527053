"""multiple_choice tasks score the same here as under lmms-eval: the same tiny LLaVA saved to disk, the same
local ARC-Easy-format dataset; per-choice values (lmms-eval's ``llava_hf`` returns each choice's mean token
loss) agree to 1e-4, and so do ``acc`` and ``acc_norm``.

lmms-eval's ``llava_hf`` writes ``"<image> ... \\n"`` before every prompt, so a text-only prompt reaches the
model as ``"\\n" + doc_to_text``; the harness's copy of the task says so in its ``doc_to_text``. Under
transformers 5 its ``loglikelihood`` hands the processor ``images=[]`` for a text-only doc, which the processor
refuses, and its evaluator turns every ``(loss, is_greedy)`` answer into a string (``unwrap_generation_output``),
which its own ``process_results`` then cannot unpack: lmms-eval 0.7.3 runs no ``multiple_choice`` task as
shipped. With an image, ``llava_hf`` tokenizes the prompt (to find where the choice starts) without the
image, so its ``<image>`` placeholder is one token there and hundreds in the scored input, and the choice's
mask starts inside the image tokens. LMMS_DRIVER fixes exactly those three points (``images=None``; score
tuples passed through; the prompt tokenized with the doc's images, which ``llava_hf`` has just passed for
the full input) and changes nothing else of lmms-eval: its prompts, its model's scoring and its metrics are
what is compared.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.engine.runner import EvalOptions, evaluate
from harness.models import create_backend
from harness.tiny_models import tiny_model_path
from tests.conftest import ROOT, write
from tests.engine.test_loglikelihood import ARC_ROWS

LMMS_PYTHON = os.environ.get("LMMS_EVAL_PYTHON")
pytestmark = [
    pytest.mark.lmms,
    pytest.mark.skipif(not LMMS_PYTHON and not os.environ.get("CI"), reason="LMMS_EVAL_PYTHON is not set"),
]
LMMS_DRIVER = """
import sys, transformers
import lmms_eval.evaluator as evaluator
from lmms_eval.__main__ import cli_evaluate
unwrap = evaluator.unwrap_generation_output
evaluator.unwrap_generation_output = lambda out: (out, None) if isinstance(out, tuple) and isinstance(out[1], bool) \
    else unwrap(out)
call = transformers.ProcessorMixin.__call__
last = {}
def with_images(self, *a, images=None, **kw):
    if images:
        last["images"] = images
    elif "<image>" in str(kw.get("text", a[0] if a else "")):
        images = last.get("images")
    return call(self, *a, images=images or None, **kw)
transformers.ProcessorMixin.__call__ = with_images
sys.argv[0] = "lmms_eval"
cli_evaluate()
"""
TASK = """\
task: {name}
dataset_path: arc
test_split: test
output_type: multiple_choice
doc_to_visual: !function utils.no_visual
doc_to_text: "{prefix}Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices.label.index(answerKey)}}}}"
doc_to_choice: "{{{{choices.text}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""


def run_lmms(tmp_path: Path, tasks: Path, name: str) -> dict[int, dict]:
    """lmms-eval's ``llava_hf`` on the tiny LLaVA: its samples of ``name`` by doc id."""
    assert LMMS_PYTHON, "CI must provide lmms-eval (LMMS_EVAL_PYTHON) for the compatibility test"
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
            "-c",
            LMMS_DRIVER,
            "--model",
            "llava_hf",
            "--model_args",
            f"pretrained={tiny_model_path('llava')},device=cpu,device_map=cpu",
            "--tasks",
            name,
            "--include_path",
            str(tasks),
            "--batch_size",
            "1",
            "--output_path",
            str(tmp_path / "lmms"),
            "--log_samples",
            "--process_docs_parallel",
            "1",
            "--force_simple",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = list((tmp_path / "lmms").rglob(f"*_samples_{name}.jsonl"))
    assert len(found) == 1, done.stderr[-3000:]
    (samples,) = found
    return {r["doc_id"]: r for r in map(json.loads, samples.read_text().splitlines())}


def _compare(tmp_path: Path, shots: str = "", image: bool = False) -> None:
    """The ARC-format task (plus few-shot ``shots`` settings, or with an image per doc) under lmms-eval and
    here: equal prompts, scores and metrics. Text-only, the harness's copy writes llava_hf's ``"\\n"`` itself
    (with shots in ``description``, before the shots); with an image the two prompts are the same as they are."""
    import datasets
    from PIL import Image

    rows = dict(ARC_ROWS)
    if image:  # a coloured square per question, of another size each (so the processor resizes)
        rows["image"] = [Image.new("RGB", (30 + 7 * i, 24 + 5 * i), c) for i, c in enumerate(["blue", "red", "gray"])]
    datasets.Dataset.from_dict(rows).to_parquet(str(tmp_path / "arc" / "data" / "test-00000-of-00001.parquet"))
    tasks = tmp_path / "tasks"
    write(
        tasks / "utils.py",
        "def no_visual(doc):\n    return []\n\n\ndef visual(doc):\n    return [doc['image'].convert('RGB')]\n",
    )
    lmms = TASK.format(name="arc_lmms", prefix="") + shots
    if image:
        ours = TASK.format(name="arc_ours", prefix="")
        lmms, ours = (text.replace("utils.no_visual", "utils.visual") for text in (lmms, ours))
    elif shots:
        ours = TASK.format(name="arc_ours", prefix="") + shots + "description: \"{{ '\\\\n' }}\"\n"
    else:
        ours = TASK.format(name="arc_ours", prefix="\\n")
    write(tasks / "arc_lmms.yaml", lmms)
    write(tasks / "arc_ours.yaml", ours)
    theirs = run_lmms(tmp_path, tasks, "arc_lmms")
    model = tiny_model_path("llava")
    _, samples, _ = evaluate(
        create_backend(f"hf:{model}", {"device": "cpu"}),
        f"hf:{model}",
        EvalOptions(
            tasks=["arc_ours"], include_paths=[str(tasks)], data_dir=tmp_path, use_cache=False, show_progress=False
        ),
    )
    assert sorted(theirs) == [r.doc_id for r in samples["arc_ours"]] == [0, 1, 2]
    for record in samples["arc_ours"]:
        lmms = theirs[record.doc_id]
        assert record.prompt[0]["content"][-1]["text"] == ("" if image else "\n") + lmms["input"]
        losses = [float(loss) for loss, _ in lmms["filtered_resps"]]
        assert [c.mean_loss for c in record.choices] == pytest.approx(losses, abs=1e-4)
        assert record.metrics == {"acc,none": lmms["acc"], "acc_norm,none": lmms["acc_norm"]}


def test_arc_format_scores_equal_lmms_eval(tmp_path: Path) -> None:
    _compare(tmp_path)


def test_few_shot_arc_format_scores_equal_lmms_eval(tmp_path: Path) -> None:
    """Two shots drawn by lmms-eval's default sampler from the split under test (so the doc itself is dropped)."""
    _compare(tmp_path, shots="num_fewshot: 2\nfewshot_split: test\nfewshot_config:\n  sampler: default\n")


def test_image_multiple_choice_scores_equal_lmms_eval(tmp_path: Path) -> None:
    """One image per doc: the image goes with the shared prompt, and each choice's mean loss is lmms-eval's."""
    _compare(tmp_path, image=True)
