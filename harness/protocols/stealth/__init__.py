"""Stealth Prompt Testset: color and contrast bias in rendered text.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them).
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces
from harness.protocols.stealth import tiny  # noqa: F401 (registers tiny:clip)

SUMMARY = "How much the color and contrast of rendered text shift a model's sentiment ratings and answers."

PROTOCOL = Protocol(
    name="stealth",
    title="Stealth Prompt Testset",
    summary=SUMMARY,
    tasks=("stealth", "stealth_ocr"),
    card="stealth",
    extra="stealth",
    builders=(
        Builder(
            "stealth",
            "builders.stealth",
            "Stealth Prompt Testset: text rendered in styles that alone change it",
            "stealth",
            "[--squad FILE]",
        ),
    ),
    extensions={
        "leaderboard": "harness.protocols.stealth.leaderboard:HOOKS",
        "evidence": "harness.protocols.stealth.evidence:extract",
    },
    places=ProtocolPlaces.standard("stealth", benchmarks=("stealth_build.py",)),
)
