r"""What the leaderboard publishes of a submission never shows the submitter's local filesystem paths: a
path (``/home/me/models/llava``, ``~/runs``, ``C:\Users\me\x``) inside any published string becomes its
base name, so a local model folder shows as ``hf:llava`` and a Hub id (``hf:org/name``) stays as it is.
The stored record keeps the submission byte for byte; only what pages, tables, the API and the served
``results.json`` show is redacted."""

from __future__ import annotations

import json
import re
from typing import Any, overload

# an absolute POSIX path of two or more parts (not a URL's "//host", not "a/b" inside a word, not an HTML
# closing tag) or a Windows drive path
_PATH = re.compile(r"(?<![/\w.<])(?:~|/[^\s/\"'<>,;()\[\]{}]+)/[^\s\"'<>,;()\[\]{}]+|\b[A-Za-z]:\\[^\s\"'<>,;]+")


def _base_name(match: re.Match[str]) -> str:
    parts = [p for p in re.split(r"[\\/]", match.group(0)) if p and p != "~"]
    return parts[-1] if parts else "~"


@overload
def redact(value: str) -> str: ...
@overload
def redact(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def redact(value: list[Any] | tuple[Any, ...]) -> list[Any]: ...
@overload
def redact(value: Any) -> Any: ...
def redact(value: Any) -> Any:
    """``value`` (a string, or JSON made of dicts, lists and strings) with every local path cut to its
    base name; keys are redacted as well as values."""
    if isinstance(value, str):
        return _PATH.sub(_base_name, value)
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def public_results(data: bytes) -> bytes:
    """A submitted ``results.json`` as the server publishes it (paths redacted); unreadable bytes as they are."""
    try:
        return json.dumps(redact(json.loads(data)), indent=2).encode()
    except ValueError:
        return data
