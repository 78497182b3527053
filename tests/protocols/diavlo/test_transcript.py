"""The documented DiaVLo example: what a working model's three turns look like and how one pair is scored,
so that a reader of a random-weight demo (every RK unusable) can tell working output from broken."""

from __future__ import annotations

import pytest

from harness.protocols.diavlo.metrics import Thresholds
from harness.protocols.diavlo.report import score_pair

DOC = {
    "source": "vqav2",
    "answer_type": "vqa",
    "question": "What is the man holding?",
    "answer": "umbrella",
    "answers": ["umbrella"] * 10,
    "sk_triplets": [
        {"subject": "man", "relation": "holding", "object": "umbrella"},
        {"subject": "umbrella", "relation": "above", "object": "man"},
        {"subject": "man", "relation": "wearing", "object": "coat"},
    ],
}

#: Turn 1 (the answer), then the two follow-up turns of the task (rationale, then triplets).
TRANSCRIPT = [
    "An umbrella.",
    "The man in the coat grips a black umbrella, which he holds above his head.",
    "(man, holding, umbrella)\n(umbrella, above, man)",
]


def _turns(rationale: str, triplets: str) -> list[dict]:
    return [
        {"prompt": "Explain the rationale ...", "request_keys": ["k2"], "responses": [rationale]},
        {"prompt": "Rewrite your rationale as triplets ...", "request_keys": ["k3"], "responses": [triplets]},
    ]


def test_the_example_transcript_scores_as_documented() -> None:
    out = score_pair(DOC, TRANSCRIPT[0], _turns(*TRANSCRIPT[1:]))
    # "An umbrella." normalises to the VQA v2 consensus "umbrella": performance 1 on the binary scale
    assert out["performance"] == 1.0
    # two RK triplets, both word for word among the three SK ones: each pair's cosine is 1, mean 1
    assert (out["n_rk"], out["n_sk"], out["rk_parsed"], out["rk_unusable"]) == (2.0, 3.0, 1.0, 0.0)
    assert out["similarity"] == pytest.approx(1.0, abs=1e-6)
    # |RK| <= |SK| and similarity >= tau_a: Aligned
    assert out["similarity"] >= Thresholds().tau_a
    assert (out["aligned"], out["expanded"], out["divergent"], out["unnamed"]) == (1.0, 0.0, 0.0, 0.0)


def test_a_random_model_s_third_turn_is_an_rk_loss_not_a_class() -> None:
    """What the offline demo shows: no triplet in turn 3, so the pair counts as an RK loss and has no class."""
    out = score_pair(DOC, "umbrellaumbrella zq", _turns("zq xv", "zq xv yy"))
    assert (out["rk_parsed"], out["rk_unusable"], out["n_rk"]) == (0.0, 1.0, 0.0)
    assert not {"similarity", "aligned", "expanded", "divergent", "unnamed"} & set(out)
