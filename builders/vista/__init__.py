"""VISTA: topic images x neutral prompts for the cross-model semantic-divergence audit."""

from builders.vista.builder import REPO_ID, Options, build

__all__ = ["REPO_ID", "Options", "build"]
