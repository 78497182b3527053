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

Loss accounting: an empty (whitespace-only) response is ``empty``; a non-empty response with no
triplet in any accepted shape is ``unusable``; otherwise ``ok``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.metrics.diavlo import Triplet

OK, EMPTY, UNUSABLE = "ok", "empty", "unusable"
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s*")
_BRACKETED = re.compile(r"\(([^()<>\[\]]+)\)|<([^()<>\[\]]+)>|\[([^()<>\[\]]+)\]")
MAX_WORDS = 8
_ARROW = re.compile(r"\s*(?:->|\u2192|=>|--)\s*")
_LABELLED = re.compile(
    r"subject\s*[:=]\s*(?P<s>[^,;|]+)[,;|]\s*(?:relation|predicate)\s*[:=]\s*(?P<r>[^,;|]+)[,;|]\s*"
    r"object\s*[:=]\s*(?P<o>[^,;|\n]+)", re.IGNORECASE)
_JSON = re.compile(r"(\[.*\]|\{.*\})", re.DOTALL)


@dataclass(frozen=True)
class ParsedTriplets:
    triplets: tuple[Triplet, ...]
    status: str


def _clean(part: str) -> str:
    return part.strip().strip("\"'`*").strip().rstrip(".").strip()


def _make(parts: list[str]) -> Triplet | None:
    parts = [_clean(p) for p in parts]
    if len(parts) != 3 or not all(parts) or any(len(p.split()) > MAX_WORDS for p in parts):
        return None
    return Triplet(*parts)


def _from_json(text: str) -> list[Triplet]:
    match = _JSON.search(text)
    if not match:
        return []
    try:
        data = json.loads(match.group(1))
    except json.JSONDecodeError:
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
    labelled = _LABELLED.search(line)
    if labelled:
        triplet = _make([labelled["s"], labelled["r"], labelled["o"]])
        return [triplet] if triplet else []
    for splitter in (_ARROW, re.compile(r"\s*\|\s*")):
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
