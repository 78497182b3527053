"""FusionAudit: pathway-conditioned robustness.

Its files are listed in ``PROTOCOL.places`` (``harness protocols`` prints them).
Its one name is ``fusion`` (package, builder, tasks, card, dataset); ``fusionaudit``, the paper's, is a
command-line alias.
"""

from harness.builder_spec import Builder
from harness.protocols.base import Protocol, ProtocolPlaces
from harness.protocols.fusion import cli, tiny  # noqa: F401 (tiny: registers tiny:instruct_pix2pix)
from harness.protocols.fusion.audit_report import FusionAuditReport

SUMMARY = (
    "How often attacks through each pathway (pixels, typed and natural text evidence) flip a model's "
    "correct answers, and the union risk over them."
)

PROTOCOL = Protocol(
    name="fusion",
    aliases=("fusionaudit",),
    title="FusionAudit",
    summary=SUMMARY,
    tasks=("fusion",),
    card="fusion",
    extra="fusion",
    audit=cli.AUDIT,
    audit_report=FusionAuditReport,
    commands=(cli.ATTACK,),
    builders=(
        Builder(
            "fusion",
            "builders.fusion.build",
            "FusionAudit items with their rendered-text variants",
            "fusion",
            "[--chartqa SRC --docvqa SRC --mme SRC]",
            aliases=("fusionaudit",),
        ),
    ),
    extensions={
        "leaderboard": "harness.protocols.fusion.leaderboard:HOOKS",
        "evidence": "harness.protocols.fusion.evidence:extract",
    },
    places=ProtocolPlaces.standard("fusion", benchmarks=("fusion_pgd.py",)),
)
