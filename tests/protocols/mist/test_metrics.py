"""Hand-computed MIST figures on a two-item judge and a three-annotator panel."""

import pytest

from harness.errors import HarnessError
from harness.protocols.mist import metrics as mist

# i1 is figurative (its misleading image depicts the literal sense), i2 literal; one technique.
LABELS = {
    ("i1", "t1", "none"): 0,
    ("i1", "t1", "aligned-ignore"): 0,
    ("i1", "t1", "aligned-silent"): 1,
    ("i1", "t1", "misleading-ignore"): 2,
    ("i1", "t1", "misleading-silent"): 1,
    ("i2", "t1", "none"): 3,
    ("i2", "t1", "aligned-ignore"): 3,
    ("i2", "t1", "aligned-silent"): 3,
    ("i2", "t1", "misleading-ignore"): 3,
    ("i2", "t1", "misleading-silent"): None,  # unparsed
}
SENSES = {"i1": "figurative", "i2": "literal"}


def test_change_and_control_rates() -> None:
    assert mist.change_rate(LABELS, "aligned") == pytest.approx(1 / 4)  # only i1 silent moved (0 -> 1)
    assert mist.change_rate(LABELS, "misleading") == pytest.approx(2 / 3)  # i2 silent unparsed: 3 pairs
    assert mist.change_rate(LABELS, "misleading", "ignore") == pytest.approx(1 / 2)
    assert mist.control_rate(LABELS, "aligned") == pytest.approx(1 / 2)  # i1: 0 vs 1
    assert mist.control_rate(LABELS, "misleading") == 1.0  # i1: 2 vs 1; i2 has no pair


def test_direction_same_side_and_image_following() -> None:
    # Ignore arm (the paper's): i1 aligned 0 vs misleading 2 (toward literal, across the divide); i2 3 vs 3.
    counts = mist.direction_counts(LABELS, SENSES)
    assert counts == mist.DirectionCounts(arm="ignore", cells=2, disagreeing=1, toward=1, same_side=0)
    assert counts.disagreement_rate == 0.5 and counts.direction == 1.0 and counts.same_side_fraction == 0.0
    assert mist.direction(LABELS, SENSES) == 1.0 and mist.same_side_fraction(LABELS, SENSES) == 0.0
    # Silent arm: i1 1 vs 1, i2's misleading label unparsed -> one cell, no disagreement.
    silent = mist.direction_counts(LABELS, SENSES, arm="silent")
    assert (silent.cells, silent.disagreeing, silent.direction) == (1, 0, None)
    assert mist.image_following_ratio(LABELS, SENSES, "misleading") == 1.0  # i1 ignore: 0 -> 2, up
    assert mist.image_following_ratio(LABELS, SENSES, "misleading", arm="silent") == 1.0  # i1: 0 -> 1
    assert mist.image_following_ratio(LABELS, SENSES, "aligned") is None  # nothing moved under ignore
    assert mist.image_following_ratio(LABELS, SENSES, "aligned", arm="silent") == 0.0  # 0 -> 1, away
    assert mist.direction({}, SENSES) is None
    with pytest.raises(HarnessError, match="unknown instruction arm 'both'"):
        mist.direction(LABELS, SENSES, arm="both")


def test_direction_counts_one_cell_per_item_prompt_and_judge_as_the_paper() -> None:
    """13 judges x 200 items x 4 prompts = 10,400 cells; 1,776 disagree, 657 of them toward (37%)."""
    disagree = [136] * 12 + [144]  # per judge, summing to 1,776
    toward = [50] * 12 + [57]  # summing to 657
    per_judge = []
    for d, k in zip(disagree, toward, strict=True):
        labels: dict = {}
        senses = {f"i{n}": "figurative" for n in range(200)}
        for n in range(200):
            for t, technique in enumerate(("zero_shot", "few_shot", "cot", "few_shot_cot")):
                cell = 4 * n + t
                aligned, misleading = (0, 1) if cell < k else (1, 0) if cell < d else (0, 0)
                labels[(f"i{n}", technique, "aligned-ignore")] = aligned
                labels[(f"i{n}", technique, "misleading-ignore")] = misleading
                # the silent arm always disagrees; it must not be counted alongside the ignore arm
                labels[(f"i{n}", technique, "aligned-silent")] = 0
                labels[(f"i{n}", technique, "misleading-silent")] = 3
        per_judge.append(mist.direction_counts(labels, senses))
    assert all(c.cells == 800 for c in per_judge)
    assert sum(c.cells for c in per_judge) == 10_400
    assert sum(c.disagreeing for c in per_judge) == 1_776
    assert round(sum(c.disagreeing for c in per_judge) / 10_400, 3) == 0.171
    assert round(sum(c.toward for c in per_judge) / 1_776, 2) == 0.37
    # 0 -> 1 (toward literal) and 1 -> 0 (away) both stay on the figurative side
    assert all(c.same_side == c.disagreeing for c in per_judge)


