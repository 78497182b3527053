"""DiaVLo: SHOULD-KNOW vs REALLY-KNOW behaviour specifications.

Its places: builders/diavlo/, tasks/diavlo/, cards/diavlo.md; here: triplet_parser.py, metrics.py (similarity,
classes, MI), report.py, concept_effects.py (DML), audit.py, cli.py (`harness audit diavlo`), detector.py
(open-vocabulary boxes), plots.py.
"""

from builders import Builder
from harness.protocols.base import Protocol
from harness.protocols.diavlo import cli

SUMMARY = (
    "Whether the knowledge a model's rationale uses (REALLY-KNOW) matches what the task needs (SHOULD-"
    "KNOW), and how that relates to its accuracy."
)

PROTOCOL = Protocol(
    name="diavlo",
    title="DiaVLo",
    summary=SUMMARY,
    tasks=("diavlo",),
    card="diavlo",
    extra="diavlo",
    audit=cli.AUDIT,
    builders=(
        Builder(
            "diavlo",
            "builders.diavlo",
            "DiaVLo SHOULD-KNOW triplets with boxes over four VQA sources",
            "diavlo",
            "--sources NAME=PATH,...",
        ),
    ),
    extensions={"leaderboard": "harness.protocols.diavlo.leaderboard:HOOKS"},
)
