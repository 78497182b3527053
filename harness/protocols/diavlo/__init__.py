"""DiaVLo: SHOULD-KNOW vs REALLY-KNOW behaviour specifications.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them).
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces
from harness.protocols.diavlo import cli, tiny  # noqa: F401 (tiny: registers tiny:owlv2)
from harness.protocols.diavlo.audit_report import DiavloAuditReport

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
    audit_report=DiavloAuditReport,
    builders=(
        Builder(
            "diavlo",
            "builders.diavlo",
            "DiaVLo SHOULD-KNOW triplets with boxes over four VQA sources",
            "diavlo",
            "--sources NAME=PATH,...",
        ),
    ),
    extensions={
        "leaderboard": "harness.protocols.diavlo.leaderboard:HOOKS",
        "evidence": "harness.protocols.diavlo.evidence:extract",
    },
    places=ProtocolPlaces.standard("diavlo", benchmarks=("diavlo_dml.py", "triplet_parser.py")),
)
