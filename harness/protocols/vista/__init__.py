"""VISTA: cross-model semantic-divergence audit.

Its places: builders/vista/ (image set), tasks/vista/, cards/vista.md; here: metrics.py (semantic entropy, JS
divergence, suspicion), refusal.py (selective refusal), audit.py (`harness audit vista`), plots.py, pool.py (the
leaderboard's peer pool).
"""

from harness.protocols.base import Protocol

PROTOCOL = Protocol(name="vista", title="VISTA",
                    summary=("How far a model's answers to the same image and prompt diverge from its peers' "
                             "(suspicion S), and whether it refuses some demographic groups more than others."),
                    tasks=("vista",),
                    extensions={"leaderboard": "harness.protocols.vista.leaderboard:HOOKS"})
