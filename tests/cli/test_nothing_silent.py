"""Nothing silent: the leaderboard's data folder, refused when missing and the harness's by default."""

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
