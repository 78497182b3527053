"""JSONL is split on "\n" only: responses holding U+0085 / U+2028 (which models emit, and which JSON
keeps unescaped) read back intact through every reader and are accepted by the leaderboard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.leaderboard.bundle import parse_bundle, read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.service import Settings, submit_files
from harness.results.jsonl import check_depth, json_depth, read_jsonl
from harness.results.schema import read_samples
from tests.leaderboard_fixtures import tiny_runs

ODD = "line\u0085next\u2028sep\u2029para\x0cfeed"


def test_unicode_line_breaks_survive_read_samples_and_submission(data_dir: Path, tmp_path: Path) -> None:
    (run,) = [r for r in tiny_runs(data_dir, tmp_path / "runs") if "qwen2_vl" in r.parent.name]
    edited = tmp_path / "edited"
    shutil.copytree(run, edited)
    path = edited / "samples_shapes_color.jsonl"
    records = read_samples(edited, "shapes_color")
    records[0].responses[0] += ODD
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")  # written raw, not escaped

    assert read_samples(edited, "shapes_color")[0].responses[0].endswith(ODD)
    bundle = parse_bundle(read_run_files(edited))
    assert bundle.samples["shapes_color"][0].responses[0].endswith(ODD)
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    try:
        outcome = submit_files(db, read_run_files(edited), "alice", Settings(data_dir=data_dir))
    finally:
        db.close()
    assert not outcome.duplicate and set(outcome.checks) == {"shapes_color", "shapes_kind", "shapes"}


def test_read_jsonl_keeps_records_whole_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"text": ODD}, ensure_ascii=False) + "\n\n" + "{broken\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"rows.jsonl line 3: not JSON"):
        read_jsonl(path)
    path.write_text(json.dumps({"text": ODD}, ensure_ascii=False) + "\r\n", encoding="utf-8")
    assert read_jsonl(path) == [{"text": ODD}]


def test_the_depth_check_is_linear_on_a_line_of_escaped_quotes() -> None:
    """65 ``[`` then an unclosed string of ``\\"``: the scanner that restarted a string match at every quote
    took 21 s on 64 KB (quadratic); a linear check reads 1 MB in milliseconds (bound kept generous)."""
    import time

    line = "[" * 65 + '"' + '\\"' * 2**19
    start = time.perf_counter()
    with pytest.raises(HarnessError, match="nested deeper than 64 levels"):
        check_depth(line, "probe")
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('[["a[", {"b": "\\"]["}]]', 3),
        ('"[["', 0),
        ('["\\\\", ["x"]]', 2),
        ('["\\\\\\"[", 1]', 1),
        ('{"a": "]]]]"}', 1),
        ('[{"a":[{"b":[]}]}]', 5),
        ("[" * 70, 70),
    ],
)
def test_json_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth
