"""A tiny random-weight CLIP (``tiny:clip``) for the Stealth CLIP semantic-projection probe's tests.

Real classes (``CLIPModel``, ``CLIPProcessor``) built from configs, with the tiny models' byte-level CLIP
tokenizer; registered with the tiny models when this package is imported and saved like every tiny model,
so the probe loads it exactly as it loads a user's checkpoint (``openai/clip-vit-base-patch32``). Its
projections are meaningless by design.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.tiny_models import clip_tokenizer, register_tiny_recipe, save_tiny

#: The architecture name: ``tiny:clip`` as the probe's model.
TINY_CLIP = "clip"


def build_tiny_clip(out: Path) -> None:
    """Text tower hidden 32, vision tower hidden 32 with patch 14 at 56 px, projection 16."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    with tempfile.TemporaryDirectory() as tok_dir:
        tokenizer = clip_tokenizer(Path(tok_dir))
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
    save_tiny(CLIPModel(config), processor, out)


register_tiny_recipe(
    TINY_CLIP,
    build_tiny_clip,
    "an image-text encoder for the Stealth CLIP probe (harness.protocols.stealth.clip_probe)",
)
