"""A differentiable copy of a model's image preprocessing, built from the processor's own config and
its own torchvision-backend methods (resize, center crop, rescale/normalise, patchify), so gradients
flow from the model's input back to raw ``[0, 1]`` pixels.

The real processor resizes the ``uint8`` image with torchvision's integer kernels, whose output can
differ from a float resize by several levels. The copy therefore computes its forward value exactly
as the processor does (the image quantised to uint8, resized by the processor's own ``resize``) and
takes its gradient through the float resize of the unquantised image (a straight-through
estimator). The forward value is then the processor's output on the quantised image, which is what
an adversarial image becomes when saved. ``tests/protocols/fusion/test_attacks.py`` pins this equality.

The float resize is linear, so its gradient does not depend on where it is taken: ``_QuantisedResize``
applies the resize's adjoint (ATen's antialiased-interpolation backward, the kernel autograd itself
calls) to the incoming gradient and never runs the float resize forward. A test pins that gradient
against autograd through the processor's float resize.

Supported families: Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 (dynamic resolution, patchified
``pixel_values`` with ``image_grid_thw``; Qwen3-VL and Qwen3.5 use the same image processor with
16-pixel patches), LLaVA-1.5
(CLIP: shortest-edge resize, center crop) and Gemma 3 (SigLIP: a fixed-size resize, patches
average-pooled to ``image_seq_length`` tokens; pan-and-scan is refused). The paper's other families
are refused with the reason (``UNSUPPORTED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError

SUPPORTED = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "llava", "gemma3")
QWEN_FAMILY = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5")
#: The paper's other families, each with why it has no differentiable copy here (yet).
UNSUPPORTED = {
    "llava_next": "its any-resolution tiling (grid tiles plus a resized base view, unpadded feature grid) has "
                  "no differentiable copy yet",
    "idefics3": "its image splitting (longest-edge resize, tiles plus a global view) has no differentiable copy yet",
    "smolvlm": "its image splitting (Idefics3's tiles plus a global view) has no differentiable copy yet",
    "gemma4": "its variable-resolution image processor has no differentiable copy yet",
    "blip-2": "transformers' Blip2Processor drops its chat template on load (the hf backend renders every prompt "
              "with it), and its Q-Former query tokens have no spatial footprint for OAR",
    "instructblip": "transformers' InstructBlipProcessor drops its chat template on load (the hf backend renders "
                    "every prompt with it), and its Q-Former query tokens have no spatial footprint for OAR",
}


def unsupported_message(model_type: str) -> str:
    """One line: the supported families, and why ``model_type`` is not one of them when known."""
    why = f": {UNSUPPORTED[model_type]}" if model_type in UNSUPPORTED else " (not a paper family)"
    return f"white-box attacks support {', '.join(SUPPORTED)}; not {model_type!r}{why}"


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
            raise HarnessError(unsupported_message(model_type))
        ip = processor.image_processor
        if getattr(ip, "backend", None) != "torchvision":
            raise HarnessError(f"the {type(ip).__name__} image processor is not torchvision-backed; "
                               "load the model with torchvision installed")
        if getattr(ip, "do_pan_and_scan", False):
            raise HarnessError("white-box attacks need one view per image; load the Gemma 3 processor without "
                               "do_pan_and_scan")
        from transformers.image_utils import SizeDict

        self.ip = ip
        self.model_type = model_type
        self.dtype = dtype
        self.size = ip.size if isinstance(ip.size, SizeDict) else SizeDict(**ip.size)
        crop = getattr(ip, "crop_size", None)
        self.crop = crop if crop is None or isinstance(crop, SizeDict) else SizeDict(**crop)
        self.qwen = model_type in QWEN_FAMILY
        self.patch_size = int(getattr(ip, "patch_size", None) or getattr(processor, "patch_size", None) or 14)
        # Gemma 3 pools its patch grid to image_seq_length tokens, a square grid over the resized image
        self.tokens_per_side = round(processor.image_seq_length ** 0.5) if model_type == "gemma3" else None
        self.adjoint = _resize_adjoint(ip.resample)

    def _resize(self, x: Any) -> Any:
        if not self.ip.do_resize:
            return x
        if self.qwen:
            return self.ip.resize(x, size=self.size, resample=self.ip.resample,
                                  factor=self.ip.patch_size * self.ip.merge_size)
        return self.ip.resize(x, size=self.size, resample=self.ip.resample)

    def _pixels(self, images: Any) -> Any:
        """Model pixels of a stack of same-sized images ``(B, 3, H, W)`` in [0, 1]."""
        x = _QuantisedResize.apply(images, self._resize, self.adjoint)
        if not self.qwen and getattr(self.ip, "do_center_crop", False):
            x = self.ip.center_crop(x, self.crop)
        return self.ip.rescale_and_normalize(x, self.ip.do_rescale, self.ip.rescale_factor, self.ip.do_normalize,
                                             self.ip.image_mean, self.ip.image_std)

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
                pixels, gh, gw = self.ip.patchify(pixels, patch_size=self.ip.patch_size, merge_size=self.ip.merge_size,
                                                  temporal_patch_size=self.ip.temporal_patch_size)
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
        boxes = [((left + c * cell_w) * sx, (top + r * cell_h) * sy, (left + (c + 1) * cell_w) * sx,
                  (top + (r + 1) * cell_h) * sy) for r in range(rows) for c in range(cols)]
        return Geometry(np.asarray(boxes, dtype=float))


def _resize_adjoint(resample: Any) -> Any:
    """The ATen kernel that applies the adjoint of torchvision's antialiased float resize."""
    from torchvision.transforms.v2 import InterpolationMode
    from transformers.image_utils import pil_torch_interpolation_mapping

    mode = pil_torch_interpolation_mapping.get(resample, resample)
    kernels = {InterpolationMode.BICUBIC: torch.ops.aten._upsample_bicubic2d_aa_backward,
               InterpolationMode.BILINEAR: torch.ops.aten._upsample_bilinear2d_aa_backward}
    if mode not in kernels:
        raise HarnessError(f"white-box attacks support bicubic and bilinear resizing, not {mode}")
    return kernels[mode]


class _QuantisedResize(torch.autograd.Function):
    """``images`` in [0, 1] -> ``resize(uint8(255 images)).float()``, with the gradient of
    ``resize(255 images)`` (the straight-through estimator described above)."""

    @staticmethod
    def forward(ctx: Any, images: Any, resize: Any, adjoint: Any) -> Any:
        quantised = images.detach().mul(255.0).round_().clamp_(0, 255).to(torch.uint8)
        ctx.adjoint, ctx.in_shape = adjoint, tuple(images.shape)
        return resize(quantised).float()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None, None]:
        if tuple(grad.shape) == ctx.in_shape:  # the processor kept the size: the resize is the identity
            return grad * 255.0, None, None
        back = ctx.adjoint(grad.contiguous(), list(grad.shape[-2:]), list(ctx.in_shape), False, None, None)
        return back.mul_(255.0), None, None


def image_to_tensor(image: Any) -> Any:
    """A PIL image as a ``(3, H, W)`` float tensor in [0, 1] (exact multiples of 1/255)."""
    array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(array.copy()).permute(2, 0, 1).float() / 255.0


def tensor_to_image(x: Any) -> Any:
    """Quantise a ``[0, 1]`` tensor to uint8 and return the PIL image the real processor will see."""
    from PIL import Image

    array = (x.detach().float().clamp(0, 1) * 255.0).round().byte().permute(1, 2, 0).cpu().numpy()
    return Image.fromarray(array)
