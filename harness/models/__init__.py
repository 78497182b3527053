"""Model backends, chosen by spec string ``BACKEND:NAME`` through a registry."""

from harness.models.base import Backend, GenerationParams, GenerationRequest, create_backend, register_backend

__all__ = ["Backend", "GenerationParams", "GenerationRequest", "create_backend", "register_backend"]
