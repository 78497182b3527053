"""``harness compare`` on two tiny-model runs of each protocol's task (its dataset built by the session's
fixtures, two docs each): every task is compared or says why not, and the files hold the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.compare import CompareReport
from tests.protocols.vista.test_build_and_eval import vista_dir  # noqa: F401 (the VISTA build fixture)

# protocol -> (its build fixture, the task compared, extra eval flags)
PROTOCOL_TASKS = {
    "vista": ("vista_dir", "vista", ["--repeats", "2", "--judge", "embedding"]),
    "stealth": ("stealth_dir", "stealth_short", []),
    "mist": ("mist_dir", "mist", []),
    "diavlo": ("diavlo_dir", "diavlo_vqav2", []),
    "fusion": ("fusion_dir", "fusion_typo", []),
}


@pytest.mark.parametrize("protocol", sorted(PROTOCOL_TASKS))
def test_compare_runs_of_each_protocol(
    protocol: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    fixture, task, extra = PROTOCOL_TASKS[protocol]
    request.getfixturevalue(fixture)
    out = tmp_path / "runs"
    argv = ["eval", "--model", "tiny:qwen2_vl", "--model", "tiny:llava", "--tasks", task, "--limit", "2"]
    argv += ["--gen-kwargs", "max_new_tokens=4", *extra, "--output", str(out), "--verbosity", "quiet"]
    assert main(argv) == 0
    runs = sorted(str(p.parent) for p in out.glob("*/*/results.json"))
    capsys.readouterr()
    assert main(["compare", *runs, "--output", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    report = CompareReport.model_validate_json((tmp_path / "cmp" / "compare.json").read_text())
    assert [r.model for r in report.runs] == ["tiny:llava", "tiny:qwen2_vl"]
    assert report.comparisons or report.notes, printed
    for c in report.comparisons:
        assert c.task == task and c.stats.n + c.dropped >= 2
        assert f"| tiny:llava | tiny:qwen2_vl | {task} |" in printed
    for note in report.notes:
        assert note in printed
