r"""Text a backend returns that cannot be written as UTF-8, made writable without losing the answer.

A lone surrogate (``\ud800``, a valid JSON escape an OpenAI-compatible server may send) or a byte string
that is not UTF-8 cannot be stored in SQLite, serialised by pydantic or written to a samples file; each
such character becomes U+FFFD, the replacement character a byte-level decoder already shows for bytes
that are not a whole character, and the sample that held it is marked (``SampleRecord.text_replaced``),
so one unusual answer never costs the run the answers already produced.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def writable(text: str | bytes) -> tuple[str, int]:
    """``text`` as UTF-8 can hold it, and how many characters were replaced (0: it was writable as it was).

    Bytes are decoded as UTF-8, each byte that does not belong to a character becoming U+FFFD."""
    if isinstance(text, bytes | bytearray):
        decoded = bytes(text).decode("utf-8", errors="replace")
        return decoded, decoded.count(REPLACEMENT) - bytes(text).count(REPLACEMENT.encode())
    if text.isascii():
        return text, 0
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.subn(REPLACEMENT, text)
    return text, 0


def writable_text(text: str | bytes) -> str:
    """:func:`writable`'s text alone, for messages (an error's text may quote an answer)."""
    return writable(text)[0]
