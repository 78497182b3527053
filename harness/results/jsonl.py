r"""JSON Lines, split the way the format defines it: on ``\n`` only.

``str.splitlines()`` also breaks on U+0085, U+2028, U+2029, form feeds and other Unicode line breaks,
which JSON strings may carry unescaped (models emit them), so it cuts a valid record in two. Every
reader of a ``.jsonl`` file in the harness goes through these helpers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of each non-blank line of a JSONL text."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield lineno, line


def read_jsonl(path: Path) -> list[Any]:
    """The parsed rows of a JSONL file; a line that is not JSON stops with its file and line number."""
    rows = []
    for lineno, line in jsonl_lines(Path(path).read_text(encoding="utf-8")):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise HarnessError(f"{path} line {lineno}: not JSON ({exc.msg}); fix or remove that line") from None
    return rows
