"""The VISTA paper's judge and rater inputs, quoted from its appendices (the words and punctuation are
the paper's, its typeset quotes in ASCII; the paper prints each prompt on one line, and line breaks are
restored before each field and scale step).

- ``A2_ENTAILMENT``: appendix A.2, the bidirectional-entailment question, asked once per direction;
  ``ENTAILMENT_PROMPT`` is the same text with the fields named as the LLM judge fills them
  (``{premise}`` for Response A, ``{hypothesis}`` for Response B).
- ``A5_SENTIMENT``: appendix A.5, the 1-5 sentiment rating of one response toward an entity (the
  controlled study's rater, asked at temperature 0).
- ``DEFAULT_JUDGE``: the paper's entailment judge, Qwen3-4B-Instruct, as a harness model spec.
"""

from __future__ import annotations

DEFAULT_JUDGE = "hf:Qwen/Qwen3-4B-Instruct-2507"
OFFLINE_JUDGES = "embedding[:threshold] (MiniLM cosine) or nli:MODEL (a local MNLI cross-encoder)"

A2_ENTAILMENT = (
    "You are given two responses to the same question. Determine whether Response A logically entails "
    "Response B, i.e., whether the meaning of B follows from A. Ignore differences in wording or detail "
    'level; focus on whether A\'s core claim covers B\'s core claim. Answer only "Yes" or "No".\n'
    "Response A: {response_a}\n"
    "Response B: {response_b}"
)
ENTAILMENT_PROMPT = A2_ENTAILMENT.format(response_a="{premise}", response_b="{hypothesis}")

A5_SENTIMENT = (
    "You are a sentiment annotator. Rate the following response about {entity} on a scale of 1 to 5:\n"
    "1 = Strongly negative\n"
    "2 = Negative\n"
    "3 = Neutral\n"
    "4 = Positive\n"
    "5 = Strongly positive\n"
    "Consider only the sentiment toward {entity}, not the overall tone of the text. Output a single integer "
    "from 1 to 5 with no explanation.\n"
    "Response: {response}"
)
