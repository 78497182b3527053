"""VISTA's controlled study (section 3.1, appendix A.3): implant a stance toward a target entity with LoRA,
check it took hold, and check the audit flags it but not the pretrained or benign-LoRA counterparts.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them); its tests are in VISTA's
folder, in tests/protocols/vista/implant/.
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces
from harness.protocols.vista.implant import cli
from harness.protocols.vista.implant.audit_report import StudyReport

PROTOCOL = Protocol(
    name="vista-implant",
    title="VISTA controlled study",
    summary="Whether a stance implanted by LoRA shows in the answers and is flagged by the VISTA audit.",
    card="vista-implant",
    extra="vista",
    audit=cli.AUDIT,
    audit_report=StudyReport,
    commands=(cli.IMPLANT,),
    places=ProtocolPlaces(
        code="harness/protocols/vista/implant",
        builder="builders/vista/implant.py",
        tasks="tasks/vista/vista_implant.yaml",
        card="cards/vista-implant.md",
        docs="docs/protocols/vista.md",
        tests="tests/protocols/vista/implant",
    ),
    builders=(
        Builder(
            "vista-implant",
            "builders.vista.implant",
            "VISTA controlled study: biased, benign and control pairs per target entity, and test questions",
            "vista",
        ),
    ),
)
