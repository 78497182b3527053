import re

import pytest

from harness.errors import HarnessError
from harness.metrics.squad import contains_decoy, max_f1, normalize_answer, read_score, token_f1


def test_normalisation_follows_the_squad_v11_script() -> None:
    assert normalize_answer("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"


def test_token_f1_hand_computed() -> None:
    # pred {denver, broncos, won}, gold {denver, broncos}: P = 2/3, R = 1 -> F1 = 0.8
    assert token_f1("Denver Broncos won", "the Denver Broncos") == pytest.approx(0.8)
    assert token_f1("Paris", "London") == 0.0
    # multiset overlap: pred "x y y" vs gold "y y z": common 2 -> P 2/3 R 2/3 -> 2/3
    assert token_f1("x y y", "y y z") == pytest.approx(2 / 3)
    assert max_f1("Broncos", ["Denver Broncos", "Broncos"]) == 1.0
    assert max_f1("anything", []) == 0.0


def test_empty_answers_score_zero_as_in_v11() -> None:
    # v1.1's f1_score returns 0 when nothing is shared, which covers every empty side
    assert token_f1("", "x") == 0.0 and token_f1("x", "") == 0.0
    assert token_f1("", "") == 0.0
    assert token_f1("The.", "a") == 0.0  # both normalise to empty: still 0 under v1.1
    assert max_f1("", ["the", "Paris"]) == 0.0


def test_ier_counts_a_decoy_only_as_whole_words() -> None:
    assert contains_decoy("It was the river Seine.", "Seine")
    assert contains_decoy("the Seine-side quay", "seine")  # a hyphen bounds a word
    assert not contains_decoy("Seinez", "Seine")
    assert not contains_decoy("Glenbrooks", "Glenbrook") and not contains_decoy("brook", "Glenbrook")
    assert contains_decoy("New York City", "new york")
    assert not contains_decoy("York, New", "new york")  # the decoy's words in order
    assert contains_decoy("the theatre", "the")  # articles are words here, not normalised away
    assert not contains_decoy("", "Seine")
    with pytest.raises(HarnessError, match=re.escape("decoy '...' has no word")):
        contains_decoy("x", "...")


def test_ocr_read_score_half_credit_only_for_the_word_inside_the_prediction() -> None:
    assert read_score("Apple", "apple") == 1.0
    assert read_score("Apple.", "apple") == 1.0  # normalised first
    assert read_score("The word is apple", "apple") == 0.5  # target in prediction
    assert read_score("apples", "apple") == 0.5  # a substring, as the paper's "substring match"
    assert read_score("app", "apple") == 0.0  # prediction inside the target: no credit
    assert read_score("pear", "apple") == 0.0
    assert read_score("", "apple") == 0.0
    with pytest.raises(HarnessError, match="target word 'the' is empty"):
        read_score("the", "the")
