"""The FusionAudit dataset builder (``harness build fusion``); see :mod:`builders.fusion.build`."""
