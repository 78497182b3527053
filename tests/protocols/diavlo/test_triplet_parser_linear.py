"""The DiaVLo triplet parser reads submitted text on the leaderboard: crafted input must not make it
quadratic, and the rewrite that made it linear keeps every parse result."""

from __future__ import annotations

import time

import pytest

from harness.protocols.diavlo.metrics import Triplet
from harness.protocols.diavlo.triplet_parser import OK, UNUSABLE, parse_triplets

SIZE = 120_000
CRAFTED = {
    "whitespace run": "a" + " " * SIZE + "b",
    "repeated subject label": "subject: " * (SIZE // 9),
    "unclosed brackets": "[" * SIZE,
    "unclosed braces": "{a " * (SIZE // 3),
    "whitespace before pipes": ("x" + " " * 1000) * (SIZE // 1001) + "|",
}


@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_120kb_parses_in_well_under_a_second(name: str) -> None:
    start = time.perf_counter()
    parsed = parse_triplets(CRAFTED[name])
    assert time.perf_counter() - start < 1.0
    assert parsed.status == UNUSABLE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dog   ->   on  ->  couch", [("dog", "on", "couch")]),
        ("dog -> -> on -> couch", [("dog", "on", "couch")]),
        ("| dog | on | couch |", [("dog", "on", "couch")]),
        ("subject: x subject: dog, relation: on, object: couch", [("x subject: dog", "on", "couch")]),
        ("subject: a b, subject: dog; predicate = on | object: couch", [("dog", "on", "couch")]),
        ('noise [1] then [["dog", "on", "couch"]] tail]', [("dog", "on", "couch")]),  # read as a line
        ('{ "subject": "dog", "relation": "on", "object": "couch" } [', [("dog", "on", "couch")]),
    ],
)
def test_linear_rewrite_keeps_results(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert list(parse_triplets(text).triplets) == [Triplet(*t) for t in expected]


def test_a_label_with_a_blank_value_is_still_the_line_s_only_reading() -> None:
    # The labelled shape matches (its subject is blank, so no triplet); the line is not re-read as pipes.
    assert parse_triplets("subject:  , relation: on, object: a | b | c").status == UNUSABLE
    assert parse_triplets("a | b | c").status == OK


def test_json_nested_deeper_than_the_decoder_is_not_an_error() -> None:
    assert parse_triplets("[" * 100_000 + "]" * 100_000).status == UNUSABLE
