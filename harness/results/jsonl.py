r"""JSON Lines, split the way the format defines it: on ``\n`` only, each line's nesting bounded.

``str.splitlines()`` also breaks on U+0085, U+2028, U+2029, form feeds and other Unicode line breaks,
which JSON strings may carry unescaped (models emit them), so it cuts a valid record in two. Every
reader of a ``.jsonl`` file in the harness goes through these helpers.

A line nested deeper than :data:`MAX_JSON_DEPTH` arrays or objects is refused before any parser, pickler
or validator recurses over it (Python's recursion limit is a few hundred frames, and a record the harness
writes is nested fewer than ten levels deep).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

MAX_JSON_DEPTH = 64
# Once escaped backslashes and quotes are gone, a string is a quote, no quote, then a quote (or the end of an
# unclosed string): one left-to-right scan, never retried from each later quote.
_STRING = re.compile(r'"[^"]*"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count).

    Linear in the text (a check that runs before the parser must not cost more than the parser): escaped
    backslashes, then escaped quotes, are dropped, strings are cut out, and the brackets left are summed
    as a running total."""
    if text.count("[") + text.count("{") == 0:
        return 0
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", unescaped))
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


def check_depth(text: str, where: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuses (one line naming ``where``) a JSON text nested deeper than ``limit`` levels."""
    if text.count("[") + text.count("{") > limit and json_depth(text) > limit:
        raise HarnessError(f"{where}: JSON nested deeper than {limit} levels; refused")


def loads_line(line: str, where: str) -> Any:
    """One JSONL line parsed, after its depth check; a line that is not JSON stops with ``where``."""
    check_depth(line, where)
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{where}: not JSON ({exc.msg}); fix or remove that line") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise HarnessError(f"{where}: not JSON ({exc})") from None


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of each non-blank line of a JSONL text."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield lineno, line


def read_jsonl(path: Path) -> list[Any]:
    """The parsed rows of a JSONL file; a line that is not JSON (or nested too deeply) stops with its file
    and line number."""
    return [
        loads_line(line, f"{path} line {lineno}")
        for lineno, line in jsonl_lines(Path(path).read_text(encoding="utf-8"))
    ]
