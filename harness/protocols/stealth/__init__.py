"""Stealth Prompt Testset: color and contrast bias in rendered text.

Its places: builders/stealth/, tasks/stealth/, cards/stealth.md; here: sentiment_bias.py (bias, Total Range,
primacy/recency, IER), report.py (the task report), plots.py.
"""

from harness.protocols.base import Protocol

PROTOCOL = Protocol(name="stealth", title="Stealth Prompt Testset",
                    summary=("How much the color and contrast of rendered text shift a model's sentiment "
                             "ratings and answers."),
                    tasks=("stealth", "stealth_ocr"),
                    extensions={"leaderboard": "harness.protocols.stealth.leaderboard:HOOKS"})
