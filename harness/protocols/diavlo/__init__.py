"""DiaVLo: SHOULD-KNOW vs REALLY-KNOW behaviour specifications.

Its places: builders/diavlo/, tasks/diavlo/, cards/diavlo.md; here: triplet_parser.py, metrics.py (similarity,
classes, MI), report.py, concept_effects.py (DML), audit.py (`harness audit diavlo`), detector.py (open-vocabulary
boxes), plots.py.
"""

from harness.protocols.base import Protocol

PROTOCOL = Protocol(name="diavlo", title="DiaVLo",
                    summary=("Whether the knowledge a model's rationale uses (REALLY-KNOW) matches what the "
                             "task needs (SHOULD-KNOW), and how that relates to its accuracy."),
                    tasks=("diavlo",),
                    extensions={"leaderboard": "harness.protocols.diavlo.leaderboard:HOOKS"})
