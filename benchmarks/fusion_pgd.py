"""FusionAudit PGD cost: one PGD step against a bare forward+backward of the same model and batch
(target ratio <= 1.10), and attacked items per minute.

The bare forward+backward feeds the real processor's ``pixel_values`` (with gradients enabled) to the
frozen model and back-propagates the same End-PGD loss; a PGD step adds the differentiable
preprocessing from raw pixels, the sign step and the projection. Items per minute time a full End-PGD
attack (``--steps`` steps plus the final loss) on the batch, excluding the uint8 re-check.

The preprocessing costs in proportion to the image, the model in proportion to the tokens it sees.
The tiny Qwen2-VL caps images at 112 x 112 pixels, so a large image costs it a large resize but few
tokens, which a real model (``max_pixels`` of about 1M) never has; ``--model-args max_pixels=N``
gives the tiny model a real model's view (e.g. ``--size 448 --model-args max_pixels=200704``).
Usage: python benchmarks/fusion_pgd.py [--model tiny:qwen2_vl] [--model-args k=v] [--batch 4] [--size 224]
                                       [--steps 40]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from PIL import Image

from harness.models.base import create_backend, parse_model_args
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.losses import Batch, WhiteBox, white_box
from harness.protocols.fusion.attacks.pgd import PGDConfig, pgd, pgd_step
from harness.protocols.fusion.attacks.pixels import image_to_tensor
from harness.protocols.fusion.attacks.single_view import SingleViewPreprocess


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _interleaved(fns: list[Callable[[], None]], device: torch.device, repeats: int) -> list[float]:
    """Best-of-``repeats`` time of each function, measured in alternation so load from other processes
    on a shared machine hits all of them alike (the minimum is the least disturbed run)."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="tiny:qwen2_vl")
    parser.add_argument("--model-args", default="")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=224, help="square image side in pixels")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    backend = create_backend(args.model, parse_model_args(args.model_args))
    wb = WhiteBox(white_box(backend, args.model))
    rng = np.random.default_rng(0)
    images = [
        Image.fromarray(rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8)) for _ in range(args.batch)
    ]
    messages = [[ChatMessage.user("What is the value of the blue bar?", [im])] for im in images]
    batch = wb.batch(messages, ["forty two"] * args.batch, ["seven"] * args.batch)
    loss = wb.end_loss(batch)
    x0 = [image_to_tensor(im).to(wb.device) for im in images]
    t_bare, t_step = _interleaved([_bare_pass(wb, batch), _pgd_step(loss, x0)], wb.device, args.repeats)
    cfg = PGDConfig(eps=8 / 255, alpha=1 / 255, steps=args.steps)
    start = time.perf_counter()
    pgd(x0, loss, cfg, torch.Generator().manual_seed(0))
    _sync(wb.device)
    attack_s = time.perf_counter() - start
    print(
        f"{args.model} {args.model_args} on {wb.device} ({next(wb.model.parameters()).dtype}), batch {args.batch}, "
        f"{args.size}x{args.size} images; the model sees {_view(wb, x0[0])} per image"
    )
    print(
        f"bare forward+backward: {t_bare * 1000:.1f} ms; one PGD step: {t_step * 1000:.1f} ms; "
        f"ratio {t_step / t_bare:.3f} (target <= 1.10)"
    )
    print(
        f"End-PGD, {args.steps} steps: {attack_s:.2f} s for {args.batch} items -> "
        f"{60 * args.batch / attack_s:.1f} items/minute"
    )


def _bare_pass(wb: WhiteBox, batch: Batch) -> Callable[[], None]:
    """One forward and backward pass to the processor's pixels, with no attack code around it."""
    real = {k: v for k, v in batch.inputs.items() if k in ("pixel_values", "image_grid_thw")}
    prompt_len = batch.inputs["input_ids"].shape[1]
    extended = wb._extended(batch.inputs, batch.correct)

    def bare() -> None:
        pixels = real["pixel_values"].detach().clone().requires_grad_(True)
        inputs = {**extended, **real, "pixel_values": pixels}
        logp = torch.log_softmax(wb.model(**inputs, use_cache=False).logits.float(), dim=-1)
        total = sum(
            -logp[b, prompt_len - 1 + torch.arange(len(c)), torch.tensor(c)].mean() for b, c in enumerate(batch.correct)
        )
        torch.autograd.grad(total, pixels)

    return bare


def _pgd_step(loss: Callable[[list[torch.Tensor]], torch.Tensor], x0: list[torch.Tensor]) -> Callable[[], None]:
    """One PGD step through the attack's differentiable preprocessing, each call continuing from the last."""
    state = {"x": [x.clone() for x in x0]}

    def step() -> None:
        xs = [x.detach().requires_grad_(True) for x in state["x"]]
        grads = torch.autograd.grad(loss(xs).sum(), xs)
        with torch.no_grad():
            state["x"] = [pgd_step(x, g, c, 8 / 255, 1 / 255) for x, g, c in zip(xs, grads, x0, strict=True)]

    return step


def _view(wb: WhiteBox, x: torch.Tensor) -> str:
    """What the model sees of one image: Qwen's single view is a sequence of patches; every other family's
    image keeps its pixel grid."""
    seen = wb.pre([x])["pixel_values"]
    pre = wb.pre
    if isinstance(pre, SingleViewPreprocess) and pre.qwen:
        return f"{seen.shape[0]} patches of {pre.patch_size}px"
    return f"{tuple(seen.shape[-2:])} pixels"


if __name__ == "__main__":
    main()
