"""Which families the white-box attacks support, and the differentiable copy of each one's image
preprocessing: ``images`` (a list of ``(3, H, W)`` float tensors in [0, 1]) -> the model's image
inputs, with gradients flowing back to the raw pixels and a forward value equal to the real
processor's output (pinned with ``torch.equal`` in ``tests/protocols/fusion/test_attacks.py``).

Each family's copy lives in its own module (``FAMILIES``) and implements :class:`ImagePreprocess`;
:mod:`harness.protocols.fusion.attacks.pixels` holds what they share. The paper's families without a
copy are refused with the reason (``UNSUPPORTED``).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pixels import Geometry

#: transformers model_type -> "module:Class" of its differentiable preprocessing (imported on use).
FAMILIES = {
    "qwen2_vl": "single_view:SingleViewPreprocess",
    "qwen2_5_vl": "single_view:SingleViewPreprocess",
    "qwen3_vl": "single_view:SingleViewPreprocess",
    "qwen3_5": "single_view:SingleViewPreprocess",
    "llava": "single_view:SingleViewPreprocess",
    "gemma3": "single_view:SingleViewPreprocess",
    "llava_next": "anyres:AnyResPreprocess",
    "gemma4": "patch_budget:PatchBudgetPreprocess",
    "idefics3": "splitting:SplittingPreprocess",
    "smolvlm": "splitting:SplittingPreprocess",
    "blip-2": "qformer:QFormerPreprocess",
    "instructblip": "qformer:QFormerPreprocess",
    "deepseek_vl": "padded_square:PaddedSquarePreprocess",
    "deepseek_vl_hybrid": "padded_square:PaddedSquarePreprocess",
}
SUPPORTED = tuple(FAMILIES)
#: The paper's other families, each with why it has no differentiable copy here (yet).
UNSUPPORTED = {
    "qwen": "Qwen-VL-Chat runs on its checkpoint's remote code (trust_remote_code), whose processor has no "
    "differentiable copy",
}


class ImagePreprocess(Protocol):
    """One family's differentiable preprocessing."""

    def __call__(self, images: list[Any]) -> dict[str, Any]:
        """The model's image inputs (``pixel_values`` and the family's companions) for these images."""
        ...

    def geometry(self, width: int, height: int) -> Geometry:
        """The footprint of every image token of one image, in the order the model sees them."""
        ...


def unsupported_message(model_type: str) -> str:
    """One line: the supported families, and why ``model_type`` is not one of them when known."""
    why = f": {UNSUPPORTED[model_type]}" if model_type in UNSUPPORTED else " (not a paper family)"
    return f"white-box attacks support {', '.join(SUPPORTED)}; not {model_type!r}{why}"


def differentiable_preprocess(processor: Any, model_type: str, dtype: Any = None) -> ImagePreprocess:
    """The differentiable preprocessing of ``model_type``'s processor (refused on the family before the
    processor is read)."""
    if model_type not in FAMILIES:
        raise HarnessError(unsupported_message(model_type))
    module, name = FAMILIES[model_type].split(":")
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    preprocess: ImagePreprocess = cls(processor, model_type, dtype=dtype)
    return preprocess
