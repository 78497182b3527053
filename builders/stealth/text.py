"""The authored lexicons and neutral frames of the short and long sentiment subsets."""

from __future__ import annotations

import random
from dataclasses import dataclass

POSITIVE = (
    "joyful wonderful delightful brilliant cheerful excellent lovely pleasant graceful generous kind gentle "
    "hopeful radiant vibrant charming splendid superb marvelous fantastic friendly happy calm peaceful bright "
    "warm inspiring thrilling elegant beautiful successful healthy proud grateful caring honest loyal brave "
    "clever fresh sunny sweet tender lively glorious magnificent admirable fabulous uplifting comforting "
    "encouraging refreshing rewarding harmonious trustworthy thoughtful playful serene vivid triumphant"
).split()
NEGATIVE = (
    "awful terrible horrible dreadful miserable gloomy painful cruel bitter hostile angry sad lonely anxious "
    "fearful ugly nasty rude selfish dishonest broken filthy toxic tragic disastrous harsh grim dismal hateful "
    "wicked boring tedious clumsy careless stubborn greedy jealous arrogant cowardly corrupt foul rotten stale "
    "sour bleak dull hopeless worthless shameful annoying frustrating disgusting depressing alarming chaotic "
    "sickly weary tense savage sinister"
).split()
NOUNS = (
    "teacher neighbor driver clerk student farmer painter doctor visitor manager pilot baker writer "
    "musician gardener engineer"
).split()
PLACES = (
    "station market library harbor office garden museum bakery school bridge hotel kitchen square "
    "theater workshop village"
).split()
EVENTS = "festival meeting journey conference holiday rehearsal tournament ceremony".split()
VERBS = "met greeted visited followed watched joined called noticed".split()

# Short-sentence designs: the order of sentiment slots and the intended polarity by construction.
SHORT_PATTERNS = {
    "positive": ("PNP", "PPN", "NPP", "PNPP"),
    "negative": ("NPN", "NNP", "PNN", "NPNN"),
    "neutral": ("PN", "NP", "PNNP", "NPPN"),
}


@dataclass(frozen=True)
class Word:
    """One rendered word and its role: positive, negative or neutral (styling targets the first two)."""

    text: str
    role: str


def _adjective(kind: str, rng: random.Random, used: set[str]) -> Word:
    pool = [w for w in (POSITIVE if kind == "P" else NEGATIVE) if w not in used]
    word = rng.choice(pool)
    used.add(word)
    return Word(word, "positive" if kind == "P" else "negative")


def _plain(text: str) -> list[Word]:
    return [Word(t, "neutral") for t in text.split()]


def short_sentence(pattern: str, rng: random.Random) -> list[Word]:
    """A neutral frame with one sentiment adjective per noun phrase, in the pattern's order."""
    used: set[str] = set()
    phrases = []
    for kind in pattern:
        phrases.append([_adjective(kind, rng, used), Word(rng.choice(NOUNS), "neutral")])
    words = _plain("The") + phrases[0] + _plain(rng.choice(VERBS))
    words += _plain("a") + phrases[1]
    for extra in phrases[2:]:
        words += _plain("and a") + extra
    words += _plain(f"near the {rng.choice(PLACES)}.")
    return words


def long_sentence(first: str, rng: random.Random) -> list[Word]:
    """Three adjectives of polarity ``first`` in the first half, three of the other in the second."""
    used: set[str] = set()
    second = "N" if first == "P" else "P"
    a = [_adjective(first, rng, used) for _ in range(3)]
    b = [_adjective(second, rng, used) for _ in range(3)]
    n = rng.sample(NOUNS, 4)
    p = rng.sample(PLACES, 2)
    return [
        *_plain(f"During the first part of the {rng.choice(EVENTS)}, the"),
        a[0],
        *_plain(f"{n[0]} greeted a"),
        a[1],
        *_plain(f"{n[1]} beside the"),
        a[2],
        *_plain(f"{p[0]}, and later in the evening the"),
        b[0],
        *_plain(f"{n[2]} {rng.choice(VERBS)} a"),
        b[1],
        *_plain(f"{n[3]} near the"),
        b[2],
        *_plain(f"{p[1]}."),
    ]


def short_designs(n: int, rng: random.Random) -> list[tuple[str, list[Word]]]:
    """``n`` (intended polarity, words) pairs, polarities cycling so the classes stay balanced."""
    out = []
    polarities = list(SHORT_PATTERNS)
    for i in range(n):
        polarity = polarities[i % 3]
        out.append((polarity, short_sentence(rng.choice(SHORT_PATTERNS[polarity]), rng)))
    return out


def long_designs(n: int, rng: random.Random) -> list[tuple[str, list[Word]]]:
    """``n`` (first-half polarity, words) pairs: half positive-first, half negative-first."""
    return [
        ("positive" if i % 2 == 0 else "negative", long_sentence("P" if i % 2 == 0 else "N", rng)) for i in range(n)
    ]
