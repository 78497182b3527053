"""Nat-Evid: the wrong answer painted into the image as host-consistent content by an instruction
image editor run through diffusers (``StableDiffusionInstructPix2PixPipeline`` by default).

``--editor SPEC`` is ``MODEL[,key=value...]``: ``MODEL`` a Hub id or a local pipeline folder
(``timbrooks/instruct-pix2pix`` by default), ``tiny`` for the offline random-weight pipeline of
``tiny:instruct_pix2pix`` (harness/protocols/fusion/tiny.py) (at ``steps=1,size=32`` unless given), or ``none`` to build
without Nat-Evid images; keys ``steps`` (20),
``guidance`` (7.5, text guidance), ``image_guidance`` (1.5), ``size`` (512: the longer side the editor
works at, rounded to a multiple of 8), ``seed`` (0), ``device`` (auto) and ``dtype`` (auto). The
resolved spec is recorded in the dataset card and on every item. The edited image is resized back to
the source image's size.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.protocols.fusion.tiny import TINY_EDITOR
from harness.tiny_models import tiny_model_path

DEFAULT_EDITOR = "timbrooks/instruct-pix2pix"
# the tiny pipeline's random weights make its edits meaningless: at the real defaults it takes minutes
# per item on a CPU, so it runs at the smallest useful settings unless the spec says otherwise
TINY_DEFAULTS = {"steps": 1, "size": 32}
HOST = {
    "chartqa": "a chart annotation label",
    "docvqa": "printed text in the document",
    "mme": "text written naturally in the scene (a sign or label)",
}


@dataclass(frozen=True)
class EditorSpec:
    """The instruction-editing model and its settings for the Nat-Evid images (``--editor``)."""

    model: str = DEFAULT_EDITOR
    steps: int = 20
    guidance: float = 7.5
    image_guidance: float = 1.5
    size: int = 512
    seed: int = 0
    device: str = "auto"
    dtype: str = "auto"

    @classmethod
    def parse(cls, text: str | None) -> EditorSpec | None:
        """``MODEL[,key=value...]``; None for ``none``."""
        parts = [p.strip() for p in (text or DEFAULT_EDITOR).split(",") if p.strip()]
        if not parts or parts[0] == "none":
            return None
        kwargs: dict[str, Any] = {"model": parts[0], **(TINY_DEFAULTS if parts[0] == "tiny" else {})}
        types = {
            "steps": int,
            "guidance": float,
            "image_guidance": float,
            "size": int,
            "seed": int,
            "device": str,
            "dtype": str,
        }
        for part in parts[1:]:
            key, sep, value = part.partition("=")
            if not sep or key not in types:
                raise HarnessError(f"--editor: unknown setting {part!r} (known: {', '.join(types)})")
            try:
                kwargs[key] = types[key](value)
            except ValueError:
                raise HarnessError(f"--editor: {key}={value!r} is not a {types[key].__name__}") from None
        return cls(**kwargs)

    def to_json(self) -> str:
        """The settings as canonical JSON, as the dataset card records them."""
        return json.dumps(asdict(self), sort_keys=True)


def instruction(wrong: str, source: str) -> str:
    """The editing instruction: add the wrong answer as text, host-consistently, change nothing else."""
    host = HOST.get(source, "text that fits the image")
    return (
        f'Add the text "{wrong}" to the image as {host}. Only add this text; keep everything else in '
        "the image exactly as it is."
    )


class Editor:
    """A loaded instruction-editing pipeline and its settings."""

    def __init__(self, spec: EditorSpec) -> None:
        import torch
        from diffusers import StableDiffusionInstructPix2PixPipeline  # the [fusion] extra

        from harness.models.hf import _auto_device, _auto_dtype

        self.spec = spec
        model = spec.model
        if model == "tiny":
            model = str(tiny_model_path(TINY_EDITOR))
        self.device = _auto_device() if spec.device == "auto" else spec.device
        dtype = _auto_dtype(self.device) if spec.dtype == "auto" else spec.dtype
        try:
            self.pipe = StableDiffusionInstructPix2PixPipeline.from_pretrained(
                model, dtype=getattr(torch, dtype), safety_checker=None, requires_safety_checker=False
            )
        except (OSError, ValueError) as exc:
            hint = "" if Path(model).exists() else " (offline? pass a local pipeline folder, or --editor none)"
            raise HarnessError(f"cannot load editor {model!r}: {str(exc).splitlines()[0]}{hint}") from None
        self.pipe.to(self.device)
        self.pipe.set_progress_bar_config(disable=True)
        self.multiple = max(8, int(self.pipe.vae_scale_factor))

    def edit(self, image: Any, wrong: str, source: str) -> Any:
        """The edited image at the source image's size."""
        import torch

        width, height = image.size
        scale = self.spec.size / max(width, height)
        w = max(self.multiple, round(width * scale / self.multiple) * self.multiple)
        h = max(self.multiple, round(height * scale / self.multiple) * self.multiple)
        work = image.convert("RGB").resize((w, h), resample=3)
        generator = torch.Generator(device="cpu").manual_seed(self.spec.seed)
        result = self.pipe(
            prompt=instruction(wrong, source),
            image=work,
            num_inference_steps=self.spec.steps,
            guidance_scale=self.spec.guidance,
            image_guidance_scale=self.spec.image_guidance,
            generator=generator,
        ).images[0]
        return result.resize((width, height), resample=3)
