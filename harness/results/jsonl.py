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
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar

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


def jsonl_lines(text: str, where: str = "the file") -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of each non-blank line of a JSONL text, within the read budget."""
    numbered = ((lineno, line) for lineno, line in enumerate(text.split("\n"), 1) if line.strip())
    yield from within_read_budget(numbered, where)


#: How long ``harness score``, ``harness submit`` and ``harness leaderboard import`` may spend reading a
#: run's files, unless ``--read-timeout`` says otherwise.
DEFAULT_READ_TIMEOUT_S = 600.0


@dataclass
class _ReadBudget:
    seconds: float
    spent: float = 0.0


_BUDGET: ContextVar[_ReadBudget | None] = ContextVar("read_budget", default=None)
T = TypeVar("T")


@contextmanager
def read_budget(seconds: float | None) -> Iterator[None]:
    """Bounds the time every reader of run files spends inside the block (None: as outside it): each line read
    through :func:`within_read_budget` counts, and the first line past ``seconds`` in all stops the reading
    with one line. Per line, so a line's own cost stays linear and small (the depth check, the parser)."""
    if seconds is None:  # an outer budget (a command's) still holds
        yield
        return
    token = _BUDGET.set(_ReadBudget(seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def within_read_budget(items: Iterable[T], where: str) -> Iterator[T]:
    """``items`` (a file's lines), refused once reading has taken longer than the budget in force."""
    budget = _BUDGET.get()
    if budget is None:
        yield from items
        return
    start = time.monotonic()
    try:
        for item in items:
            if budget.spent + time.monotonic() - start > budget.seconds:
                raise HarnessError(
                    f"{where}: reading took longer than {budget.seconds:g} s (--read-timeout); the files are too "
                    "large or too costly to read, or pass a longer --read-timeout"
                )
            yield item
    finally:
        budget.spent += time.monotonic() - start


def read_jsonl(path: Path) -> list[Any]:
    """The parsed rows of a JSONL file; a line that is not JSON (or nested too deeply) stops with its file
    and line number."""
    return [
        loads_line(line, f"{path} line {lineno}")
        for lineno, line in jsonl_lines(Path(path).read_text(encoding="utf-8"), str(path))
    ]
