"""The differentiable preprocessing of the family that fits each image to a patch budget: Gemma 4.

Gemma 4's image processor resizes each image on its own, keeping its aspect ratio, to the largest size
whose sides are multiples of ``pooling_kernel_size * patch_size`` and whose patch count stays within
``max_soft_tokens * pooling_kernel_size**2`` (its ``get_aspect_ratio_preserving_size``), rescales it,
cuts it into ``patch_size`` patches in row-major order and pads the patch sequence to the budget
(``pixel_values``: (images, budget, 3 patch_size**2); ``image_position_ids``: each patch's (x, y),
(-1, -1) for padding). The vision tower averages every ``pooling_kernel_size`` x ``pooling_kernel_size``
block of patches into one soft token, row-major over the pooled grid, so an image gets
``(height / cell) * (width / cell)`` soft tokens (``cell = pooling_kernel_size * patch_size``), each
looking at one cell of the resized image.

Built from the processor's own config and its own torchvision-backend methods (the aspect-preserving
resize, rescale/normalise, patchify, pad); the forward value equals the processor's output
(``tests/protocols/fusion/test_attacks_gemma4.py``; :mod:`harness.protocols.fusion.attacks.pixels`
explains the quantised resize). ``pixel_values`` stay float32, as the processor returns them: the
patch embedder rescales them to [-1, 1] before it casts them to the model's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.protocols.fusion.attacks.pixels import Geometry, QuantisedResize, require_torchvision, resize_adjoint


class PatchBudgetPreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> Gemma 4's ``pixel_values`` and
    ``image_position_ids`` (module docstring). ``model_type`` and ``dtype`` are the registry's constructor
    arguments; one family needs no ``model_type``, and ``pixel_values`` stay float32 whatever ``dtype``."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        require_torchvision(ip)
        self.ip = ip
        self.patch_size = int(ip.patch_size)
        self.pooling = int(ip.pooling_kernel_size)
        self.max_patches = int(ip.max_soft_tokens) * self.pooling**2
        self.adjoint = resize_adjoint(ip.resample)

    def _target(self, height: int, width: int) -> tuple[int, int]:
        """The processor's resized (height, width) of a ``height`` x ``width`` image."""
        from transformers.models.gemma4.image_processing_gemma4 import get_aspect_ratio_preserving_size

        if not self.ip.do_resize:
            return height, width
        size: tuple[int, int] = get_aspect_ratio_preserving_size(
            height=height,
            width=width,
            patch_size=self.patch_size,
            max_patches=self.max_patches,
            pooling_kernel_size=self.pooling,
        )
        return size

    def _resize(self, x: Any) -> Any:
        if not self.ip.do_resize:
            return x
        return self.ip.aspect_ratio_preserving_resize(
            x,
            patch_size=self.patch_size,
            max_patches=self.max_patches,
            pooling_kernel_size=self.pooling,
            resample=self.ip.resample,
        )

    def _one(self, image: Any) -> tuple[Any, Any]:
        """One image's padded patches and patch positions, as the processor makes them."""
        from transformers.models.gemma4.image_processing_gemma4 import convert_image_to_patches, pad_along_first_dim

        ip = self.ip
        x = QuantisedResize.apply(image[None], self._resize, self.adjoint)[0]  # the adjoint takes a batch
        x = ip.rescale_and_normalize(x, ip.do_rescale, ip.rescale_factor, ip.do_normalize, ip.image_mean, ip.image_std)
        rows, cols = x.shape[-2] // self.patch_size, x.shape[-1] // self.patch_size
        patches = convert_image_to_patches(x, self.patch_size)
        xs, ys = torch.meshgrid(torch.arange(cols, device=x.device), torch.arange(rows, device=x.device), indexing="xy")
        positions = torch.stack([xs, ys], dim=-1).reshape(rows * cols, 2)
        padded: tuple[Any, Any] = pad_along_first_dim(patches, positions, self.max_patches)
        return padded

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Each image is resized and patchified on its own (as the processor does), padded to the
        budget, and stacked in input order."""
        patches, positions = zip(*(self._one(image) for image in images), strict=True)
        return {"pixel_values": torch.stack(patches), "image_position_ids": torch.stack(positions)}

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every soft token (row-major over the pooled grid) on the original image."""
        th, tw = self._target(height, width)
        cell = self.patch_size * self.pooling
        sx, sy = width / tw, height / th
        boxes = [
            (c * cell * sx, r * cell * sy, (c + 1) * cell * sx, (r + 1) * cell * sy)
            for r in range(th // cell)
            for c in range(tw // cell)
        ]
        return Geometry(np.asarray(boxes, dtype=float))
