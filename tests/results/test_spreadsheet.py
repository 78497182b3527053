"""CSV cells made safe for spreadsheets: a string that starts like a formula becomes text."""

from __future__ import annotations

import pytest

from harness.results.spreadsheet import spreadsheet_safe


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("tiny:llava", "tiny:llava"),
        ("a=b", "a=b"),
        ("", ""),
        (-2, -2),
        (None, None),
    ],
)
def test_a_formula_start_is_quoted_and_anything_else_kept(value: object, safe: object) -> None:
    assert spreadsheet_safe(value) == safe
