"""Stealth Prompt Testset ("Seeing Red, Thinking Bad"): rendered text whose styling alone changes."""

from builders.stealth.builder import REPO_ID, build

__all__ = ["REPO_ID", "build"]
