"""MIST: the Misleading-Image Stress Test from AdMIRe-format sources, or from the offline demo source."""

from builders.mist.builder import REPO_ID, Options, build

__all__ = ["REPO_ID", "Options", "build"]
