"""The FusionAudit dataset builder (``harness build fusionaudit``); see :mod:`builders.fusion.build`."""
