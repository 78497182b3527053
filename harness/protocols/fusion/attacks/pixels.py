"""Pixel machinery shared by every family's differentiable preprocessing: the quantised resize with
its straight-through gradient, token footprints (:class:`Geometry`), and image <-> tensor conversion.

The real processor resizes the ``uint8`` image with torchvision's integer kernels, whose output can
differ from a float resize by several levels. A differentiable copy therefore computes its forward
value exactly as the processor does (the image quantised to uint8, resized by the processor's own
``resize``) and takes its gradient through the float resize of the unquantised image (a
straight-through estimator). The forward value is then the processor's output on the quantised image,
which is what an adversarial image becomes when saved.

The float resize is linear, so its gradient does not depend on where it is taken: :class:`QuantisedResize`
applies the resize's adjoint (ATen's antialiased-interpolation backward, the kernel autograd itself
calls) to the incoming gradient and never runs the float resize forward. A test pins that gradient
against autograd through the processor's float resize.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError


@dataclass(frozen=True)
class Geometry:
    """Where each image token of one image looks: ``boxes[k] = (x0, y0, x1, y1)`` in original pixels.
    A token without a footprint (a row-end newline token, a separator) has an empty box, area 0."""

    boxes: np.ndarray

    def coverage(self, region: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
        """Per token, the fraction of its box inside ``region``, and the box areas."""
        b = self.boxes
        rx0, ry0, rx1, ry1 = region
        w = np.clip(np.minimum(b[:, 2], rx1) - np.maximum(b[:, 0], rx0), 0, None)
        h = np.clip(np.minimum(b[:, 3], ry1) - np.maximum(b[:, 1], ry0), 0, None)
        areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        return np.divide(w * h, areas, out=np.zeros_like(areas), where=areas > 0), areas


def require_torchvision(ip: Any) -> None:
    """The copies call the processor's own torchvision methods; a PIL-backed processor has none."""
    if getattr(ip, "backend", None) != "torchvision":
        raise HarnessError(
            f"the {type(ip).__name__} image processor is not torchvision-backed; "
            "load the model with torchvision installed"
        )


def resize_adjoint(resample: Any) -> Any:
    """The ATen kernel that applies the adjoint of torchvision's antialiased float resize."""
    from torchvision.transforms.v2 import InterpolationMode
    from transformers.image_utils import pil_torch_interpolation_mapping

    mode = pil_torch_interpolation_mapping.get(resample, resample)
    kernels = {
        InterpolationMode.BICUBIC: torch.ops.aten._upsample_bicubic2d_aa_backward,
        InterpolationMode.BILINEAR: torch.ops.aten._upsample_bilinear2d_aa_backward,
        InterpolationMode.LANCZOS: torch.ops.aten._upsample_lanczos2d_aa_backward,
    }
    if mode not in kernels:
        raise HarnessError(f"white-box attacks support bicubic, bilinear and lanczos resizing, not {mode}")
    return kernels[mode]


class QuantisedResize(torch.autograd.Function):  # type: ignore[misc]  # torch is read untyped (pyproject)
    """``images`` in [0, 1] -> ``resize(uint8(255 images)).float()``, with the gradient of
    ``resize(255 images)`` (the straight-through estimator described above)."""

    @staticmethod
    def forward(ctx: Any, images: Any, resize: Any, adjoint: Any) -> Any:
        """The processor's resize of the uint8-quantised images."""
        quantised = images.detach().mul(255.0).round_().clamp_(0, 255).to(torch.uint8)
        ctx.adjoint, ctx.in_shape = adjoint, tuple(images.shape)
        return resize(quantised).float()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None, None]:
        """The float resize's adjoint applied to ``grad`` (times 255, the scale of the forward's input)."""
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
