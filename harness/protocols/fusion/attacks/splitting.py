"""The differentiable preprocessing of the families that split an image into tiles plus a global view:
Idefics3 and SmolVLM / SmolVLM2 (one image processor under two names).

The processor resizes the longest edge to ``size["longest_edge"]``, resizes again to multiples of
``max_image_size`` (V), cuts that into V x V tiles (row-major) and appends the whole image resized to
V x V (the global view); an image that fits one view is that view alone, and so is every image with
``do_image_splitting=False`` (resized straight to V x V). ``pixel_values`` is ``(B, n_max, 3, V, V)``,
zero-padded to the batch's largest view count, with ``pixel_attention_mask`` marking the real views.
The prompt gives each view ``image_seq_len`` ``<image>`` tokens in the same order (tiles, then the global
view), and the model fills them in that order (``inputs_merger``): one token per pixel-shuffled cell of
the view's patch grid, row-major.

Each resize is the processor's own, on the uint8 image, on the CPU (where the processor runs; the
default LANCZOS resize has no CUDA kernel), with the straight-through gradient of
:class:`~harness.protocols.fusion.attacks.pixels.QuantisedResize`; tiles are crops of the resize to
multiples of V.
The forward value equals the processor's output (``tests/protocols/fusion/test_attacks_splitting.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry, QuantisedResize, require_torchvision, resize_adjoint


def _on_cpu(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run on the CPU copy of its first argument, its result moved back to that argument's device."""

    def run(x: Any, *args: Any) -> Any:
        return fn(x.cpu(), *args).to(x.device)

    return run


class SplittingPreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1], one image per prompt, as the attacks
    batch them) -> ``pixel_values`` and ``pixel_attention_mask`` of Idefics3 / SmolVLM (module docstring)."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        require_torchvision(ip)
        from transformers.image_utils import SizeDict

        self.ip = ip
        self.dtype = dtype
        self.size = ip.size if isinstance(ip.size, SizeDict) else SizeDict(**ip.size)
        self.view = int(ip.max_image_size["longest_edge"])
        self.square = SizeDict(height=self.view, width=self.view)
        self.adjoint = _on_cpu(resize_adjoint(ip.resample))
        # image_seq_len tokens per view, a square grid of pixel-shuffled patch cells
        self.side = round(processor.image_seq_len**0.5)
        if self.side**2 != processor.image_seq_len:
            raise HarnessError(f"{model_type}: image_seq_len {processor.image_seq_len} is not a square token grid")
        # The processor does not know the vision patch size: a cell is scale_factor x patch_size pixels,
        # which is V // side for the released configs (364 // 13 = 28, 384 // 9 = 42, 512 // 8 = 64).
        self.cell = self.view // self.side

    def _longest_edge(self, q: Any) -> Any:
        return self.ip.resize(q, self.size, resample=self.ip.resample)

    def _to_multiples(self, q: Any) -> Any:
        return self.ip.resize_for_vision_encoder(q, self.view, resample=self.ip.resample)

    def _to_view(self, q: Any) -> Any:
        return self.ip.resize(q, self.square, resample=self.ip.resample)

    def _stages(self) -> list[Callable[[Any], Any]]:
        """The processor's resizes in order: longest edge, then to multiples of V (splitting) or to V x V."""
        last = self._to_multiples if self.ip.do_image_splitting else self._to_view
        return [self._longest_edge, last] if self.ip.do_resize else [last]

    def _resize(self, x: Any, resize: Callable[[Any], Any]) -> Any:
        """``resize`` of ``x`` (in [0, 1]) quantised to uint8, on the CPU, as 0-255 floats."""
        return QuantisedResize.apply(x, _on_cpu(resize), self.adjoint)

    def _grid(self, height: int, width: int) -> tuple[int, int]:
        """Tile rows and columns of a resized image of this size (0, 0: one view, no tiles)."""
        if self.ip.do_image_splitting and (height > self.view or width > self.view):
            return height // self.view, width // self.view
        return 0, 0

    def _views(self, image: Any) -> Any:
        """The normalised views ``(n, 3, V, V)`` of one image ``(3, H, W)`` in [0, 1]."""
        ip, v = self.ip, self.view
        x = image[None]
        for stage in self._stages():
            q = self._resize(x, stage)
            x = q / 255.0  # q holds integers, so the next quantisation gives q back exactly
        rows, cols = self._grid(*q.shape[-2:])
        if rows:
            tiles = [q[..., r * v : (r + 1) * v, c * v : (c + 1) * v] for r in range(rows) for c in range(cols)]
            q = torch.cat([*tiles, self._resize(x, self._to_view)])
        return ip.rescale_and_normalize(
            q, ip.do_rescale, ip.rescale_factor, ip.do_normalize, ip.image_mean, ip.image_std
        )

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Every image's views, zero-padded to the batch's largest view count (as the processor pads)."""
        views = [self._views(x) for x in images]
        if not self.ip.do_pad:
            pixel_values = torch.stack(views)
            return {"pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values}
        count = max(len(v) for v in views)
        size = (max(v.shape[-2] for v in views), max(v.shape[-1] for v in views))
        pixels, masks = [], []
        for item in views:
            padded = [self.ip.pad(view, size) for view in item]
            blank = item.new_zeros((count - len(item), item.shape[1], *size))
            pixels.append(torch.cat([torch.stack([p for p, _ in padded]), blank]))
            masks.append(
                torch.cat(
                    [
                        torch.stack([m for _, m in padded]),
                        torch.zeros((len(blank), *size), dtype=torch.int64, device=item.device),
                    ]
                )
            )
        pixel_values = torch.stack(pixels)
        return {
            "pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values,
            "pixel_attention_mask": torch.stack(masks),
        }

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token on the original image: each tile's cells, row-major, tiles
        row-major, then the global view's cells (the global view squashes the whole image to V x V)."""
        # the processor's own resizes on a 0-channel probe: only their size arithmetic runs
        probe = torch.empty(1, 0, height, width, dtype=torch.uint8)
        for stage in self._stages():
            probe = stage(probe)
        rows, cols = self._grid(*probe.shape[-2:])
        v, cell = self.view, self.cell
        # (left, top, x scale, y scale) of each view: a tile's offset in the resized image, then the global view
        sx, sy = width / probe.shape[-1], height / probe.shape[-2]
        views = [(c * v, r * v, sx, sy) for r in range(rows) for c in range(cols)]
        views.append((0, 0, width / v, height / v))
        boxes = [
            ((left + c * cell) * kx, (top + r * cell) * ky, (left + (c + 1) * cell) * kx, (top + (r + 1) * cell) * ky)
            for left, top, kx, ky in views
            for r in range(self.side)
            for c in range(self.side)
        ]
        return Geometry(np.asarray(boxes, dtype=float))
