"""One rule for the characters a shown string may hold (``harness.display``): a group's member names follow
the task-name rule, and ``harness tasks`` never prints a control or bidi character as itself. The
leaderboard's side (pages, CSV, API, token names, model names) is in tests/leaderboard/test_leaderboard_trust.py."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest

from harness.cli import main
from harness.display import HIDDEN, display_problem, visible
from tests.conftest import write


def test_the_hidden_characters_are_unicodes_control_format_and_separator_categories() -> None:
    expected = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in {"Cc", "Cf", "Zl", "Zp", "Cs"}}
    assert {c for c in range(sys.maxunicode + 1) if HIDDEN.match(chr(c))} == expected


def test_visible_escapes_and_display_problem_refuses() -> None:
    assert visible("gpt\u202eevil\x00\U000e0041") == "gpt\\u202eevil\\x00\\U000e0041"
    assert visible("a\x00\u202eb") == repr("a\x00\u202eb")[1:-1]  # as the task-name rule shows a name
    assert visible("two\nlines\tand\u2066", keep_layout=True) == "two\nlines\tand\\u2066"
    assert display_problem("model name", "tiny:llava") is None
    assert display_problem("model name", "a\u200bb") == (
        "model name 'a\\u200bb' holds a control or bidi character (\\u200b); "
        "names may not hold control, format (bidi, zero-width) or separator characters"
    )


def test_harness_tasks_refuses_group_members_with_control_or_bidi_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "g" / "liar.yaml", 'group: liar\ntask:\n  - "shapes_color\\0"\n  - "shapes\\u202ekind"\n')
    write(tmp_path / "g" / "odd.yaml", "# Reads \u202eright to left\ntask: odd_task\ndataset_path: vlm-audit/shapes\n")
    assert main(["tasks", "--include-path", str(tmp_path / "g")]) == 0
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "\x00" not in shown and "\u202e" not in shown
    assert "group member name 'shapes_color\\x00' is not allowed" in captured.err
    assert "Reads \\u202eright to left" in captured.out
    assert "liar" not in captured.out  # a group with a bad member is not registered
