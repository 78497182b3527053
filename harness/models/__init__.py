"""Model backends, chosen by spec string ``BACKEND:NAME`` through a registry."""

from harness.models.base import Backend, GenerationParams, GenerationRequest, create_backend, register_backend
from harness.models.messages import ChatMessage, ImagePart, TextPart

__all__ = [
    "Backend",
    "ChatMessage",
    "GenerationParams",
    "GenerationRequest",
    "ImagePart",
    "TextPart",
    "create_backend",
    "register_backend",
]
