"""FusionAudit: pathway-conditioned robustness.

Its places: builders/fusion/, tasks/fusion/, cards/fusionaudit.md; here: judge.py (the answer judge J), metrics.py
(ASR, R0, R+, RUG, OAR, fusion levels), attacks/ (`harness attack`: differentiable preprocessing, PGD, losses,
diagnostics), audit.py, cli.py (`harness attack`, `harness audit fusion`), plots.py.
Its one name is ``fusion``; ``fusionaudit`` (the dataset's and card's name) is an alias.
"""

from builders import Builder
from harness.protocols.base import Protocol
from harness.protocols.fusion import cli

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
    card="fusionaudit",
    extra="fusion",
    audit=cli.AUDIT,
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
    extensions={"leaderboard": "harness.protocols.fusion.leaderboard:HOOKS"},
)
