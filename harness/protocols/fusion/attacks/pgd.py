"""L-infinity projected gradient descent (Madry et al., 2018), exactly the standard form:
random start ``x = clip(x0 + U(-eps, eps), 0, 1)``; each step ``x <- x + alpha * sign(grad L(x))``,
then projection onto the ball ``|x - x0|_inf <= eps`` and onto ``[0, 1]``; the last iterate is returned.
``L`` is a loss to *maximise* (each attack defines its own).

Memory fallback (``noise_scale < 1``, the paper's option for large images): the perturbation lives on
a grid downscaled by ``noise_scale`` and is upsampled (bilinear) to full resolution before it is added,
``x = clip(x0 + up(delta), 0, 1)``; PGD then steps and projects ``delta`` onto ``[-eps, eps]``. Bilinear
upsampling keeps ``up(delta)`` inside the ball.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Loss = Callable[[list[Any]], Any]  # images -> per-item losses (a 1-D tensor), to be maximised


@dataclass(frozen=True)
class PGDConfig:
    """The L-infinity PGD settings: radius ``eps`` and step ``alpha`` (in [0, 1] pixel units), the steps, a
    random start in the ball, and ``noise_scale`` < 1 to optimise a smaller perturbation that is upsampled."""

    eps: float = 8 / 255
    alpha: float = 1 / 255
    steps: int = 40
    random_start: bool = True
    noise_scale: float = 1.0


def pgd_step(x: Any, grad: Any, x0: Any, eps: float, alpha: float) -> Any:
    """One standard step: ascend along the gradient's sign, project onto the eps-ball and [0, 1]."""
    import torch

    stepped = x + alpha * grad.sign()
    return torch.clamp(torch.min(torch.max(stepped, x0 - eps), x0 + eps), 0.0, 1.0)


def _upsample(delta: Any, size: tuple[int, int]) -> Any:
    import torch.nn.functional as F

    return F.interpolate(delta[None], size=size, mode="bilinear", align_corners=False)[0]


def pgd(x0: list[Any], loss: Loss, config: PGDConfig, generator: Any) -> tuple[list[Any], list[float], list[float]]:
    """Attack a batch of images (each ``(3, H, W)`` in [0, 1], sizes may differ).

    Returns the adversarial images and each item's loss before the first and after the last step."""
    import torch

    eps, alpha = config.eps, config.alpha
    low_res = config.noise_scale < 1.0
    if low_res:
        shapes = [
            (max(1, round(x.shape[1] * config.noise_scale)), max(1, round(x.shape[2] * config.noise_scale))) for x in x0
        ]
        variables = [torch.zeros(3, *s, device=x.device) for s, x in zip(shapes, x0, strict=True)]
        centre = [torch.zeros_like(v) for v in variables]
    else:
        variables = [x.clone() for x in x0]
        centre = x0
    if config.random_start:
        variables = [
            (v + (torch.rand(v.shape, generator=generator, device="cpu").to(v.device) * 2 - 1) * eps) for v in variables
        ]
        variables = [v.clamp(-eps, eps) if low_res else v.clamp(0.0, 1.0) for v in variables]

    def render(vs: list[Any]) -> list[Any]:
        if not low_res:
            return vs
        return [(x + _upsample(v, x.shape[1:])).clamp(0.0, 1.0) for x, v in zip(x0, vs, strict=True)]

    first: list[float] = []
    last: list[float] = []
    for step in range(config.steps):
        variables = [v.detach().requires_grad_(True) for v in variables]
        values = loss(render(variables))
        if step == 0:
            first = values.detach().float().cpu().tolist()
        grads = torch.autograd.grad(values.sum(), variables)
        with torch.no_grad():
            if low_res:
                variables = [
                    torch.clamp(v + alpha * g.sign(), -eps, eps) for v, g in zip(variables, grads, strict=True)
                ]
            else:
                variables = [pgd_step(v, g, c, eps, alpha) for v, g, c in zip(variables, grads, centre, strict=True)]
    with torch.no_grad():
        adversarial = [x.detach() for x in render(variables)]
        last = loss(adversarial).float().cpu().tolist() if config.steps else []
    return adversarial, first, last
