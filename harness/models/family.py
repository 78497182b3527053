"""The lmms-eval family of a model: the name of lmms-eval's model class for its transformers ``model_type``.

A family picks a task's ``lmms_eval_specific_kwargs`` blocks and the default answer length of a task that
sets none. The backends name their model's family with it (``Backend.model_family``), and the engine when it
reads a run whose backend named none.
"""

from __future__ import annotations

#: transformers ``model_type`` -> lmms-eval model name, where the two differ or lmms-eval has a class.
LMMS_FAMILY = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "llava": "llava_hf",
    "llava_next": "llava_hf",
    "llava_onevision": "llava_onevision",
    "gemma3": "gemma3",
    "idefics3": "idefics3",
    "smolvlm": "smolvlm",
    "idefics2": "idefics2",
}


def lmms_family(model_type: str) -> str:
    """The lmms-eval family of a transformers ``model_type``: its lmms-eval class, else the type itself."""
    return LMMS_FAMILY.get(model_type, model_type)
