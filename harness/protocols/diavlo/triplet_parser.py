"""A tolerant parser for (subject, relation, object) triplets in free model output.

Accepted shapes, one triplet per line or several per line (list markers such as ``1.``, ``-``, ``*``
are stripped first):

- JSON anywhere in the text: ``[["dog", "on", "couch"]]`` or
  ``[{"subject": .., "relation"|"predicate": .., "object": ..}]`` (or a single such object);
- bracketed: ``(dog, sitting on, couch)``, ``<dog; on; couch>``, ``[dog, on, couch]``;
- arrows: ``dog -> sitting on -> couch`` (also ``→``, ``=>``, ``--``);
- pipes: ``dog | on | couch``;
- labelled: ``subject: dog, relation: on, object: couch``.

A part longer than ``MAX_WORDS`` (8) words is not a concept or relation, so such a match is dropped.

The parser reads submitted text on the leaderboard, so it runs in time linear in its input: no pattern
is retried from every position of a long run (see ``benchmarks/triplet_parser.py``).

Loss accounting: an empty (whitespace-only) response is ``empty``; a non-empty response with no
triplet in any accepted shape is ``unusable``; otherwise ``ok``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.protocols.diavlo.metrics import Triplet

OK, EMPTY, UNUSABLE = "ok", "empty", "unusable"
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s*")
_BRACKETED = re.compile(r"\(([^()<>\[\]]+)\)|<([^()<>\[\]]+)>|\[([^()<>\[\]]+)\]")
MAX_WORDS = 8
# A separator with the whitespace around it. The `(?<!\s)\s+` branch starts only at the head of a whitespace
# run, so a run with no separator after it is scanned once, not once per position (``\s*`` would be quadratic).
_ARROW = re.compile(r"(?<!\s)\s+(?:->|\u2192|=>|--)\s*|(?:->|\u2192|=>|--)\s*")
_PIPE = re.compile(r"(?<!\s)\s+\|\s*|\|\s*")
# The labels' values keep their leading whitespace (``_clean`` strips it): a leading ``\s*`` before a class
# that also takes whitespace would be retried at every split of the run.
_LABELLED = re.compile(
    r"subject\s*[:=](?P<s>[^,;|]+)[,;|]\s*(?:relation|predicate)\s*[:=](?P<r>[^,;|]+)[,;|]\s*"
    r"object\s*[:=](?P<o>[^,;|\n]+)",
    re.IGNORECASE,
)
_SUBJECT = re.compile(r"subject\s*[:=]", re.IGNORECASE)
_FIELD_END = re.compile(r"[,;|]")


@dataclass(frozen=True)
class ParsedTriplets:
    """The unique triplets found in one response and its loss status: ``ok``, ``empty`` or ``unusable``."""

    triplets: tuple[Triplet, ...]
    status: str


def _clean(part: str) -> str:
    return part.strip().strip("\"'`*").strip().rstrip(".").strip()


def _make(parts: list[str]) -> Triplet | None:
    parts = [_clean(p) for p in parts]
    if len(parts) != 3 or not all(parts) or any(len(p.split()) > MAX_WORDS for p in parts):
        return None
    return Triplet(*parts)


def _json_span(text: str) -> str | None:
    r"""The text from the first ``[`` to the last ``]`` (or ``{`` .. ``}``, whichever opens first): what the
    greedy search ``\[.*\]|\{.*\}`` finds, without rescanning the rest of the text from every opener."""
    starts = []
    for opener, closer in ("[]", "{}"):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            starts.append((start, end))
    if not starts:
        return None
    start, end = min(starts)
    return text[start : end + 1]


def _labelled(line: str) -> re.Match[str] | None:
    """The first ``subject: .., relation: .., object: ..`` in ``line``. Only the first ``subject:`` of each
    comma/semicolon/pipe-separated field is tried: a later one in the same field can match only if that
    one does, and trying each would rescan the field once per occurrence."""
    position = 0
    while (subject := _SUBJECT.search(line, position)) is not None:
        if (found := _LABELLED.match(line, subject.start())) is not None:
            return found
        field_end = _FIELD_END.search(line, subject.end())
        if field_end is None:
            return None
        position = field_end.end()
    return None


def _from_json(text: str) -> list[Triplet]:
    span = _json_span(text)
    if span is None:
        return []
    try:
        data = json.loads(span)
    except (json.JSONDecodeError, RecursionError):  # nested deeper than the decoder goes: not a triplet list
        return []
    items = data if isinstance(data, list) else [data]
    out = []
    for item in items:
        if isinstance(item, list) and all(isinstance(v, str) for v in item):
            triplet = _make(item)
        elif isinstance(item, dict):
            relation = item.get("relation", item.get("predicate"))
            values = [item.get("subject"), relation, item.get("object")]
            triplet = _make([str(v) for v in values]) if all(isinstance(v, str) for v in values) else None
        else:
            triplet = None
        if triplet is not None:
            out.append(triplet)
    return out


def _from_line(line: str) -> list[Triplet]:
    line = _LIST_MARKER.sub("", line)
    groups = ["".join(g) for g in _BRACKETED.findall(line)]
    found = [m for m in (_make(re.split(r"[,;]", g)) for g in groups) if m]
    if found:
        return found
    labelled = _labelled(line)
    if labelled:
        triplet = _make([labelled["s"], labelled["r"], labelled["o"]])
        return [triplet] if triplet else []
    for splitter in (_ARROW, _PIPE):
        parts = [p for p in splitter.split(line.strip().strip("|")) if p.strip()]
        if len(parts) == 3:
            triplet = _make(parts)
            return [triplet] if triplet else []
    return []


def parse_triplets(text: str | None) -> ParsedTriplets:
    """All triplets in ``text`` (duplicates removed, order kept) and the loss status."""
    if text is None or not text.strip():
        return ParsedTriplets((), EMPTY)
    triplets = _from_json(text)
    if not triplets:
        triplets = [t for line in text.splitlines() for t in _from_line(line)]
    unique = tuple(dict.fromkeys(triplets))
    return ParsedTriplets(unique, OK if unique else UNUSABLE)
