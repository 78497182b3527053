"""Test helpers for FusionAudit beyond the demo source (``builders/fusion/demo.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image


def noise(width: int, height: int, seed: int | np.random.Generator = 0) -> Image.Image:
    """A uniform-noise RGB image (from a seed, or drawn from a generator the caller goes on using)."""
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def prompt_image_tokens(processor: Any, image: Image.Image) -> int:
    """How many image tokens the processor puts in a one-image prompt."""
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = processor(text=[text], images=[image], return_tensors="pt")["input_ids"]
    return int((ids == processor.image_token_id).sum())


def model_matched_copy(dataset_dir: Path, spec: str, data_dir: Path) -> Path:
    """A copy of a FusionAudit build whose reference answers are ``spec``'s own greedy clean answers,
    saved where ``harness eval --data-dir data_dir`` finds it: what ``harness build fusion --demo
    --answers-from SPEC`` makes (:mod:`builders.fusion.matched`), without building the demo again."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    from builders.fusion.matched import match_answers
    from harness.engine.runner import EvalOptions, evaluate
    from harness.models.base import create_backend

    opts = EvalOptions(
        tasks=["fusion_clean"], data_dir=dataset_dir.parent.parent, use_cache=False, show_progress=False, batch_size=6
    )
    _, samples, _ = evaluate(create_backend(spec), spec, opts)
    answers = {r.doc_id: r.responses[0] for r in samples["fusion_clean"]}
    # read the parquet file itself: load_dataset may serve a cached copy of an earlier build
    ds = Dataset(pq.read_table(dataset_dir / "data" / "test-00000-of-00001.parquet"))
    out = data_dir / "vlm-audit" / "fusion"
    # items the model answers with something first: an empty answer matches no reference, so it is never clean-correct
    order = sorted(range(len(ds)), key=lambda i: not answers[i].strip())
    ds = ds.map(lambda row, idx: match_answers(row, answers[idx]), with_indices=True).select(order)
    ds.save_to_disk(str(out))
    return out
