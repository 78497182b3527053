"""DiaVLo SHOULD-KNOW specifications: curated triplets with boxes over four VQA sources."""

from builders.diavlo.builder import REPO_ID, Options, build

__all__ = ["REPO_ID", "Options", "build"]
