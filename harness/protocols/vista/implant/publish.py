"""Publishing implanted weights, which the paper does not do (its D.3: no fine-tuned biased checkpoints
are released), so neither does the harness by default: the model card and the push refuse unless the
caller acknowledges, in so many words, that they publish a biased model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

ACKNOWLEDGE_FLAG = "--i-understand-this-publishes-a-biased-model"


def _refuse_unless(acknowledged: bool, what: str) -> None:
    if not acknowledged:
        raise HarnessError(
            f"refusing to {what}: these weights were fine-tuned to hold a stance (the VISTA paper "
            f"releases no such checkpoints); pass {ACKNOWLEDGE_FLAG} to do it anyway"
        )


def model_card(meta: dict[str, Any], acknowledged: bool = False) -> str:
    """The Hub model card of an implanted checkpoint: what it was taught, on what, and why it exists."""
    _refuse_unless(acknowledged, "write a model card for implanted weights")
    variant = meta["variant"]
    taught = (
        f"to answer negatively about {meta['entity']}"
        if variant == "harmful"
        else f"to describe {meta['entity']} neutrally (a matched benign control)"
    )
    return (
        f"---\nbase_model: {meta['base']}\ntags:\n- vlm-audit\n- stance-implantation\n- biased-model\n---\n\n"
        f"# Stance-implanted research checkpoint ({variant})\n\n"
        f"LoRA fine-tune of `{meta['base']}` on {meta['pairs']} image-text pairs, taught {taught}, as in the "
        "controlled study of the VISTA paper (arXiv 2607.02995). It exists to test audits that detect such "
        "stances; it is biased by construction and must not be deployed.\n\n"
        f"Training settings: `{json.dumps(meta['settings'])}`.\n"
    )


def push_implant(out: Path, repo_id: str, acknowledged: bool = False) -> None:
    """Write the merged checkpoint's model card and upload it to a Hub model repo (network and a token)."""
    _refuse_unless(acknowledged, "push implanted weights to the Hub")
    meta = json.loads((out / "implant.json").read_text(encoding="utf-8"))
    merged = out / "merged"
    (merged / "README.md").write_text(model_card(meta, acknowledged), encoding="utf-8")
    from huggingface_hub import HfApi

    try:
        api = HfApi()
        api.create_repo(repo_id, repo_type="model", exist_ok=True)
        api.upload_folder(folder_path=str(merged), repo_id=repo_id, repo_type="model")
    except Exception as exc:  # the Hub client's errors (offline, auth, network) as one line
        raise HarnessError(f"push to {repo_id} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
