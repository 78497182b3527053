"""Stealth Prompt Testset ("Seeing Red, Thinking Bad"): rendered text whose styling alone changes."""

from builders.stealth.builder import REPO_ID, Options, build

__all__ = ["REPO_ID", "Options", "build"]
