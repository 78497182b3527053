"""VISTA: cross-model semantic-divergence audit.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them); the controlled study
(implant/) is a protocol of its own.
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces, register_protocol
from harness.protocols.vista import cli, tiny  # noqa: F401 (tiny: registers tiny:sdxl_turbo)
from harness.protocols.vista.audit_report import VistaAuditReport
from harness.protocols.vista.implant import PROTOCOL as CONTROLLED_STUDY

SUMMARY = (
    "How far a model's answers to the same image and prompt diverge from its peers' (suspicion S), and "
    "whether it refuses some demographic groups more than others."
)

PROTOCOL = Protocol(
    name="vista",
    title="VISTA",
    summary=SUMMARY,
    tasks=("vista",),
    card="vista",
    extra="vista",
    audit=cli.AUDIT,
    audit_report=VistaAuditReport,
    after_eval=cli.after_eval,
    audit_tag="vista",
    eval_arguments=cli.eval_arguments,
    check_eval=cli.check_eval,
    builders=(
        Builder("vista", "builders.vista", "VISTA topic images x neutral prompts (generated or photographs)", "vista"),
    ),
    extensions={
        "leaderboard": "harness.protocols.vista.leaderboard:HOOKS",
        "evidence": "harness.protocols.vista.evidence:extract",
    },
    places=ProtocolPlaces.standard("vista", benchmarks=("vista_audit_scale.py",)),
)

register_protocol(CONTROLLED_STUDY)
