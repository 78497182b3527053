"""Task specifications in lmms-eval's YAML schema: loading, function references, discovery."""

from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry

__all__ = ["TaskConfig", "TaskRegistry"]
