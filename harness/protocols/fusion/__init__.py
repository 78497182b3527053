"""FusionAudit: pathway-conditioned robustness.

Its places: builders/fusion/, tasks/fusion/, cards/fusionaudit.md; here: judge.py (the answer judge J), metrics.py
(ASR, R0, R+, RUG, OAR, fusion levels), attacks/ (`harness attack`: differentiable preprocessing, PGD, losses,
diagnostics), audit.py (`harness audit fusion`), plots.py.
"""
