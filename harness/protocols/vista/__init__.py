"""VISTA: cross-model semantic-divergence audit.

Its places: builders/vista/ (image set), tasks/vista/, cards/vista.md; here: metrics.py (semantic entropy, JS
divergence, suspicion), refusal.py (selective refusal), audit.py (`harness audit vista`), plots.py, pool.py (the
leaderboard's peer pool).
"""
