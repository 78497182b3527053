"""The one pattern every task, group and tag name follows.

A task name becomes part of file names (``samples_<task>.jsonl``), URLs and terminal output, so it holds
only ASCII letters, digits, ``_``, ``-`` and ``.``, starts with a letter, a digit or ``_``, and is at most
:data:`MAX_NAME_LENGTH` characters: no path separators, and none of the control, bidi or other invisible
characters the display rule (``harness.display``) keeps out of every shown string. A group's members
follow this rule too (``TaskRegistry``).
"""

from __future__ import annotations

import re

#: The longest task, group or tag name (the samples file name adds 14 characters).
MAX_NAME_LENGTH = 128
NAME_PATTERN = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_.\-]{{0,{MAX_NAME_LENGTH - 1}}}")
NAME_RULE = (
    f"letters, digits, '_', '-' and '.', starting with a letter, a digit or '_', at most {MAX_NAME_LENGTH} characters"
)


def name_problem(kind: str, name: object) -> str | None:
    """Why ``name`` is not a valid ``kind`` (task, group or tag) name, or None when it is one.

    The name is shown by ``repr``, so a NUL or a bidi override is printed escaped, never as itself."""
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        return None
    return f"{kind} name {name!r} is not allowed (names are {NAME_RULE})"
