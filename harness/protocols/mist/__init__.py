"""MIST: misleading images and VLM judges.

Its places: builders/mist.py and builders/mist_demo.py, tasks/mist/, cards/mist.md; here: metrics.py (change rate,
direction, agreement), report.py (with the alt-test of harness/metrics/alttest.py), plots.py.
"""

from builders import Builder
from harness.protocols.base import Protocol

SUMMARY = (
    "How stable a VLM judge's literal-or-idiomatic verdicts are when an image is added, and whether it "
    "could stand in for human annotators (alt-test)."
)

PROTOCOL = Protocol(
    name="mist",
    title="MIST",
    summary=SUMMARY,
    tasks=("mist",),
    card="mist",
    builders=(
        Builder(
            "mist",
            "builders.mist",
            "Misleading-Image Stress Test from AdMIRe-format rows",
            None,
            "--admire ROWS --images DIR --humans FILE",
        ),
    ),
    extensions={"leaderboard": "harness.protocols.mist.leaderboard:HOOKS"},
)
