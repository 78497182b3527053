"""Tiny random-weight models of real architectures (``tiny:<arch>``), as data.

Each chat model is one row of ``chat.RECIPES`` (a ``recipe.ChatRecipe``: transformers classes, config,
tokenizer, processor parts), built by the shared functions of ``recipe.py`` into a cache folder once; from
then on the ``hf`` backend loads that folder exactly as it loads a user's model. Outputs are meaningless by
design: these models exist to exercise code paths. ``registry.py`` names every tiny model and builds its
folder; protocols add models of other kinds there (``register_tiny_recipe``) from ``blocks.py``.
"""

from harness.tiny_models.blocks import bpe_tokenizer, clip_text_config, clip_tokenizer, mark_tiny, save_tiny
from harness.tiny_models.chat import RECIPES
from harness.tiny_models.registry import register_tiny_recipe, require_chat_arch, tiny_archs, tiny_model_path

__all__ = [
    "RECIPES",
    "bpe_tokenizer",
    "clip_text_config",
    "clip_tokenizer",
    "mark_tiny",
    "register_tiny_recipe",
    "require_chat_arch",
    "save_tiny",
    "tiny_archs",
    "tiny_model_path",
]
