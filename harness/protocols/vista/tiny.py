"""VISTA's tiny text-to-image generator (``tiny:sdxl_turbo``), for offline builds and tests of its images.

Registered with the tiny models when this package is imported; ``harness build vista --generator
tiny:sdxl_turbo`` loads it exactly as it loads ``stabilityai/sdxl-turbo``. Its images are noise by design.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.extras import require
from harness.tiny_models import bpe_tokenizer, clip_text_config, mark_tiny, register_tiny_recipe

#: The architecture name: ``tiny:sdxl_turbo`` as a ``--generator``.
TINY_GENERATOR = "sdxl_turbo"


#: The UNet: SDXL's text-time conditioning (two pooled text embeddings plus six size numbers) at toy width.
UNET = {
    "block_out_channels": (32, 64),
    "layers_per_block": 1,
    "sample_size": 32,
    "in_channels": 4,
    "out_channels": 4,
    "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
    "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
    "attention_head_dim": (2, 4),
    "use_linear_projection": True,
    "addition_embed_type": "text_time",
    "addition_time_embed_dim": 8,
    "transformer_layers_per_block": (1, 1),
    "projection_class_embeddings_input_dim": 6 * 8 + 32,
    "cross_attention_dim": 64,
    "norm_num_groups": 8,
}

#: The AutoencoderKL: 64x64 images to 32x32 latents of 4 channels.
VAE = {
    "block_out_channels": [8, 16],
    "in_channels": 3,
    "out_channels": 3,
    "latent_channels": 4,
    "sample_size": 64,
    "down_block_types": ["DownEncoderBlock2D"] * 2,
    "up_block_types": ["UpDecoderBlock2D"] * 2,
    "norm_num_groups": 8,
}

#: SDXL-Turbo's scheduler: Euler ancestral with trailing timesteps.
SCHEDULER = {"beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear", "timestep_spacing": "trailing"}


def build_tiny_sdxl_turbo(out: Path) -> None:
    """A text-to-image pipeline of SDXL-Turbo's classes (two CLIP text encoders, a text-time UNet, an
    AutoencoderKL, Euler ancestral with trailing timesteps) that makes 64x64 images."""
    require("diffusers", "vista", "tiny:sdxl_turbo")
    from diffusers import (  # the [vista] extra
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextModel, CLIPTextModelWithProjection

    tok = _clip_tokenizer()
    text = clip_text_config(tok, max_positions=77)
    # built in this order: the weights are drawn from the seeded generator one model after another
    unet = UNet2DConditionModel(**UNET)
    vae = AutoencoderKL(**VAE)
    scheduler = EulerAncestralDiscreteScheduler(**SCHEDULER)
    pipeline = StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=CLIPTextModel(text),
        tokenizer=tok,
        tokenizer_2=tok,
        text_encoder_2=CLIPTextModelWithProjection(text),
        unet=unet,
        scheduler=scheduler,
    )
    pipeline.save_pretrained(out)
    mark_tiny(out)


def _clip_tokenizer() -> Any:
    """A byte-level BPE tokenizer with CLIP's special tokens, 77 positions, padded on the right."""
    tok = bpe_tokenizer(
        ["<|startoftext|>", "<|endoftext|>"],
        None,
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        model_max_length=77,
    )
    tok.padding_side = "right"
    return tok


register_tiny_recipe(
    TINY_GENERATOR,
    build_tiny_sdxl_turbo,
    "a text-to-image generator for vista builds (harness build vista --generator tiny:sdxl_turbo)",
)
