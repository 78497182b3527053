"""Nothing silent, nothing raw: the leaderboard's data folder, plot axes in the unit their labels use."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.cli.leaderboard import _leaderboard_settings
from harness.data import default_data_dir


def test_the_leaderboard_refuses_a_data_dir_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-data"
    argv = ["leaderboard", "import", str(tmp_path), "--db", f"sqlite:///{tmp_path / 'b.sqlite'}"]
    assert main([*argv, "--data-dir", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --data-dir {missing}: no such folder; the leaderboard checks each submission's docs against the "
        "datasets there (harness build NAME writes them to the data dir, the default)"
    )


def test_the_leaderboard_reads_the_harness_data_dir_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    args = build_parser().parse_args(["leaderboard", "serve"])
    assert _leaderboard_settings(args).data_dir == default_data_dir() == tmp_path / "cache" / "data"
    export = build_parser().parse_args(["leaderboard", "export", "--output", str(tmp_path / "site")])
    assert _leaderboard_settings(export).data_dir is None  # an export reads no dataset


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
