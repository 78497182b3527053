"""The differentiable preprocessing of the families that pad an aspect-preserving resize to a square:
DeepSeek-VL and its hybrid (DeepSeek-VL-7B).

DeepSeek-VL's image processor resizes each image so that its longer side becomes ``size`` (the other
side scaled alike, at least ``min_size``), pads it to a centred square with ``background_color`` (the
mean colour) and rescales/normalises it; SigLIP sees that square as an ``n x n`` patch grid, row-major,
``n * n = num_image_tokens``.

The hybrid does the same at ``high_res_size`` (with its own resample, mean and std) for SAM's
``high_res_pixel_values``, then resizes that padded high-resolution square to ``size`` for SigLIP's
``pixel_values``. The model brings SAM's feature map to SigLIP's ``n x n`` grid and fuses the two per
grid position, so image token ``(r, c)`` looks at the same square cell in both views.

:meth:`PaddedSquarePreprocess.geometry` maps each grid cell back to the original image: a cell over the
padding is clipped to the image, and one wholly over it covers no image (an empty box). Each step calls
the processor's own resize and padding; the resizes are quantised with a straight-through gradient
(:mod:`harness.protocols.fusion.attacks.pixels`), so the forward value equals the processor's output
(``tests/protocols/fusion/test_attacks_deepseek.py``).
"""

from __future__ import annotations

from functools import partial
from math import isqrt
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry, QuantisedResize, require_torchvision, resize_adjoint


def _size(size: Any) -> Any:
    from transformers.image_utils import SizeDict

    return size if isinstance(size, SizeDict) else SizeDict(**size)


class PaddedSquarePreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> DeepSeek-VL's ``pixel_values``,
    and the hybrid's ``high_res_pixel_values`` (module docstring)."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        require_torchvision(ip)
        if not (ip.do_resize and ip.do_pad):
            raise HarnessError(
                "white-box attacks need DeepSeek-VL's resize and square padding; load the processor "
                f"with do_resize and do_pad (it has do_resize={ip.do_resize}, do_pad={ip.do_pad})"
            )
        self.ip, self.dtype = ip, dtype
        self.side = isqrt(int(processor.num_image_tokens))
        if self.side**2 != processor.num_image_tokens:
            raise HarnessError(
                f"DeepSeek-VL's image tokens form a square grid; this processor has "
                f"num_image_tokens={processor.num_image_tokens}"
            )
        self.hybrid = model_type == "deepseek_vl_hybrid"
        # (size, resample, background colour, mean, std) of SigLIP's view, and of SAM's for the hybrid
        self.low = (_size(ip.size), ip.resample, ip.background_color, ip.image_mean, ip.image_std)
        self.high = (
            (
                _size(ip.high_res_size),
                ip.high_res_resample,
                ip.high_res_background_color,
                ip.high_res_image_mean,
                ip.high_res_image_std,
            )
            if self.hybrid
            else None
        )
        self.adjoints = {view[1]: resize_adjoint(view[1]) for view in (self.low, self.high) if view}

    def _resize(self, images: Any, size: Any, resample: Any) -> Any:
        """The processor's aspect-preserving resize of ``images`` in [0, 1] (quantised, straight-through),
        in [0, 255]."""
        resize = partial(self.ip.resize, size=size, min_size=self.ip.min_size, resample=resample)
        return QuantisedResize.apply(images, resize, self.adjoints[resample])

    def _square(self, images: Any, view: tuple[Any, ...]) -> tuple[Any, Any]:
        """``images`` in [0, 1] resized and padded to one view's square (in [0, 255]), and normalised."""
        ip = self.ip
        size, resample, colour, mean, std = view
        square = ip.pad_to_square(self._resize(images, size, resample), background_color=colour)
        return square, ip.rescale_and_normalize(square, ip.do_rescale, ip.rescale_factor, ip.do_normalize, mean, std)

    def _one(self, image: Any) -> dict[str, Any]:
        """One image's views, as the processor makes them (the hybrid's SigLIP view from SAM's square)."""
        if self.high is None:
            return {"pixel_values": self._square(image[None], self.low)[1]}
        square, high = self._square(image[None], self.high)
        return {"pixel_values": self._square(square / 255.0, self.low)[1], "high_res_pixel_values": high}

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Each image is processed on its own, then stacked in input order."""
        views = [self._one(image) for image in images]
        out = {key: torch.cat([v[key] for v in views]) for key in views[0]}
        return {key: value.to(self.dtype) if self.dtype else value for key, value in out.items()}

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token (row-major over the square's grid) on the original image."""
        size, resample = (self.high or self.low)[:2]  # the hybrid's SigLIP square is SAM's, resized
        rh, rw = self.ip.resize(torch.zeros(1, 3, height, width), size, self.ip.min_size, resample).shape[-2:]
        square = max(rh, rw)
        # pad_to_square centres the image along its shorter side
        top, left = ((square - rh) // 2, 0) if rw > rh else (0, (square - rw) // 2)
        cell, n = square / self.side, self.side
        boxes = np.array(
            [
                [c * cell - left, r * cell - top, (c + 1) * cell - left, (r + 1) * cell - top]
                for r in range(n)
                for c in range(n)
            ]
        )
        boxes = np.clip(boxes * np.array([width / rw, height / rh] * 2), 0, np.array([width, height] * 2))
        return Geometry(boxes.astype(float))
