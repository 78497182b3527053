"""CSV cells a spreadsheet reads as text: a submitted or model-written string that starts like a formula
(``=``, ``+``, ``-``, ``@``, a tab or a carriage return) would otherwise run as one when the CSV is opened
(CSV injection). Every CSV the harness serves from submitted data writes its text cells through this."""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """Keep a spreadsheet from reading a submitted string as a formula (a leading quote makes it text);
    anything else is returned as it is."""
    if isinstance(value, str) and value[:1] in FORMULA_STARTS:
        return "'" + value
    return value
