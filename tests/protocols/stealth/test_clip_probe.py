"""The CLIP semantic-projection probe: its formulas by hand, and end to end on the tiny random CLIP."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.protocols.stealth import clip_probe as cp


def test_axis_directions_and_projections_by_hand() -> None:
    # T(w+) = (2, 0) -> (1, 0); T(w-) = (0, 3) -> (0, 1); a = (1, -1) / sqrt 2
    axes = cp.axis_directions(np.array([[2.0, 0.0]]), np.array([[0.0, 3.0]]))
    assert axes.tolist()[0] == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2)])
    # V = (3, 4) / 5 -> s = (0.6 - 0.8) / sqrt 2
    s = cp.projections(np.array([[3.0, 4.0], [0.0, 5.0]]), axes)
    assert s[:, 0].tolist() == pytest.approx([-0.2 / math.sqrt(2), -1 / math.sqrt(2)])


def test_hue_effect_is_the_mean_shift_from_the_same_word_in_black() -> None:
    # 2 words x (black, red-136) x 1 axis: s = [[0.1, 0.4], [0.3, 0.2]] -> shifts 0.3 and -0.1 -> mean 0.1
    result = cp.ProbeResult(
        "m",
        ["a", "b"],
        {"black": (0, 0, 0), "red-136": (136, 0, 0)},
        [("good", "bad")],
        np.array([[[0.1], [0.4]], [[0.3], [0.2]]]),
    )
    assert result.hue_effect() == {"red-136": {"good/bad": pytest.approx(0.1)}}


def test_probe_colors_follow_the_testset_channel_rule() -> None:
    colors = cp.probe_colors()
    assert len(colors) == 1 + 6 * 3 and next(iter(colors)) == "black"
    assert colors["red-136"] == (136, 0, 0) and colors["cyan-34"] == (0, 34, 34)
    assert colors["yellow-85"] == (85, 85, 0) and colors["magenta-136"] == (136, 0, 136)
    assert len(cp.AXES) == 10  # the paper's ten bipolar axes


def test_tiny_clip_probe_matches_the_definition_and_draws_the_figure(tmp_path: Path) -> None:
    import torch

    from harness.fonts import resolve_font

    result = cp.clip_probe("tiny:clip", words=["apple", "river"], intensities=(136,))
    assert result.projections.shape == (2, 7, 10)
    assert list(result.hue_effect()) == [f"{h}-136" for h in ("red", "green", "blue", "yellow", "cyan", "magenta")]
    # recompute s_k(river, blue-136) on the good/bad axis from CLIPModel's own normalised embeddings
    model, processor = cp.load_clip("tiny:clip")
    image = cp.render_word("river", (0, 0, 136), resolve_font())
    assert (0, 0, 136) in {p for _, p in image.getcolors(224 * 224)}  # fully covered pixels carry the fill
    inputs = processor(text=["good", "bad"], images=[image], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model(**inputs)
    t, v = out.text_embeds.numpy(), out.image_embeds.numpy()[0]
    a = (t[0] - t[1]) / np.linalg.norm(t[0] - t[1])
    assert result.projections[1, list(result.colors).index("blue-136"), 1] == pytest.approx(float(v @ a), abs=1e-5)
    path = cp.hue_effect_figure(result, tmp_path / "clip_probe.png")
    assert path.stat().st_size > 0


def test_clip_probe_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="CLIP probe: cannot load"):
        cp.load_clip(str(tmp_path / "no-such-model"))
    with pytest.raises(HarnessError, match="at least one word"):
        cp.clip_probe("tiny:clip", words=["x"], axes=())
    with pytest.raises(HarnessError, match="at least one word"):
        cp.clip_probe("tiny:clip", words=[])


def test_tiny_clip_is_refused_as_a_chat_model() -> None:
    from harness.models import create_backend

    with pytest.raises(HarnessError, match="tiny:clip is not a chat model to evaluate: it is an image-text encoder"):
        create_backend("tiny:clip")
