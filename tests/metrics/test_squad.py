import pytest

from harness.metrics.squad import contains_decoy, max_f1, normalize_answer, read_score, token_f1


def test_normalisation_follows_the_squad_script() -> None:
    assert normalize_answer("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"


def test_token_f1_hand_computed() -> None:
    # pred {denver, broncos, won}, gold {denver, broncos}: P = 2/3, R = 1 -> F1 = 0.8
    assert token_f1("Denver Broncos won", "the Denver Broncos") == pytest.approx(0.8)
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("", "x") == 0.0
    # multiset overlap: pred "a b b" vs gold "b b c": common 2 -> P 2/3 R 2/3 -> 2/3
    assert token_f1("x y y", "y y z") == pytest.approx(2 / 3)
    assert max_f1("Broncos", ["Denver Broncos", "Broncos"]) == 1.0
    assert max_f1("anything", []) == 0.0


def test_decoy_containment_and_read_score() -> None:
    assert contains_decoy("It was the river Seine.", "Seine")
    assert not contains_decoy("Seinez", "Seine")
    assert contains_decoy("New York City", "new york")
    assert read_score("Apple", "apple") == 1.0
    assert read_score("The word is apple", "apple") == 0.5
    assert read_score("app", "apple") == 0.5
    assert read_score("pear", "apple") == 0.0
    assert read_score("", "apple") == 0.0
