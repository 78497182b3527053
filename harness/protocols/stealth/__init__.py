"""Stealth Prompt Testset: color and contrast bias in rendered text.

Its places: builders/stealth/, tasks/stealth/, cards/stealth.md; here: sentiment_bias.py (bias, Total Range,
primacy/recency, IER), report.py (the task report), plots.py.
"""
