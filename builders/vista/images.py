"""Where VISTA's images come from: a diffusers text-to-image pipeline (SDXL-Turbo by default: 4 steps,
guidance 0.0, one recorded seed per image) or a folder of real photographs, one sub-folder per topic.

Both sources hand out images by (topic, slot, attempt); a rejected image is replaced by the next
attempt (a new seed, or the folder's next unused file), so a reject list is all a reviewer writes.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.extras import require
from harness.hashing import derive_seed
from harness.protocols.vista.tiny import TINY_GENERATOR
from harness.tiny_models import tiny_model_path

log = logging.getLogger(__name__)
DEFAULT_GENERATOR = "stabilityai/sdxl-turbo"
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp"}


@dataclass(frozen=True)
class VistaImage:
    """One image with what is needed to reproduce or trace it."""

    data: bytes
    source: str  # "generated:<spec>" or "folder:<file name>"
    seed: int  # -1 for photographs
    attempt: int  # 0 unless earlier attempts were rejected


def _drop_clip_truncation(record: logging.LogRecord) -> bool:
    """VISTA's image prompts may exceed CLIP's 77 tokens by design; the per-batch truncation warning is noise."""
    return "CLIP can only handle sequences" not in record.getMessage()


class Text2ImageGenerator:
    """A diffusers text-to-image pipeline; ``tiny:sdxl_turbo`` builds a random-weight one offline. ``total``
    (images expected) sizes the progress bar, which ``--verbosity quiet`` (log level above warnings) hides."""

    def __init__(
        self,
        spec: str = DEFAULT_GENERATOR,
        steps: int = 4,
        guidance: float = 0.0,
        size: int | None = None,
        device: str | None = None,
        total: int | None = None,
    ) -> None:
        import torch
        from tqdm.auto import tqdm

        require("diffusers", "vista", "generating VISTA's images")
        from diffusers import AutoPipelineForText2Image  # the [vista] extra

        path: str | Path = spec
        if spec.startswith("tiny:"):
            path = tiny_model_path(spec.removeprefix("tiny:"))
        from harness.models.hf import _auto_device, _auto_dtype

        self.device = device or _auto_device()
        dtype = getattr(torch, _auto_dtype(self.device))
        try:
            self.pipeline = AutoPipelineForText2Image.from_pretrained(str(path), dtype=dtype).to(self.device)
        except (OSError, ValueError) as exc:
            raise HarnessError(
                f"image generator {spec!r} cannot be loaded ({str(exc).splitlines()[0]}); offline, pass "
                f"a local pipeline folder, tiny:{TINY_GENERATOR}, or --images with --generator none"
            ) from None
        self.pipeline.set_progress_bar_config(disable=True)
        logging.getLogger(type(self.pipeline).__module__).addFilter(_drop_clip_truncation)
        self.bar = tqdm(total=total, desc="vista images", unit="image", disable=not log.isEnabledFor(logging.WARNING))
        self.spec, self.steps, self.guidance, self.size = spec, steps, guidance, size

    def settings(self) -> dict[str, Any]:
        """The generator's settings, as the dataset card records them."""
        return {"generator": self.spec, "steps": self.steps, "guidance": self.guidance, "size": self.size}

    def generate(self, prompts: list[str], seeds: list[int]) -> list[bytes]:
        """One JPEG (quality 95) per prompt, each from its own seeded generator, in one batch."""
        import torch

        generators = [torch.Generator(self.device).manual_seed(s) for s in seeds]
        size = {"height": self.size, "width": self.size} if self.size else {}
        with torch.inference_mode():
            images = self.pipeline(
                prompts, num_inference_steps=self.steps, guidance_scale=self.guidance, generator=generators, **size
            ).images
        out = []
        for image in images:
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="JPEG", quality=95)
            out.append(buffer.getvalue())
        self.bar.update(len(out))
        return out


def image_seed(base_seed: int, image_id: str, attempt: int) -> int:
    """The recorded seed of an image slot's ``attempt``-th try (stable across builds and machines)."""
    return derive_seed(base_seed, f"{image_id}#{attempt}")


def folder_files(images_dir: Path, slug: str) -> list[Path]:
    """The topic's photographs in name order, or [] when ``images_dir`` has no folder for it."""
    folder = images_dir / slug
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
