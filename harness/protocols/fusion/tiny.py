"""FusionAudit's tiny image editor (``tiny:instruct_pix2pix``), for offline Nat-Evid builds and tests.

Registered with the tiny models when this package is imported; ``harness build fusion --editor tiny``
loads it exactly as it loads ``timbrooks/instruct-pix2pix``. Its edits are noise by design.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.extras import require
from harness.tiny_models import clip_text_config, clip_tokenizer, mark_tiny, register_tiny_recipe

#: The architecture name of ``--editor tiny``.
TINY_EDITOR = "instruct_pix2pix"


def build_tiny_instruct_pix2pix(out: Path) -> None:
    """An InstructPix2Pix image editor (UNet with 8 input channels, VAE, CLIP text encoder, a CLIP
    tokenizer written locally, Euler ancestral): FusionAudit's Nat-Evid path; its edits are noise."""
    import torch

    require("diffusers", "fusion", "tiny:instruct_pix2pix")
    from diffusers import (  # the [fusion] extra
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextModel

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tok_dir:
        tokenizer = clip_tokenizer(Path(tok_dir))
    unet = UNet2DConditionModel(
        block_out_channels=(16, 32),
        layers_per_block=1,
        sample_size=16,
        in_channels=8,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        norm_num_groups=8,
        attention_head_dim=4,
    )
    vae = AutoencoderKL(
        block_out_channels=[16, 32],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        norm_num_groups=8,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
    )
    text_encoder = CLIPTextModel(clip_text_config(tokenizer, max_positions=256))
    pipe = StableDiffusionInstructPix2PixPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(beta_schedule="scaled_linear"),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(out)
    mark_tiny(out)


register_tiny_recipe(
    TINY_EDITOR,
    build_tiny_instruct_pix2pix,
    "an image editor for fusion builds (harness build fusion --editor tiny)",
)
