"""A differentiable copy of a model's image preprocessing, built from the processor's own config and
its own torchvision-backend methods (resize, center crop, rescale/normalise, patchify), so gradients
flow from the model's input back to raw ``[0, 1]`` pixels.

The real processor resizes the ``uint8`` image with torchvision's integer kernels, whose output can
differ from a float resize by several levels. The copy therefore computes its forward value exactly
as the processor does (the image quantised to uint8, resized by the processor's own ``resize``) and
takes its gradient through the float resize of the unquantised image (a straight-through
estimator). The forward value is then the processor's output on the quantised image, which is what
an adversarial image becomes when saved. ``tests/test_fusion_attacks.py`` pins this equality.

Supported families: Qwen2-VL / Qwen2.5-VL (dynamic resolution, patchified ``pixel_values`` with
``image_grid_thw``) and LLaVA-1.5 (CLIP: shortest-edge resize, center crop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError

SUPPORTED = ("qwen2_vl", "qwen2_5_vl", "llava")


@dataclass(frozen=True)
class Geometry:
    """Where each image token of one image looks: ``boxes[k] = (x0, y0, x1, y1)`` in original pixels."""

    boxes: np.ndarray

    def coverage(self, region: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
        """Per token, the fraction of its box inside ``region``, and the box areas."""
        b = self.boxes
        rx0, ry0, rx1, ry1 = region
        w = np.clip(np.minimum(b[:, 2], rx1) - np.maximum(b[:, 0], rx0), 0, None)
        h = np.clip(np.minimum(b[:, 3], ry1) - np.maximum(b[:, 1], ry0), 0, None)
        areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        return w * h / areas, areas


class DifferentiablePreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> the model's image inputs."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        if model_type not in SUPPORTED:
            raise HarnessError(f"white-box attacks support {', '.join(SUPPORTED)}; {model_type!r} is not supported yet")
        ip = processor.image_processor
        if getattr(ip, "backend", None) != "torchvision":
            raise HarnessError(f"the {type(ip).__name__} image processor is not torchvision-backed; "
                               "load the model with torchvision installed")
        from transformers.image_utils import SizeDict

        self.ip = ip
        self.model_type = model_type
        self.dtype = dtype
        self.size = ip.size if isinstance(ip.size, SizeDict) else SizeDict(**ip.size)
        crop = getattr(ip, "crop_size", None)
        self.crop = crop if crop is None or isinstance(crop, SizeDict) else SizeDict(**crop)
        self.qwen = model_type in {"qwen2_vl", "qwen2_5_vl"}
        self.patch_size = int(getattr(ip, "patch_size", None) or getattr(processor, "patch_size", None) or 14)

    def _resize(self, x: Any) -> Any:
        if not self.ip.do_resize:
            return x
        if self.qwen:
            return self.ip.resize(x, size=self.size, resample=self.ip.resample,
                                  factor=self.ip.patch_size * self.ip.merge_size)
        return self.ip.resize(x, size=self.size, resample=self.ip.resample)

    def _pixels(self, images: Any) -> Any:
        """Model pixels of a stack of same-sized images ``(B, 3, H, W)`` in [0, 1]."""
        import torch

        scaled = images * 255.0
        exact = self._resize(scaled.detach().clamp(0, 255).round().to(torch.uint8)).float()
        smooth = self._resize(scaled)
        x = smooth + (exact - smooth).detach()
        if not self.qwen and getattr(self.ip, "do_center_crop", False):
            x = self.ip.center_crop(x, self.crop)
        return self.ip.rescale_and_normalize(x, self.ip.do_rescale, self.ip.rescale_factor, self.ip.do_normalize,
                                             self.ip.image_mean, self.ip.image_std)

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Same-sized images are processed as one stack (as the processor groups them); outputs keep
        the input order."""
        import torch

        groups: dict[tuple[int, ...], list[int]] = {}
        for k, img in enumerate(images):
            groups.setdefault(tuple(img.shape), []).append(k)
        per_image: list[Any] = [None] * len(images)
        grids: list[list[int]] = [[]] * len(images)
        for members in groups.values():
            pixels = self._pixels(torch.stack([images[k] for k in members]))
            if self.qwen:
                pixels, gh, gw = self.ip.patchify(pixels, patch_size=self.ip.patch_size, merge_size=self.ip.merge_size,
                                                  temporal_patch_size=self.ip.temporal_patch_size)
            for j, k in enumerate(members):
                per_image[k] = pixels[j]
                if self.qwen:
                    grids[k] = [1, gh, gw]
        if not self.qwen:
            pixel_values = torch.stack(per_image)
            return {"pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values}
        pixel_values = torch.cat(per_image)
        return {"pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values,
                "image_grid_thw": torch.tensor(grids, dtype=torch.long, device=pixel_values.device)}

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token (in the order the model sees them) on the original image."""
        import torch

        probe = torch.zeros(1, 3, height, width)
        rh, rw = self._resize(probe).shape[-2:] if self.ip.do_resize else (height, width)
        sx, sy = width / rw, height / rh
        if self.qwen:
            cell = self.ip.patch_size * self.ip.merge_size
            top = left = 0
            rows, cols = rh // cell, rw // cell
        else:
            cell = self.patch_size
            top, left = int((rh - self.crop.height) / 2.0), int((rw - self.crop.width) / 2.0)
            rows, cols = self.crop.height // cell, self.crop.width // cell
        boxes = [((left + c * cell) * sx, (top + r * cell) * sy, (left + (c + 1) * cell) * sx,
                  (top + (r + 1) * cell) * sy) for r in range(rows) for c in range(cols)]
        return Geometry(np.asarray(boxes, dtype=float))


def image_to_tensor(image: Any) -> Any:
    """A PIL image as a ``(3, H, W)`` float tensor in [0, 1] (exact multiples of 1/255)."""
    import torch

    array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(array.copy()).permute(2, 0, 1).float() / 255.0


def tensor_to_image(x: Any) -> Any:
    """Quantise a ``[0, 1]`` tensor to uint8 and return the PIL image the real processor will see."""
    from PIL import Image

    array = (x.detach().float().clamp(0, 1) * 255.0).round().byte().permute(1, 2, 0).cpu().numpy()
    return Image.fromarray(array)
