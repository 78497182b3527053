"""Every tiny model by name, and its folder in the cache: built once, under a lock, from a seed of its name.

The chat models are the table's rows (``harness.tiny_models.chat.RECIPES``). A protocol that needs a tiny
model of another kind (an image generator, editor, detector or encoder) owns its recipe and adds it with
``register_tiny_recipe``, building it from ``harness.tiny_models.blocks``.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ModelSpecError
from harness.paths import cache_root
from harness.tiny_models.blocks import MARKER
from harness.tiny_models.chat import RECIPES
from harness.tiny_models.recipe import build_chat_model

#: Part of every cached folder's name: raise it when a recipe changes what it builds.
RECIPE_VERSION = "2"


@dataclass(frozen=True)
class NonChatRecipe:
    """A tiny model that is not a chat model (a protocol's image generator, editor, detector or encoder)."""

    build: Callable[[Path], None]
    purpose: str  # what it is for, named when it is offered to --model


_NOT_CHAT: dict[str, NonChatRecipe] = {}


def register_tiny_recipe(name: str, build: Callable[[Path], None], purpose: str) -> None:
    """Add a non-chat tiny model that ``tiny_model_path`` builds like the chat ones and ``--model`` refuses
    with its ``purpose``. The protocol that uses one owns its recipe and registers it when its package is
    imported (loading the protocol registry imports them all); this layer names no protocol."""
    if name in RECIPES:
        raise ModelSpecError(f"tiny architecture {name!r} is a chat model's; a non-chat recipe needs a name of its own")
    _NOT_CHAT[name] = NonChatRecipe(build, purpose)


def tiny_archs() -> list[str]:
    """Every tiny architecture known here: the chat models and the registered non-chat ones."""
    return sorted({*RECIPES, *_NOT_CHAT})


def require_chat_arch(arch: str) -> None:
    """Refuse a non-chat tiny model as ``--model`` before transformers fails on its configuration class."""
    if arch in _NOT_CHAT:
        raise ModelSpecError(
            f"tiny:{arch} is not a chat model to evaluate: it is {_NOT_CHAT[arch].purpose}; "
            f"chat models: {', '.join('tiny:' + a for a in sorted(RECIPES))}"
        )


def _recipe(arch: str) -> Callable[[Path], None]:
    if arch in RECIPES:
        return functools.partial(build_chat_model, arch, RECIPES[arch])
    if arch in _NOT_CHAT:
        return _NOT_CHAT[arch].build
    raise ModelSpecError(f"unknown tiny architecture {arch!r}; choose from {', '.join(tiny_archs())}")


def tiny_model_path(arch: str) -> Path:
    """Build (once, under a lock) and return the folder of the tiny ``arch`` model."""
    build = _recipe(arch)
    import torch
    from filelock import FileLock

    root = cache_root() / "tiny"
    root.mkdir(parents=True, exist_ok=True)
    out = root / f"{arch}-v{RECIPE_VERSION}"
    with FileLock(str(out) + ".lock"):
        if (out / MARKER).is_file():
            return out
        from transformers.utils import logging as hf_logging

        tmp = Path(tempfile.mkdtemp(prefix=f".{arch}-", dir=root))
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            with torch.random.fork_rng():
                torch.manual_seed(int(hashlib.sha256(arch.encode()).hexdigest()[:8], 16))
                build(tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
            shutil.rmtree(tmp, ignore_errors=True)
    return out
