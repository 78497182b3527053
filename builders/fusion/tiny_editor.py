"""An offline random-weight InstructPix2Pix pipeline built from configs (tiny UNet with 8 input
channels, VAE, CLIP text encoder and a locally written CLIP tokenizer, Euler-ancestral scheduler),
saved with ``save_pretrained`` so the builder loads it exactly like a downloaded editor. Its edits are
noise by design: it exists to exercise the editing path."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

RECIPE_VERSION = "1"


def _clip_tokenizer(folder: Path) -> object:
    """A byte-level CLIP tokenizer with one token per byte (no merges), written to ``folder``."""
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=256)


def build_tiny_editor(out: Path) -> None:
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    with torch.random.fork_rng():
        torch.manual_seed(0)
        tokenizer = _clip_tokenizer(out.parent / (out.name + ".tok"))
        unet = UNet2DConditionModel(
            block_out_channels=(16, 32), layers_per_block=1, sample_size=16, in_channels=8, out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32, norm_num_groups=8,
            attention_head_dim=4)
        vae = AutoencoderKL(
            block_out_channels=[16, 32], in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=8,
            down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
            up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"])
        text_encoder = CLIPTextModel(CLIPTextConfig(
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id, hidden_size=32, intermediate_size=37, num_attention_heads=4,
            num_hidden_layers=2, vocab_size=len(tokenizer), projection_dim=32, max_position_embeddings=256))
        pipe = StableDiffusionInstructPix2PixPipeline(
            vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
            scheduler=EulerAncestralDiscreteScheduler(beta_schedule="scaled_linear"), safety_checker=None,
            feature_extractor=None, requires_safety_checker=False)
        pipe.save_pretrained(out)
    shutil.rmtree(out.parent / (out.name + ".tok"), ignore_errors=True)
    (out / "SMOKE_TEST_MODEL.txt").write_text("Tiny random-weight editor for offline tests; edits are noise.\n")


def tiny_editor_path() -> Path:
    """Build (once, under a lock) and return the tiny editor's folder under the harness cache."""
    from filelock import FileLock

    from harness.models.tiny import cache_root

    root = cache_root() / "tiny"
    root.mkdir(parents=True, exist_ok=True)
    out = root / f"instruct_pix2pix-v{RECIPE_VERSION}"
    with FileLock(str(out) + ".lock"):
        if not (out / "SMOKE_TEST_MODEL.txt").is_file():
            tmp = Path(tempfile.mkdtemp(prefix=".instruct_pix2pix-", dir=root))
            try:
                build_tiny_editor(tmp)
                shutil.rmtree(out, ignore_errors=True)
                tmp.rename(out)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return out
