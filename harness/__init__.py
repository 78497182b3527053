"""VLM audit harness: run published vision-language-model audit protocols on your own models."""

__version__ = "0.1.0"
