"""The differentiable preprocessing of the families that see one resized view per image.

- Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5: dynamic resolution, patchified ``pixel_values`` with
  ``image_grid_thw`` (Qwen3-VL and Qwen3.5 use the same image processor with 16-pixel patches);
- LLaVA-1.5 (CLIP): shortest-edge resize, center crop;
- Gemma 3 (SigLIP): a fixed-size resize, patches average-pooled to ``image_seq_length`` tokens
  (pan-and-scan is refused).

Each is built from the processor's own config and its own torchvision-backend methods (resize,
center crop, rescale/normalise, patchify); the forward value equals the processor's output
(``tests/protocols/fusion/test_attacks.py``; :mod:`harness.protocols.fusion.attacks.pixels` explains
the quantised resize).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry, QuantisedResize, require_torchvision, resize_adjoint


class SingleViewPreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> the model's image inputs, for the
    families that see one resized view per image (module docstring)."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        require_torchvision(ip)
        if getattr(ip, "do_pan_and_scan", False):
            raise HarnessError(
                "white-box attacks need one view per image; load the Gemma 3 processor without do_pan_and_scan"
            )
        from transformers.image_utils import SizeDict

        self.ip = ip
        self.model_type = model_type
        self.dtype = dtype
        self.size = ip.size if isinstance(ip.size, SizeDict) else SizeDict(**ip.size)
        crop = getattr(ip, "crop_size", None)
        self.crop = crop if crop is None or isinstance(crop, SizeDict) else SizeDict(**crop)
        self.qwen = model_type.startswith("qwen")
        self.patch_size = int(getattr(ip, "patch_size", None) or getattr(processor, "patch_size", None) or 14)
        # Gemma 3 pools its patch grid to image_seq_length tokens, a square grid over the resized image
        self.tokens_per_side = round(processor.image_seq_length**0.5) if model_type == "gemma3" else None
        self.adjoint = resize_adjoint(ip.resample)

    def _resize(self, x: Any) -> Any:
        if not self.ip.do_resize:
            return x
        if self.qwen:
            return self.ip.resize(
                x, size=self.size, resample=self.ip.resample, factor=self.ip.patch_size * self.ip.merge_size
            )
        return self.ip.resize(x, size=self.size, resample=self.ip.resample)

    def _pixels(self, images: Any) -> Any:
        """Model pixels of a stack of same-sized images ``(B, 3, H, W)`` in [0, 1]."""
        x = QuantisedResize.apply(images, self._resize, self.adjoint)
        if not self.qwen and getattr(self.ip, "do_center_crop", False):
            x = self.ip.center_crop(x, self.crop)
        return self.ip.rescale_and_normalize(
            x, self.ip.do_rescale, self.ip.rescale_factor, self.ip.do_normalize, self.ip.image_mean, self.ip.image_std
        )

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Same-sized images are processed as one stack (as the processor groups them); outputs keep
        the input order."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for k, img in enumerate(images):
            groups.setdefault(tuple(img.shape), []).append(k)
        parts: list[Any] = [None] * len(images)
        grids: list[list[int]] = [[]] * len(images)
        for members in groups.values():
            pixels = self._pixels(torch.stack([images[k] for k in members]))
            if self.qwen:
                pixels, gh, gw = self.ip.patchify(
                    pixels,
                    patch_size=self.ip.patch_size,
                    merge_size=self.ip.merge_size,
                    temporal_patch_size=self.ip.temporal_patch_size,
                )
                for k in members:
                    grids[k] = [1, gh, gw]
            if len(groups) == 1:  # one stack, already in input order: no per-image split and re-join
                parts = [pixels]
            else:
                for k, item in zip(members, pixels.unbind(0), strict=True):
                    parts[k] = item[None]
        # Qwen takes every image's patches as one (tokens, dim) sequence; LLaVA a (B, 3, H, W) stack.
        parts = [p.flatten(0, 1) if self.qwen else p for p in parts]
        pixel_values = parts[0] if len(parts) == 1 else torch.cat(parts)
        out = {"pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values}
        if self.qwen:
            out["image_grid_thw"] = torch.tensor(grids, dtype=torch.long, device=pixel_values.device)
        return out

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token (in the order the model sees them) on the original image."""
        probe = torch.zeros(1, 3, height, width)
        rh, rw = self._resize(probe).shape[-2:] if self.ip.do_resize else (height, width)
        sx, sy = width / rw, height / rh
        top = left = 0
        if self.qwen:
            cell_h = cell_w = self.ip.patch_size * self.ip.merge_size
            rows, cols = rh // cell_h, rw // cell_w
        elif self.tokens_per_side:
            rows = cols = self.tokens_per_side
            cell_h, cell_w = rh / rows, rw / cols
        else:
            if self.crop is None:
                raise HarnessError("a CLIP-style processor without a crop size has no patch grid")
            cell_h = cell_w = self.patch_size
            top, left = int((rh - self.crop.height) / 2.0), int((rw - self.crop.width) / 2.0)
            rows, cols = self.crop.height // cell_h, self.crop.width // cell_w
        boxes = [
            (
                (left + c * cell_w) * sx,
                (top + r * cell_h) * sy,
                (left + (c + 1) * cell_w) * sx,
                (top + (r + 1) * cell_h) * sy,
            )
            for r in range(rows)
            for c in range(cols)
        ]
        return Geometry(np.asarray(boxes, dtype=float))
