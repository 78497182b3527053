"""VISTA's plots: an axis in the unit its bar labels use."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_refusal_kinds_axis_is_in_percent_as_its_bar_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.protocols.vista import plots

    kept = []
    monkeypatch.setattr(plots.plt, "close", kept.append)  # keep the figure to read its labels
    breakdown = {"m": {"asian": {"empty": 0.01, "disclaimer": 0.0, "decline": 0.02}, "white": {}}}
    plots.refusal_kinds(breakdown, tmp_path / "refusal_kinds.png")
    (fig,) = kept
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.get_ylabel() == "share of responses (%)"
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks[0] == "0.0%" and ticks[-1] == "5.0%"  # an axis of 0 to 0.05 reads 0% to 5%, not 0.0 to 0.05
    assert sorted(t.get_text() for t in ax.texts) == ["0.0%", "3.0%"]
