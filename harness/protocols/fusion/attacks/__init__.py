"""White-box attacks on ``hf`` models: differentiable preprocessing, L-infinity PGD, the FusionAudit
losses (Vis-PGD, End-PGD, MANTIS), diagnostics (OAR, layer restoration) and ``harness attack``."""
