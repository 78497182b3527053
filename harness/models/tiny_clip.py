"""A tiny random-weight CLIP (``tiny:clip``) for the Stealth CLIP semantic-projection probe's tests.

Real classes (``CLIPModel``, ``CLIPProcessor``) built from configs, with the byte-level CLIP tokenizer
the diffusers recipes use; saved like every tiny model, so the probe loads it exactly as it loads a
user's checkpoint (``openai/clip-vit-base-patch32``). Its projections are meaningless by design.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def build_tiny_clip(out: Path) -> None:
    """Text tower hidden 32, vision tower hidden 32 with patch 14 at 56 px, projection 16."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from harness.models.tiny import _clip_tokenizer, _save

    with tempfile.TemporaryDirectory() as tok_dir:
        tokenizer = _clip_tokenizer(Path(tok_dir))
    config = CLIPConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 256,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": 56,
            "patch_size": 14,
        },
        projection_dim=16,
    )
    processor = CLIPProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}),
        tokenizer=tokenizer,
    )
    _save(CLIPModel(config), processor, out)
