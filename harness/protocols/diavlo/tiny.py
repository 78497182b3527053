"""DiaVLo's tiny open-vocabulary detector (``tiny:owlv2``), for offline builds and audits.

Registered with the tiny models when this package is imported; ``--detector tiny:owlv2`` loads it exactly
as it loads ``google/owlv2-base-patch16-ensemble``. Its boxes are meaningless by design.
"""

from __future__ import annotations

from pathlib import Path

from harness.tiny_models import bpe_tokenizer, register_tiny_recipe, save_tiny

#: The architecture name: ``tiny:owlv2`` as a ``--detector``.
TINY_DETECTOR = "owlv2"


def build_tiny_owlv2(out: Path) -> None:
    """An OWLv2 open-vocabulary detector (CLIP-style text and vision towers, box and class heads)."""
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    tok = bpe_tokenizer(
        ["<|startoftext|>", "<|endoftext|>"],
        "",
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    tok.model_max_length = 16
    tok.chat_template = None
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 56, "width": 56}), tokenizer=tok)
    config = Owlv2Config(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 16,
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": 56,
            "patch_size": 14,
        },
        projection_dim=32,
    )
    save_tiny(Owlv2ForObjectDetection(config), processor, out)


register_tiny_recipe(
    TINY_DETECTOR,
    build_tiny_owlv2,
    "an open-vocabulary detector for diavlo builds and audits (--detector tiny:owlv2)",
)
