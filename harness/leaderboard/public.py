r"""What the leaderboard publishes of a submission never shows the submitter's local filesystem paths: a
path (``/home/me/models/llava``, ``~/runs``, ``C:\Users\me\x``) inside any published string becomes its
base name, so a local model folder shows as ``hf:llava`` and a Hub id (``hf:org/name``) stays as it is.
No published string holds a control or bidi character (``harness.display``: each is shown as its escape),
and a credential a run recorded before the harness cleared them is shown as the marker that it was
given (``harness.secrets``; such a run is refused when it is submitted now).
The stored record keeps the submission byte for byte; only what pages, tables, the API and the served
``results.json`` show is redacted."""

from __future__ import annotations

import json
import re
from typing import Any, overload

from harness.display import visible
from harness.secrets import redact_run, redact_text

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
    base name, every URL's password cleared and every control or bidi character escaped; keys are
    redacted as well as values."""
    if isinstance(value, str):
        return visible(redact_text(_PATH.sub(_base_name, value)), keep_layout=True)
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def shown_name(text: str | None) -> str | None:
    """A name as the board shows it (a model, a family, a submitter): redacted, and not even a newline
    or a tab kept."""
    return None if text is None else visible(redact(text))


def public_results(data: bytes) -> bytes:
    """A submitted ``results.json`` as the server publishes it (paths redacted, credentials as the
    marker); unreadable bytes as they are."""
    try:
        raw = json.loads(data)
    except ValueError:
        return data
    return json.dumps(redact(redact_run(raw) if isinstance(raw, dict) else raw), indent=2).encode()
