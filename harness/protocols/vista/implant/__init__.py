"""VISTA's controlled study (section 3.1, appendix A.3): implant a stance toward a target entity with LoRA,
check it took hold, and check the audit flags it but not the pretrained or benign-LoRA counterparts.

Its places: builders/vista/implant.py (the pairs and test questions), cards/vista-implant.md,
tasks/vista/vista_implant.yaml; here: train.py (LoRA), rater.py (A.5 sentiment), metrics.py (negativity,
the four scorings, P/R/F1), study.py (the audit), tables.py, plots.py, publish.py (refused by default),
cli.py (``harness implant``, ``harness audit vista-implant``).
"""

from builders import Builder
from harness.protocols.base import Protocol
from harness.protocols.vista.implant import cli

PROTOCOL = Protocol(
    name="vista-implant",
    title="VISTA controlled study",
    summary="Whether a stance implanted by LoRA shows in the answers and is flagged by the VISTA audit.",
    card="vista-implant",
    extra="vista",
    audit=cli.AUDIT,
    commands=(cli.IMPLANT,),
    builders=(
        Builder(
            "vista-implant",
            "builders.vista.implant",
            "VISTA controlled study: biased, benign and control pairs per target entity, and test questions",
            "vista",
        ),
    ),
)
