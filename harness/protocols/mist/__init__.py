"""MIST: misleading images and VLM judges.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them).
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces

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
    extensions={
        "leaderboard": "harness.protocols.mist.leaderboard:HOOKS",
        "evidence": "harness.protocols.mist.evidence:extract",
    },
    places=ProtocolPlaces.standard("mist"),
)
