"""Bounds on what a run folder, an upload or a task may make the harness do: nesting in ``results.json``
is one line (as in the JSONL readers), the upload rate limit is kept in the database, and per-request
lists (stop strings) are capped."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.test_score import run_copy


@pytest.mark.parametrize("depth", [500, 2000])
def test_score_on_a_deeply_nested_results_json_is_one_line_and_writes_nothing(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    raw = (run_dir / "results.json").read_text()
    nested = raw.replace('"configs": {', '"nested": ' + "[" * depth + "]" * depth + ', "configs": {', 1)
    assert nested != raw
    (run_dir / "results.json").write_text(nested)
    before = sorted(p.name for p in run_dir.iterdir())
    assert main(["score", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "results.json: JSON nested deeper than 64 levels; refused" in err
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no original/ left behind
