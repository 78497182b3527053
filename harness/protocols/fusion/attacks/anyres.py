"""The differentiable preprocessing of LLaVA-NeXT's any-resolution tiling.

Per image, the processor picks the best grid resolution among ``image_grid_pinpoints``, resizes the
image into it keeping the aspect ratio, zero-pads it to the grid (centred), cuts it into crop-size
tiles and puts a base view (the whole image squashed to the base size) in front; every view then goes
through the processor's per-view resize, center crop and rescale/normalise, and a batch is zero-padded
to its largest tile count (``pixel_values`` ``(B, views, 3, H, W)`` with ``image_sizes``).

The model sees the base view's patch tokens, then the tiles' patch grid laid out over the padded
canvas with the rows or columns of padding cut away (its ``unpad_image``) and an ``image_newline``
token at each row end. :meth:`AnyResPreprocess.geometry` lists every one of those tokens in that order:
a base token covers its share of the whole image, a grid token its canvas cell mapped back to the image
(clipped to it: the part over the padding shows no image), a newline token has an empty box.

Each step calls the processor's own methods (best resolution, resize, padding, tile split, per-view
resize and crop, rescale/normalise, batch padding) and the model's own ``unpad_image``; both resizes
are quantised with a straight-through gradient (:mod:`harness.protocols.fusion.attacks.pixels`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry, QuantisedResize, require_torchvision, resize_adjoint


class AnyResPreprocess:
    """``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> LLaVA-NeXT's ``pixel_values`` and
    ``image_sizes`` (module docstring)."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        require_torchvision(ip)
        self.ip, self.model_type, self.dtype = ip, model_type, dtype
        size, crop = ip.size, ip.crop_size
        # the base view's size and the tile size, as the processor's _preprocess chooses them
        self.base_size = (size.height, size.width) if size.height and size.width else (size.shortest_edge,) * 2
        self.tile = int(crop.height if crop and crop.height else size.height or size.shortest_edge)
        self.pinpoints = [list(p) for p in ip.image_grid_pinpoints]
        if (crop.height, crop.width) != (self.tile, self.tile) or any(
            h % self.tile or w % self.tile for h, w in self.pinpoints
        ):
            raise HarnessError(
                f"white-box attacks need square {self.tile}-pixel tiles that divide every grid "
                f"resolution; this LLaVA-NeXT processor has crop size {crop.height}x{crop.width} "
                f"and image_grid_pinpoints {self.pinpoints}"
            )
        # the model keeps each view's patch tokens only: a CLS token is there exactly when the default
        # strategy drops it
        strategy, extra = processor.vision_feature_select_strategy, processor.num_additional_image_tokens
        if extra != (strategy == "default"):
            raise HarnessError(
                f"white-box attacks place patch tokens only; this LLaVA-NeXT processor keeps "
                f"{extra - (strategy == 'default')} extra token(s) per view "
                f"(vision_feature_select_strategy={strategy!r}, num_additional_image_tokens={extra})"
            )
        self.patch_size = int(processor.patch_size)
        self.adjoint = resize_adjoint(ip.resample)

    def _resize(self, images: Any, size: Any) -> Any:
        """The processor's resize of ``images`` in [0, 1] (quantised, straight-through), in [0, 255]."""
        return QuantisedResize.apply(
            images, partial(self.ip.resize, size=size, resample=self.ip.resample), self.adjoint
        )

    def _per_view(self, views: Any) -> Any:
        """The processor's per-view resize, center crop and rescale/normalise of ``views`` in [0, 255]."""
        ip = self.ip
        if ip.do_resize:
            views = self._resize(views / 255.0, ip.size)
        if ip.do_center_crop:
            views = ip.center_crop(views, ip.crop_size)
        return ip.rescale_and_normalize(
            views, ip.do_rescale, ip.rescale_factor, ip.do_normalize, ip.image_mean, ip.image_std
        )

    def _views(self, x: Any) -> Any:
        """One image's views ``(1 + tiles, 3, crop, crop)``: the base view, then the tiles row by row."""
        from transformers.image_processing_utils import get_patch_output_size, select_best_resolution
        from transformers.image_transforms import divide_to_patches
        from transformers.image_utils import ChannelDimension, SizeDict

        best = select_best_resolution(tuple(x.shape[-2:]), self.pinpoints)
        new_h, new_w = get_patch_output_size(x, best, ChannelDimension.FIRST)
        canvas = self.ip._pad_for_patching(self._resize(x[None], SizeDict(height=new_h, width=new_w))[0], best)
        tiles = torch.stack(divide_to_patches(canvas, self.tile))
        base = self._resize(x[None], SizeDict(height=self.base_size[0], width=self.base_size[1]))
        return torch.cat([self._per_view(base), self._per_view(tiles)])

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """Each image's views, zero-padded to the batch's largest view count, with the images' (H, W)."""
        pixel_values = torch.stack(self.ip._pad_for_batching([self._views(x) for x in images]))
        sizes = torch.tensor([list(x.shape[-2:]) for x in images], dtype=torch.long, device=pixel_values.device)
        return {"pixel_values": pixel_values.to(self.dtype) if self.dtype else pixel_values, "image_sizes": sizes}

    def _view_tokens(self, box: tuple[float, float, float, float], view_h: int, view_w: int) -> np.ndarray:
        """Token boxes ``(rows, cols, 4)`` of a view that resampled ``box`` to ``view_h x view_w`` pixels,
        through the per-view resize and center crop."""
        ip = self.ip
        rh, rw = ip.resize(torch.zeros(1, 3, view_h, view_w), ip.size).shape[-2:] if ip.do_resize else (view_h, view_w)
        ch, cw = (ip.crop_size.height, ip.crop_size.width) if ip.do_center_crop else (rh, rw)
        # center_crop's offset: int((image - crop) / 2) when cropping, minus the left/top pad when padding
        top = int((rh - ch) / 2.0) if ch <= rh else -((ch - rh) // 2)
        left = int((rw - cw) / 2.0) if cw <= rw else -((cw - rw) // 2)
        x0, y0, x1, y1 = box
        sx, sy, p = (x1 - x0) / rw, (y1 - y0) / rh, self.patch_size
        return np.array(
            [
                [
                    [
                        x0 + (left + c * p) * sx,
                        y0 + (top + r * p) * sy,
                        x0 + (left + (c + 1) * p) * sx,
                        y0 + (top + (r + 1) * p) * sy,
                    ]
                    for c in range(cw // p)
                ]
                for r in range(ch // p)
            ]
        )

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token (in the order the model sees them) on the original image."""
        from transformers.image_processing_utils import get_patch_output_size, select_best_resolution
        from transformers.image_utils import ChannelDimension
        from transformers.models.llava_next.modeling_llava_next import unpad_image

        base = self._view_tokens((0, 0, width, height), *self.base_size).reshape(-1, 4)
        best_h, best_w = select_best_resolution((height, width), self.pinpoints)
        new_h, new_w = get_patch_output_size(
            torch.empty(3, height, width, device="meta"), (best_h, best_w), ChannelDimension.FIRST
        )
        paste_x, paste_y = self.ip._get_padding_size((new_h, new_w), (best_h, best_w))[:2]
        t = self.tile
        tile = self._view_tokens((0, 0, t, t), t, t)
        # canvas boxes of every tile's tokens, laid out as the model's grid: (tile row, token row, tile col, token col)
        offsets = np.array([[[j * t, i * t] * 2 for j in range(best_w // t)] for i in range(best_h // t)])
        grid = (offsets[:, None, :, None] + tile[None, :, None]).reshape(best_h // t * tile.shape[0], -1, 4)
        # canvas -> image pixels, clipped to the image
        scale = np.array([width / new_w, height / new_h] * 2)
        grid = np.clip((grid - [paste_x, paste_y] * 2) * scale, 0, [width, height] * 2)
        kept = unpad_image(torch.from_numpy(grid).permute(2, 0, 1), (height, width)).permute(1, 2, 0).numpy()
        rows = np.concatenate([kept, np.zeros((kept.shape[0], 1, 4))], axis=1)  # the row-end newline tokens
        return Geometry(np.concatenate([base, rows.reshape(-1, 4)]).astype(float))
