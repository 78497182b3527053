"""``harness score``: what it rewrites, the originals it keeps, ``--output`` and truncated run files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import read_run


def run_copy(tmp_path: Path, files: dict[str, bytes]) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name, data in files.items():
        (run_dir / name).write_bytes(data)
    return run_dir


def tamper(run_dir: Path) -> bytes:
    """A claimed figure that the samples do not support; returns the tampered results.json bytes."""
    raw = json.loads((run_dir / "results.json").read_text())
    raw["results"]["shapes_color"]["exact_match,none"] = 0.99
    (run_dir / "results.json").write_text(json.dumps(raw))
    return (run_dir / "results.json").read_bytes()


def test_score_in_place_says_what_it_rewrote_and_keeps_the_originals_once(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    claimed = tamper(run_dir)
    samples = (run_dir / "samples_shapes_color.jsonl").read_bytes()
    assert main(["score", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "rewrote" in out and "results.json" in out and "samples_shapes_color.jsonl" in out
    assert f"{run_dir / 'original'}" in out
    assert (run_dir / "original" / "results.json").read_bytes() == claimed
    assert (run_dir / "original" / "samples_shapes_color.jsonl").read_bytes() == samples
    assert read_run(run_dir).results["shapes_color"]["exact_match,none"] != 0.99
    assert main(["score", str(run_dir)]) == 0  # a second score never overwrites the first claim
    assert (run_dir / "original" / "results.json").read_bytes() == claimed
    assert "as first written are kept in" in capsys.readouterr().out


def test_score_output_writes_elsewhere_and_leaves_the_run_untouched(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    tamper(run_dir)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    out_dir = tmp_path / "rescored"
    assert main(["score", str(run_dir), "--output", str(out_dir)]) == 0
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    assert read_run(out_dir).results["shapes_color"]["exact_match,none"] != 0.99
    assert (out_dir / "samples_shapes_color.jsonl").is_file() and str(out_dir) in capsys.readouterr().out
    assert main(["score", str(run_dir), "--output", str(out_dir)]) == 2  # never over another run's results
    assert "already holds a results.json" in capsys.readouterr().err


@pytest.mark.parametrize("cut", ["mid-way", "empty"])
def test_score_on_a_truncated_results_json_fails_in_one_line(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str], cut: str
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    data = saved_run["results.json"]
    (run_dir / "results.json").write_bytes(data[: len(data) // 2] if cut == "mid-way" else b"")
    assert main(["score", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{run_dir / 'results.json'}" in err and "not valid JSON" in err


def test_score_with_a_cut_last_samples_line_warns_and_keeps_the_rest(
    tmp_path: Path, saved_run: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    data = saved_run["samples_shapes_color.jsonl"]
    (run_dir / "samples_shapes_color.jsonl").write_bytes(data[: len(data) - 40])
    assert main(["score", str(run_dir)]) == 0
    assert f"{run_dir / 'samples_shapes_color.jsonl'}: line 3 is cut" in caplog.text
    assert read_run(run_dir).counts["shapes_color"].samples == 2


def test_score_with_a_broken_samples_line_mid_file_fails_in_one_line(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    lines = saved_run["samples_shapes_color.jsonl"].decode().splitlines(keepends=True)
    lines[1] = lines[1][:30] + "\n"
    (run_dir / "samples_shapes_color.jsonl").write_text("".join(lines))
    assert main(["score", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{run_dir / 'samples_shapes_color.jsonl'}: line 2" in err


def test_score_with_a_missing_samples_file_fails_in_one_line(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy(tmp_path, saved_run)
    (run_dir / "samples_shapes_color.jsonl").unlink()
    assert main(["score", str(run_dir)]) == 2
    assert f"{run_dir / 'samples_shapes_color.jsonl'}: missing" in capsys.readouterr().err


def test_score_writes_the_intervals_eval_wrote_and_drops_a_baseline_that_is_gone(
    tmp_path: Path, saved_run: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    """Re-scoring decides each figure's interval as eval did (seeded, from the same samples); a run made with
    --baseline compares again, and says so when its baseline is no longer there."""
    run_dir = run_copy(tmp_path, saved_run)
    raw = json.loads((run_dir / "results.json").read_text())
    assert raw["intervals"]["shapes_color"]["exact_match,none"]["level"] == 0.95
    raw["config"]["baseline"] = str(tmp_path / "gone")
    (run_dir / "results.json").write_text(json.dumps(raw))
    assert main(["score", str(run_dir), "--output", str(tmp_path / "again")]) == 0
    rescored = read_run(tmp_path / "again")
    assert {t: {k: i.model_dump() for k, i in v.items()} for t, v in rescored.intervals.items()} == raw["intervals"]
    assert rescored.baseline == {} and "the baseline comparison is left out: --baseline" in caplog.text
