"""The tiny chat models as data: each row names real transformers classes, and the shared functions fill a
trained tokenizer's ids into a fresh copy of a row's values."""

from __future__ import annotations

import pytest
import transformers

from harness.tiny_models.chat import QWEN_TEXT, RECIPES, VLLM_CPU_HEADS, qwen_rope
from harness.tiny_models.recipe import VOCAB, Id, Part, VocabSize, Vocabulary, resolve, train


@pytest.mark.parametrize("arch", sorted(RECIPES))
def test_each_row_names_classes_transformers_has(arch: str) -> None:
    recipe = RECIPES[arch]
    names = [recipe.model, *([recipe.processor] if recipe.processor else [])]
    names += [part.cls for part in recipe.parts.values() if isinstance(part, Part)]
    assert [n for n in names if not hasattr(transformers, n)] == []
    assert recipe.tokenizer.template is not None or arch in {"blip2", "instructblip"}  # they ship none


def test_resolve_fills_ids_and_sizes_into_a_fresh_copy() -> None:
    """Ids and sizes come from the trained tokenizers (the main one and any named other); the table's own
    values are copied, so what transformers does to a config never reaches the next build."""
    tok = train(QWEN_TEXT)
    other = train(Vocabulary(("[PAD]", "[CLS]"), None, {"pad_token": "[PAD]"}, "right"))
    row = {
        "text": {"eos": [Id("<|im_end|>"), Id("<|endoftext|>")], "n": VOCAB},
        "q": [Id("[CLS]", "q"), VocabSize("q")],
    }
    filled = resolve(row, {"tokenizer": tok, "q": other})
    assert filled == {"text": {"eos": [2, 0], "n": len(tok)}, "q": [1, len(other)]}
    assert (tok.padding_side, other.padding_side) == ("left", "right")
    filled["text"]["eos"].append(9)
    assert row["text"]["eos"] == [Id("<|im_end|>"), Id("<|endoftext|>")]


def test_a_vocabulary_states_the_ids_it_names_and_none_for_others() -> None:
    assert QWEN_TEXT.ids() == {
        "pad_token_id": Id("<|endoftext|>"),
        "eos_token_id": Id("<|im_end|>"),
        "bos_token_id": None,
    }


def test_the_vllm_cpu_rows_change_only_their_text_heads() -> None:
    """Each ``*_hd32`` row is its base row with heads of 32 (and what follows from them), nothing else."""
    for arch in ("qwen2_vl", "qwen2_5_vl", "llava"):
        base, cpu = RECIPES[arch].config, RECIPES[f"{arch}_hd32"].config
        assert {k: v for k, v in cpu.items() if k != "text_config"} == {
            k: v for k, v in base.items() if k != "text_config"
        }
        changed = {k: v for k, v in cpu["text_config"].items() if base["text_config"].get(k) != v}
        expected = {**VLLM_CPU_HEADS, **({"rope_parameters": qwen_rope([4, 6, 6])} if arch != "llava" else {})}
        assert changed == expected
    assert RECIPES["llava_hd32"].hub_layout and not RECIPES["llava"].hub_layout
    base, cpu = RECIPES["qwen3"].config, RECIPES["qwen3_hd32"].config
    assert {k: v for k, v in cpu.items() if base.get(k) != v} == {**VLLM_CPU_HEADS, "head_dim": 32}
