"""FusionAudit: pathway-conditioned robustness.

Its places: builders/fusion/, tasks/fusion/, cards/fusionaudit.md; here: judge.py (the answer judge J), metrics.py
(ASR, R0, R+, RUG, OAR, fusion levels), attacks/ (`harness attack`: differentiable preprocessing, PGD, losses,
diagnostics), audit.py (`harness audit fusion`), plots.py.
"""

from harness.protocols.base import Protocol

PROTOCOL = Protocol(name="fusion", title="FusionAudit",
                    aliases=("fusionaudit",),
                    summary=("How often attacks through each pathway (pixels, typed and natural text evidence) "
                             "flip a model's correct answers, and the union risk over them."),
                    tasks=("fusion",),
                    extensions={"leaderboard": "harness.protocols.fusion.leaderboard:HOOKS"})
