"""``harness build fusion --demo --answers-from MODEL``: the demo items with MODEL's own clean answers
as their references.

A random-weight model is almost never right on real questions, so on the plain demo build ``harness
attack`` finds no clean-correct item and the audit reports C = 0. Matching the references to the model
makes C non-empty by construction, so the attacks, the re-check and every audit figure run on real
outcomes: a check that the pipeline works end to end, never a measurement. Every item becomes a
DocVQA-style item (scored by ANLS, which takes any non-empty text answer); its wrong answer stays the
builder's unless it equals the new reference, in which case it is ``zzz`` and the Typo-Evid image is
rendered again with it (the Nat-Evid edit, made for the old wrong answer, is dropped).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from builders.fusion.overlay import typo_overlay
from harness.engine.runner import EvalOptions, evaluate
from harness.models.base import create_backend
from harness.paths import default_store_path
from harness.protocols.fusion.rows import FusionRow

#: The wrong answer of an item whose builder-made one equals the model's own answer.
COLLISION_WRONG = "zzz"


def clean_answers(folder: Path, spec: str, batch_size: int = 8) -> dict[int, str]:
    """``spec``'s greedy answer to each item of the build in ``folder`` (doc id -> answer), asked exactly as
    ``harness eval --tasks fusion_clean`` asks, through the response store (so that eval reuses them)."""
    with tempfile.TemporaryDirectory(prefix="fusion-matched-") as tmp:
        link = Path(tmp) / "vlm-audit" / "fusion"  # where the task's dataset_path finds the build
        link.parent.mkdir(parents=True)
        link.symlink_to(folder.resolve(), target_is_directory=True)
        opts = EvalOptions(
            tasks=["fusion_clean"], data_dir=Path(tmp), store_path=default_store_path(), batch_size=batch_size
        )
        _, samples, _ = evaluate(create_backend(spec), spec, opts)
    return {r.doc_id: (r.responses[0] if r.responses else "") for r in samples["fusion_clean"]}


def match_answers(row: dict[str, Any], answer: str) -> dict[str, Any]:
    """The item's fields that change when its reference becomes ``answer`` (module docstring)."""
    reference = answer.strip() or "."
    update: dict[str, Any] = {"answers": [reference], "source": "docvqa"}
    if FusionRow.read(row, "wrong_answer").strip().lower() == reference.lower():
        typo, region, style = typo_overlay(FusionRow.read(row, "image"), COLLISION_WRONG)
        update.update(
            wrong_answer=COLLISION_WRONG,
            typo_image=typo,
            typo_region=region,
            typo_style=style.to_json(),
            natevid_image=None,
            natevid_instruction="",
            natevid_status="not_built",
        )
    return update
