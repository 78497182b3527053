"""The differentiable preprocessing of the Q-Former families: BLIP-2 and InstructBLIP.

Their ``BlipImageProcessor`` squashes every image to one fixed size and rescales/normalises it, the
single-view path of :class:`~harness.protocols.fusion.attacks.single_view.SingleViewPreprocess`, whose
forward value equals the processor's (``tests/protocols/fusion/test_attacks_qformer.py``). What differs is
what the language model sees: not patches but ``num_query_tokens`` Q-Former query tokens, each a learned
query that cross-attends to every token of the vision encoder, so a query token has no footprint of its own.

OAR. The paper reports OAR for all its 18 models, BLIP2-OPT-2.7B and InstructBLIP-Vicuna-7B included (the
L1 mean increase of +13%), as the text tokens' attention to the image patches; it does not say how the
patches are reached through a Q-Former. Here the text tokens reach them only through the query tokens, so
each query's attention is passed on to the vision tokens in proportion to that query's Q-Former
cross-attention (averaged over heads and cross-attention layers; :meth:`QFormerPreprocess.spread`): the
footprints are then the vision encoder's patch grid over the squashed image (:meth:`QFormerPreprocess.geometry`),
and its class token, which has none, is left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry
from harness.protocols.fusion.attacks.single_view import SingleViewPreprocess

#: The patch size of the EVA ViT-g/14 vision encoder of every BLIP-2 and InstructBLIP checkpoint (the processor
#: does not carry it; a model with another grid gets no OAR: its vision-token count differs from the geometry's).
VIT_PATCH = 14


class QFormerPreprocess(SingleViewPreprocess):
    """``images`` -> ``pixel_values`` (one fixed-size view each, as :class:`SingleViewPreprocess`), with the
    vision-token geometry and the query-to-patch attention of a Q-Former model (module docstring)."""

    def __init__(self, processor: Any, model_type: str, dtype: Any = None) -> None:
        ip = processor.image_processor
        for option in ("do_pad", "do_center_crop"):
            if getattr(ip, option, False):
                raise HarnessError(
                    f"white-box attacks copy the BLIP processor's plain resize; load it without {option}"
                )
        super().__init__(processor, model_type, dtype=dtype)
        self.patch_size = VIT_PATCH

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every vision-encoder token (the class token first, without one; then the patch grid
        row by row) on the original image, which the processor squashes to its fixed size."""
        rh, rw = (self.size.height, self.size.width) if self.ip.do_resize else (height, width)
        sx, sy = width / rw, height / rh
        cell = self.patch_size
        boxes = [(0.0, 0.0, 0.0, 0.0)] + [
            (c * cell * sx, r * cell * sy, (c + 1) * cell * sx, (r + 1) * cell * sy)
            for r in range(rh // cell)
            for c in range(rw // cell)
        ]
        return Geometry(np.asarray(boxes, dtype=float))

    def spread(self, model: Any, inputs: Any, attention: Any) -> Any:
        """``attention`` on the query tokens (one image) passed on to the vision tokens: query ``k``'s share goes
        to vision token ``p`` in proportion to ``k``'s cross-attention on ``p`` (needs eager attention)."""
        mixing = query_cross_attention(model, inputs)[0]
        return attention.to(mixing.dtype) @ mixing


def query_cross_attention(model: Any, inputs: Any) -> Any:
    """Per image, each query token's Q-Former cross-attention over the vision encoder's tokens, averaged over
    heads and cross-attention layers: ``(images, queries, vision tokens)``, rows summing to 1."""
    import torch

    captured: list[Any] = []

    def hook(_module: Any, _args: Any, output: Any) -> None:
        captured.append(output[1])  # (images, heads, queries, vision tokens); None unless eager

    layers = [m for name, m in model.qformer.named_modules() if name.endswith("crossattention.attention")]
    handles = [m.register_forward_hook(hook) for m in layers]
    text = {k: v for k, v in inputs.items() if k.startswith("qformer_")}
    try:
        with torch.no_grad():
            model.get_image_features(inputs["pixel_values"], **text)
    finally:
        for h in handles:
            h.remove()
    if not captured or any(c is None for c in captured):
        raise HarnessError("the Q-Former returned no cross-attention weights (eager attention needed)")
    return torch.stack([c.float().mean(dim=1) for c in captured]).mean(dim=0)
