r"""The one rule for characters a shown string may hold: no control, format (bidi overrides and isolates,
zero-width characters), line or paragraph separator, or surrogate code point, anywhere a name or other
submitted text is printed or served (``harness tasks``, the leaderboard's pages, CSV and API).

Such a character can make a name read as another (U+202E turns ``gpt\u202eevil`` around on screen),
hide part of it or end a terminal line; :func:`visible` shows each as its ``\uXXXX`` escape, and
:func:`display_problem` is the one-line refusal where a name is given (a submitter's, a run's model
name). Task, group and tag names follow a stricter rule still (``harness.taskspec.names``), which this
one's characters can never pass.
"""

from __future__ import annotations

import re

# Unicode's categories Cc, Cf, Zl, Zp and Cs (tests/test_display_names.py checks this list against
# unicodedata, so a newer Unicode version that adds to them shows up as a failing test).
_HIDDEN_RANGES = (
    "\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
HIDDEN = re.compile(f"[{_HIDDEN_RANGES}]")


def _escape(match: re.Match[str]) -> str:
    r"""The character as Python's ``repr`` escapes it (``\x00``, ``\u202e``, ``\U000e0041``), so a name
    refused by the task-name rule (shown by ``repr``) and one shown here read alike."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_LAYOUT = frozenset("\n\r\t")


def _escape_but_layout(match: re.Match[str]) -> str:
    return match.group() if match.group() in _LAYOUT else _escape(match)


def visible(text: str, keep_layout: bool = False) -> str:
    """``text`` as it may be shown: every control, format, separator or surrogate character as its escape.
    ``keep_layout`` keeps newlines, carriage returns and tabs (a multi-line message, a CSV text); a name
    keeps none of them."""
    return HIDDEN.sub(_escape_but_layout if keep_layout else _escape, text)


def display_problem(kind: str, text: str) -> str | None:
    """Why ``text`` cannot be a ``kind`` (a model name, a submitter name) shown to others, or None."""
    found = HIDDEN.search(text)
    if found is None:
        return None
    return (
        f"{kind} '{visible(text)}' holds a control or bidi character ({_escape(found)}); "
        "names may not hold control, format (bidi, zero-width) or separator characters"
    )


def short_repr(value: object, limit: int = 80) -> str:
    """A value's ``repr`` for a one-line message, cut at ``limit`` characters (a task's list may be huge)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