def test_agreement_with_the_human_majority() -> None:
    assert mist.majority_label([0, 0, 1]) == 0
    assert mist.majority_label([0, 1]) is None and mist.majority_label([]) is None
    majority = {"i1": 0, "i2": 3}
    assert mist.agreement(LABELS, majority, "none") == 1.0
    assert mist.agreement(LABELS, majority, "aligned") == pytest.approx(3 / 4)
    assert mist.agreement(LABELS, majority, "misleading") == pytest.approx(1 / 3)
    assert mist.agreement(LABELS, {"i1": None, "i2": 3}, "none") == 1.0  # no-majority items left out


def test_panel_agreement_fleiss_hand_computed_and_alpha() -> None:
    panel = {"A": {"i1": 0, "i2": 3}, "B": {"i1": 0, "i2": 3}, "C": {"i1": 1, "i2": 3}}
    # P1 = 2/6, P2 = 1 -> P = 2/3; p_j = (2, 1, 0, 3)/6 -> Pe = 7/18; kappa = (2/3 - 7/18)/(11/18) = 5/11
    out = mist.panel_agreement(panel)
    assert out["fleiss_kappa"] == pytest.approx(5 / 11)
    assert out["items_complete"] == 2 and out["annotators"] == 3
    perfect = mist.panel_agreement({"A": {"i1": 0, "i2": 3, "i3": 1}, "B": {"i1": 0, "i2": 3}})
    assert perfect["krippendorff_alpha"] == pytest.approx(1.0)  # missing labels are allowed
    assert mist.side(1) == "figurative" and mist.side(2) == "literal"


def test_label_parsing_takes_the_final_answer_and_never_guesses() -> None:
    assert mist.parse_label("Fully Literal") == 3
    assert mist.parse_label("The idiom could be fully figurative, but the image... Final answer: WF") == 1
    assert mist.parse_label("Answer: figurative  and literal.") == 2
    assert mist.parse_label("F&L") == 2 and mist.parse_label("(FF)") == 0 and mist.parse_label("fl") == 3
    assert mist.parse_label("It is literal") is None  # no scale label: unparsed
    assert mist.parse_label("FFT or WFX") is None and mist.parse_label("") is None


def test_alt_test_compares_each_annotator_with_the_judge_under_the_condition_they_saw() -> None:
    from harness.protocols.mist.report import Panel, judge_as_seen

    labels = {
        ("m1", "t", "none"): 0,
        ("m1", "t", "aligned-ignore"): 1,
        ("m1", "t", "aligned-silent"): 2,
        ("m1", "t", "misleading-ignore"): 3,
        ("m1", "t", "misleading-silent"): None,
        ("m2", "t", "none"): 1,
        ("m2", "u", "none"): 2,
    }
    panel = Panel(
        labels={"A": {"m1": 0, "m2": 1}, "B": {"m1": 1, "m2": 1}, "C": {"m1": 3, "m2": 1}},
        seen={
            "A": {"m1": "none", "m2": "none"},
            "B": {"m1": "aligned", "m2": "none"},
            "C": {"m1": "misleading", "m2": "none"},
        },
    )
    assert judge_as_seen(labels, panel, "t") == {
        "A": {"m1": 0, "m2": 1},
        "B": {"m1": 1, "m2": 1},
        "C": {"m1": 3, "m2": 1},
    }
    # the silent arm: B sees the aligned-silent label; C's misleading-silent label is unparsed -> left out
    assert judge_as_seen(labels, panel, "t", arm="silent") == {
        "A": {"m1": 0, "m2": 1},
        "B": {"m1": 2, "m2": 1},
        "C": {"m2": 1},
    }
