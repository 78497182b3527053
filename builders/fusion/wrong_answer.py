"""The deterministic task-matched wrong answer of an item, fixed from its reference before any attack.

Rule (by the kind of the first reference answer):

- **yes/no** (MME, or any answer that is ``yes``/``no``): the opposite, in the reference's casing.
- **number** (an optional sign, digits with optional thousands commas, optional decimals, optional
  ``%``): a year (a 4-digit integer from 1900 to 2100) becomes the next year; any other number
  ``v`` becomes ``v + max(step, round(0.25 |v|))`` with ``step`` one unit of its last decimal, in the
  same format (decimals, commas, ``%``). The change is at least 25% (or one unit), so it is never
  inside ChartQA's 5% relaxed-accuracy tolerance.
- **text**: (1) when the question offers two single-word alternatives (``... A or B?``) and the
  answer is one of them, the other one; (2) else another text answer of the same source with the same
  number of words and casing pattern, picked by ``sha256(item id)`` among the sorted candidates;
  (3) else any other text answer of the source, picked the same way; (4) else ``"none"``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

NUMBER = re.compile(r"^(?P<sign>[-+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?(?P<pct>%?)$")
ALTERNATIVES = re.compile(r"\b([\w'-]+)\s+or\s+([\w'-]+)\s*\??\s*$", re.IGNORECASE)


def answer_kind(source: str, answer: str) -> str:
    """The kind of an answer: ``yesno`` (MME, or yes/no), ``number`` or ``text``; it picks how a wrong
    answer is made."""
    text = answer.strip()
    if source == "mme" or text.lower() in {"yes", "no"}:
        return "yesno"
    return "number" if NUMBER.match(text) else "text"


def _flip_yes_no(answer: str) -> str:
    text = answer.strip()
    other = "no" if text.lower() == "yes" else "yes"
    if text.isupper():
        return other.upper()
    return other.capitalize() if text[:1].isupper() else other


def wrong_number(answer: str) -> str:
    """A plausible wrong number in the answer's format (sign, decimals, commas, percent); a year
    becomes the next year."""
    m = NUMBER.match(answer.strip())
    if m is None:
        raise ValueError(f"{answer!r} is not a number")
    decimals = len(m["dec"] or "")
    commas = "," in m["int"]
    value = float(f"{m['sign']}{m['int'].replace(',', '')}.{m['dec'] or '0'}")
    if decimals == 0 and not m["pct"] and not commas and len(m["int"]) == 4 and 1900 <= value <= 2100:
        return str(int(value) + 1)
    step = 10.0**-decimals
    new = value + max(step, round(0.25 * abs(value), decimals))
    text = f"{new:,.{decimals}f}" if commas else f"{new:.{decimals}f}"
    return f"{'+' if m['sign'] == '+' else ''}{text}{m['pct']}"


def _pattern(text: str) -> tuple[int, str]:
    words = text.split()
    case = (
        "upper"
        if text.isupper()
        else "title"
        if all(w[:1].isupper() for w in words)
        else "lower"
        if text.islower()
        else "mixed"
    )
    return len(words), case


def _pick(candidates: Sequence[str], item_id: str) -> str:
    ordered = sorted(set(candidates))
    return ordered[int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % len(ordered)]


def wrong_text(answer: str, question: str, item_id: str, pool: Sequence[str]) -> tuple[str, str]:
    """The wrong text answer and which step of the rule produced it."""
    norm = answer.strip().lower()
    alt = ALTERNATIVES.search(question.strip())
    if alt:
        a, b = alt.group(1), alt.group(2)
        if norm == a.lower():
            return b, "question_alternative"
        if norm == b.lower():
            return a, "question_alternative"
    others = [p for p in pool if p.strip().lower() != norm and answer_kind("", p) == "text"]
    same = [p for p in others if _pattern(p) == _pattern(answer.strip())]
    if same:
        return _pick(same, item_id), "same_kind_from_source"
    if others:
        return _pick(others, item_id), "other_text_from_source"
    return "none", "fallback"


def wrong_answer(
    source: str, answers: Sequence[str], question: str, item_id: str, text_pool: Sequence[str]
) -> tuple[str, str, str]:
    """``(wrong answer, answer kind, rule step)`` for one item; ``text_pool`` holds the source's answers."""
    reference = answers[0].strip()
    kind = answer_kind(source, reference)
    if kind == "yesno":
        return _flip_yes_no(reference), kind, "opposite"
    if kind == "number":
        return wrong_number(reference), kind, "number_shift"
    wrong, step = wrong_text(reference, question, item_id, text_pool)
    return wrong, kind, step
