"""DiaVLo's plots: a plot with nothing to show is not drawn, and one warning says which and why."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.protocols.diavlo.plots import (
    NO_CLASSES,
    NO_EFFECTS,
    NO_POINTS,
    class_shares_plot,
    concept_effects_plot,
    similarity_performance_plot,
)


def test_plots_with_nothing_to_show_are_not_drawn_and_say_why(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    unusable = [{"similarity": None, "performance": 1.0}]
    assert class_shares_plot({("m", "diavlo_vqav2"): {"n": 0}}, tmp_path / "c.png") is None
    assert similarity_performance_plot({"m": unusable}, tmp_path / "s.png") is None
    assert concept_effects_plot({"m": [{"estimate": None}]}, "flip", tmp_path / "e.png") is None
    assert list(tmp_path.iterdir()) == []
    assert [r.getMessage() for r in caplog.records] == [
        f"c.png not drawn: {NO_CLASSES}",
        f"s.png not drawn: {NO_POINTS}",
        f"e.png not drawn: {NO_EFFECTS}",
    ]
    shares = {"n": 2, "Aligned": 0.5, "Expanded": 0.5, "Divergent": 0.0, "Unnamed": 0.0}
    drawn = class_shares_plot({("m", "diavlo_vqav2"): shares}, tmp_path / "c.png")
    assert drawn == tmp_path / "c.png" and drawn.stat().st_size > 0
    points = similarity_performance_plot({"m": [{"similarity": 0.5, "performance": 1.0}]}, tmp_path / "s.png")
    assert points is not None and points.stat().st_size > 0
