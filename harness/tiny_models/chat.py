"""The tiny chat models (``--model tiny:ARCH``): one row per architecture, built by
``harness.tiny_models.recipe.build_chat_model``.

Every row is small on purpose: a text model of hidden size 64 (2 layers, 4 heads of 16), a vision tower of
hidden size 32, and a byte-level BPE tokenizer of about 600 tokens trained here with the architecture's
special tokens. To add an architecture, add a row (reusing the fragments below where the real checkpoints
share them) and check that ``tiny:ARCH`` loads through the ``hf:`` backend. A change to an existing row
changes what its cached folder should hold: raise ``registry.RECIPE_VERSION`` with it (and expect the golden
runs, which pin ``tiny:qwen2_vl``, to say so).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.tiny_models.recipe import VOCAB, ChatRecipe, Id, Part, VocabSize, Vocabulary
from harness.tiny_models.templates import (
    DEEPSEEK_VL_TEMPLATE,
    GEMMA4_TEMPLATE,
    GEMMA_TEMPLATE,
    IDEFICS3_TEMPLATE,
    LLAVA_TEMPLATE,
    QWEN_TEMPLATE,
)

#: The attention heads of the ``*_hd32`` rows: vLLM's CPU attention refuses a head size of 16 (every other
#: tiny text model's), so these serve ``vllm:`` on CPU; 64 / 32 = 2 query heads and 1 key-value head.
VLLM_CPU_HEADS: dict[str, Any] = {"num_attention_heads": 2, "num_key_value_heads": 1}


def text_model(**extra: Any) -> dict[str, Any]:
    """The text model every row shares, its vocabulary the tokenizer's, with ``extra`` on top."""
    return {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        **extra,
    }


def vision_tower(**extra: Any) -> dict[str, Any]:
    """The vision tower most rows share (hidden 32, 2 layers, 4 heads), with ``extra`` on top."""
    return {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, **extra}


def _llama_text(vocabulary: Vocabulary) -> dict[str, Any]:
    return {"model_type": "llama", **text_model(), **vocabulary.ids()}


# Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 share tokens and chat template; Qwen3-VL's image processor is
# Qwen2-VL's with 16-pixel patches. Their multimodal rotary sections sum to half the head size.
_QWEN_NAMED = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
QWEN_TEXT = Vocabulary(("<|endoftext|>", "<|im_start|>", "<|im_end|>"), QWEN_TEMPLATE, _QWEN_NAMED)
QWEN_VL = replace(
    QWEN_TEXT,
    specials=(*QWEN_TEXT.specials, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"),
)
_QWEN_MEDIA = {
    "image_token_id": Id("<|image_pad|>"),
    "video_token_id": Id("<|video_pad|>"),
    "vision_start_token_id": Id("<|vision_start|>"),
    "vision_end_token_id": Id("<|vision_end|>"),
}
_QWEN2_PIXELS = {"min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 16}
_QWEN2_PARTS = {
    "image_processor": Part("Qwen2VLImageProcessor", _QWEN2_PIXELS),
    "video_processor": Part("Qwen2VLVideoProcessor", _QWEN2_PIXELS),
}
_QWEN3_PARTS = {
    "image_processor": Part(
        "Qwen2VLImageProcessor",
        {"min_pixels": 32 * 32 * 4, "max_pixels": 32 * 32 * 16, "patch_size": 16, "merge_size": 2},
    ),
    "video_processor": Part(
        "Qwen3VLVideoProcessor",
        {"size": {"shortest_edge": 32 * 32 * 4, "longest_edge": 32 * 32 * 16}, "patch_size": 16, "merge_size": 2},
    ),
}


def qwen_rope(section: list[int], interleaved: bool = False) -> dict[str, Any]:
    """Multimodal rotary parameters: ``section`` splits half a head between time, height and width."""
    return {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": section,
        **({"mrope_interleaved": True} if interleaved else {}),
    }


def _qwen_text(rope: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return text_model(**extra, rope_parameters=rope, **QWEN_VL.ids())


def _qwen_vision(patch: int, **extra: Any) -> dict[str, Any]:
    return {
        "depth": 2,
        "num_heads": 4,
        "patch_size": patch,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        **extra,
    }


_QWEN3_VISION = _qwen_vision(16, hidden_size=32, intermediate_size=64, out_hidden_size=64, num_position_embeddings=64)

# LLaVA-1.5 (CLIP + Llama) and LLaVA-NeXT (its any-resolution grid); BLIP-2's OPT and InstructBLIP's Vicuna
# have the same tokens (OPT's bos is its eos) and, like the real checkpoints, no chat template.
_LLAMA_SPECIALS = ("<unk>", "<s>", "</s>", "<pad>", "<image>")
_LLAMA_NAMED = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}
LLAVA = Vocabulary(_LLAMA_SPECIALS, LLAVA_TEMPLATE, _LLAMA_NAMED)
_LLAVA_SIZES = {"size": {"shortest_edge": 28}, "crop_size": {"height": 28, "width": 28}}
_LLAVA_PROCESSOR = {"patch_size": 14, "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1}
_LLAVA_GRID = [[28, 28], [28, 56], [56, 28], [56, 56]]


def _llava_config(**extra: Any) -> dict[str, Any]:
    return {
        "vision_config": vision_tower(model_type="clip_vision_model", image_size=28, patch_size=14, projection_dim=32),
        "text_config": _llama_text(LLAVA),
        "image_token_index": Id("<image>"),
        "vision_feature_layer": -2,
        "vision_feature_select_strategy": "default",
        **extra,
    }


# Gemma: <pad> <eos> <bos> <unk> (ids 0-3, as in the real vocabulary), then the generation's turn and media
# tokens, named for its processor; its text model stops at the end of a turn as well as at <eos>.
def _gemma(template: str, turn: tuple[str, str], media: dict[str, str]) -> Vocabulary:
    return Vocabulary(
        ("<pad>", "<eos>", "<bos>", "<unk>", *turn, *media.values()),
        template,
        {
            "bos_token": "<bos>",
            "eos_token": "<eos>",
            "pad_token": "<pad>",
            "unk_token": "<unk>",
            "extra_special_tokens": media,
        },
    )


def _gemma_text(end_of_turn: str, **extra: Any) -> dict[str, Any]:
    return {
        **text_model(),
        "head_dim": 16,
        "sliding_window": 64,
        "pad_token_id": Id("<pad>"),
        "eos_token_id": [Id("<eos>"), Id(end_of_turn)],
        "bos_token_id": Id("<bos>"),
        **extra,
    }


_GEMMA3_MEDIA = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
_GEMMA4_MEDIA = {
    "boi_token": "<|image>",
    "eoi_token": "<image|>",
    "image_token": "<|image|>",
    "boa_token": "<|audio>",
    "eoa_token": "<audio|>",
    "audio_token": "<|audio|>",
}
_GEMMA4_SOFT_TOKENS, _GEMMA4_POOLING = 70, 3

# Idefics3 and SmolVLM share tokens, chat template and image splitting (longest-edge resize, tiles of
# max_image_size plus a global view): 2 x 2 pixel-shuffled tokens of 14-pixel patches per tile.
IDEFICS3 = Vocabulary(
    (
        "<|endoftext|>",
        "<|im_start|>",
        "<end_of_utterance>",
        "<fake_token_around_image>",
        "<image>",
        "<global-img>",
        "<pad>",
    ),
    IDEFICS3_TEMPLATE,
    {
        "bos_token": "<|im_start|>",
        "eos_token": "<end_of_utterance>",
        "pad_token": "<pad>",
        "extra_special_tokens": {
            "fake_image_token": "<fake_token_around_image>",
            "image_token": "<image>",
            "end_of_utterance_token": "<end_of_utterance>",
            "global_image_token": "<global-img>",
        },
    },
)


def _tiles(tile: int) -> dict[str, Any]:
    return {"size": {"longest_edge": tile * 2}, "max_image_size": {"longest_edge": tile}}


def _idefics3_config(tile: int) -> dict[str, Any]:
    return {
        "text_config": _llama_text(IDEFICS3),
        "vision_config": vision_tower(image_size=tile, patch_size=14),
        "scale_factor": 2,
        "image_token_id": Id("<image>"),
        "pad_token_id": Id("<pad>"),
    }


OPT = Vocabulary(_LLAMA_SPECIALS, None, {**_LLAMA_NAMED, "bos_token": "</s>"})
VICUNA = Vocabulary(_LLAMA_SPECIALS, None, _LLAMA_NAMED)  # the processor registers "<image>" itself
#: InstructBLIP's Q-Former reads the instruction too, padded on the right as BERT's (its absolute positions
#: assume it).
QFORMER_BERT = Vocabulary(
    ("[PAD]", "[CLS]", "[SEP]"), None, {"pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}, "right"
)
_QFORMER = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "cross_attention_frequency": 1,
}
_BLIP_PARTS = {"image_processor": Part("BlipImageProcessor", {"size": {"height": 28, "width": 28}})}


def _blip_config(qformer: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    return {  # the vision tower's default init (std 1e-10) would make every patch alike
        "vision_config": vision_tower(image_size=28, patch_size=14, initializer_range=0.02),
        "qformer_config": qformer,
        "text_config": text,
        "num_query_tokens": 4,
        "image_token_index": Id("<image>"),
    }


# DeepSeek-VL: SigLIP + Llama, 28-pixel padded squares of 4 x 4 tokens; its hybrid fuses a SAM view of the
# 56-pixel padded square per token.
_DEEPSEEK_BOS, _DEEPSEEK_EOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"
DEEPSEEK_VL = Vocabulary(
    (_DEEPSEEK_BOS, _DEEPSEEK_EOS, "<image_placeholder>", "<pad>"),
    DEEPSEEK_VL_TEMPLATE,
    {
        "bos_token": _DEEPSEEK_BOS,
        "eos_token": _DEEPSEEK_EOS,
        "pad_token": "<pad>",
        "extra_special_tokens": {"image_token": "<image_placeholder>"},
    },
)
_DEEPSEEK_SIZES = {"size": {"height": 28, "width": 28}}
_DEEPSEEK_PROCESSOR = {"num_image_tokens": (28 // 7) ** 2}


def _deepseek_config(**extra: Any) -> dict[str, Any]:
    return {
        "text_config": _llama_text(DEEPSEEK_VL),
        "vision_config": vision_tower(model_type="siglip_vision_model", image_size=28, patch_size=7),
        "image_token_id": Id("<image_placeholder>"),
        **extra,
    }


_SAM_VIEW = {  # the default init (std 1e-10) makes every patch alike
    "hidden_size": 32,
    "output_channels": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "image_size": 56,
    "patch_size": 14,
    "window_size": 2,
    "global_attn_indexes": [1],
    "mlp_dim": 64,
    "num_pos_feats": 16,
    "initializer_range": 0.02,
}


def _vllm_cpu(recipe: ChatRecipe, **text: Any) -> ChatRecipe:
    """``recipe`` with text heads of 32 (``VLLM_CPU_HEADS``) and ``text``'s other changes to its text model."""
    config = dict(recipe.config)
    if "text_config" in config:
        config["text_config"] = {**config["text_config"], **VLLM_CPU_HEADS, **text}
    else:
        config |= {**VLLM_CPU_HEADS, **text}
    return replace(recipe, config=config)


#: One row per architecture.
_ROWS: dict[str, ChatRecipe] = {
    "qwen2_vl": ChatRecipe(
        model="Qwen2VLForConditionalGeneration",
        processor="Qwen2VLProcessor",
        tokenizer=QWEN_VL,
        parts=_QWEN2_PARTS,
        config={
            "text_config": _qwen_text(qwen_rope([2, 3, 3])),
            "vision_config": _qwen_vision(14, embed_dim=32, hidden_size=64, mlp_ratio=2, in_chans=3),
            **_QWEN_MEDIA,
        },
    ),
    "qwen2_5_vl": ChatRecipe(  # Qwen2-VL's tokens, processor and text model; a windowed vision tower
        model="Qwen2_5_VLForConditionalGeneration",
        processor="Qwen2_5_VLProcessor",
        tokenizer=QWEN_VL,
        parts=_QWEN2_PARTS,
        config={
            "text_config": _qwen_text(qwen_rope([2, 3, 3])),
            "vision_config": _qwen_vision(
                14, hidden_size=32, intermediate_size=64, out_hidden_size=64, window_size=56, fullatt_block_indexes=[1]
            ),
            **_QWEN_MEDIA,
        },
    ),
    "qwen3_vl": ChatRecipe(  # a Qwen3 text model whose first layers take DeepStack features
        model="Qwen3VLForConditionalGeneration",
        processor="Qwen3VLProcessor",
        tokenizer=QWEN_VL,
        parts=_QWEN3_PARTS,
        config={
            "text_config": _qwen_text(qwen_rope([2, 3, 3], interleaved=True), head_dim=16),
            "vision_config": {**_QWEN3_VISION, "deepstack_visual_indexes": [0, 1]},
            **_QWEN_MEDIA,
        },
    ),
    "qwen3_5": ChatRecipe(  # a hybrid text model (linear- and full-attention layers), no DeepStack
        model="Qwen3_5ForConditionalGeneration",
        processor="Qwen3VLProcessor",
        tokenizer=QWEN_VL,
        parts=_QWEN3_PARTS,
        config={
            "text_config": _qwen_text(
                qwen_rope([2, 3, 3], interleaved=True),
                head_dim=16,
                layer_types=["linear_attention", "full_attention"],
                linear_key_head_dim=16,
                linear_value_head_dim=16,
                linear_num_key_heads=2,
                linear_num_value_heads=4,
            ),
            "vision_config": _QWEN3_VISION,
            **_QWEN_MEDIA,
        },
    ),
    "llava": ChatRecipe(
        model="LlavaForConditionalGeneration",
        processor="LlavaProcessor",
        tokenizer=LLAVA,
        parts={"image_processor": Part("CLIPImageProcessor", _LLAVA_SIZES)},
        processor_args=_LLAVA_PROCESSOR,
        config=_llava_config(),
    ),
    "gemma3": ChatRecipe(
        model="Gemma3ForConditionalGeneration",
        processor="Gemma3Processor",
        tokenizer=_gemma(GEMMA_TEMPLATE, ("<start_of_turn>", "<end_of_turn>"), _GEMMA3_MEDIA),
        parts={"image_processor": Part("Gemma3ImageProcessor", {"size": {"height": 28, "width": 28}})},
        processor_args={"image_seq_length": 4},
        config={
            "text_config": _gemma_text("<end_of_turn>"),
            "vision_config": vision_tower(image_size=28, patch_size=14),
            "mm_tokens_per_image": 4,
            "boi_token_index": Id("<start_of_image>"),
            "eoi_token_index": Id("<end_of_image>"),
            "image_token_index": Id("<image_soft_token>"),
            "eos_token_id": [Id("<eos>"), Id("<end_of_turn>")],
            "pad_token_id": Id("<pad>"),
            "bos_token_id": Id("<bos>"),
        },
        generation={"eos_token_id": [Id("<eos>"), Id("<end_of_turn>")]},
        redraw=("model.multi_modal_projector.mm_input_projection_weight",),  # all zeros when fresh
    ),
    # Gemma 4 as in E4B without its audio tower: aspect-preserving variable resolution (16-pixel patches pooled
    # 3 x 3 into at most 70 soft tokens), per-layer input embeddings, and a last decoder layer that reuses an
    # earlier layer's keys and values. Its processor wants an audio feature extractor and a video processor.
    "gemma4": ChatRecipe(
        model="Gemma4ForConditionalGeneration",
        processor="Gemma4Processor",
        tokenizer=_gemma(GEMMA4_TEMPLATE, ("<|turn>", "<turn|>"), _GEMMA4_MEDIA),
        parts={
            "feature_extractor": Part("Gemma4AudioFeatureExtractor"),
            "video_processor": Part("Gemma4VideoProcessor"),
            "image_processor": Part(
                "Gemma4ImageProcessor",
                {"max_soft_tokens": _GEMMA4_SOFT_TOKENS, "patch_size": 16, "pooling_kernel_size": _GEMMA4_POOLING},
            ),
        },
        processor_args={"image_seq_length": _GEMMA4_SOFT_TOKENS},
        config={
            "text_config": _gemma_text(
                "<turn|>",
                num_hidden_layers=3,
                global_head_dim=16,
                layer_types=["sliding_attention", "full_attention", "full_attention"],
                num_kv_shared_layers=1,
                hidden_size_per_layer_input=8,
                vocab_size_per_layer_input=VOCAB,
            ),
            "vision_config": vision_tower(  # positions up to the longest side a budget of pooled cells allows
                num_key_value_heads=4,
                head_dim=8,
                patch_size=16,
                pooling_kernel_size=_GEMMA4_POOLING,
                position_embedding_size=_GEMMA4_SOFT_TOKENS * _GEMMA4_POOLING,
            ),
            "audio_config": None,
            "boi_token_id": Id("<|image>"),
            "eoi_token_id": Id("<image|>"),
            "image_token_id": Id("<|image|>"),
            "video_token_id": Id("<|video|>"),  # the processor's video token, not in this vocabulary
            "boa_token_id": Id("<|audio>"),
            "eoa_token_index": Id("<audio|>"),
            "audio_token_id": Id("<|audio|>"),
        },
        generation={"eos_token_id": [Id("<eos>"), Id("<turn|>")]},
        redraw=("model.vision_tower.patch_embedder.position_embedding_table",),  # all ones when fresh
    ),
    "idefics3": ChatRecipe(  # 28-pixel tiles of one token
        model="Idefics3ForConditionalGeneration",
        processor="Idefics3Processor",
        tokenizer=IDEFICS3,
        parts={"image_processor": Part("Idefics3ImageProcessor", {**_tiles(28), "do_image_splitting": True})},
        processor_args={"image_seq_len": (28 // 14) ** 2 // 2**2},
        config=_idefics3_config(28),
    ),
    "smolvlm": ChatRecipe(  # 56-pixel tiles of 2 x 2 tokens; its processor also takes a video processor
        model="SmolVLMForConditionalGeneration",
        processor="SmolVLMProcessor",
        tokenizer=IDEFICS3,
        parts={
            "image_processor": Part("SmolVLMImageProcessor", {**_tiles(56), "do_image_splitting": True}),
            "video_processor": Part("SmolVLMVideoProcessor", _tiles(56)),
        },
        processor_args={"image_seq_len": (56 // 14) ** 2 // 2**2},
        config=_idefics3_config(56),
        requires="num2words",
    ),
    "blip2": ChatRecipe(  # ViT, Q-Former, OPT
        model="Blip2ForConditionalGeneration",
        processor="Blip2Processor",
        tokenizer=OPT,
        parts=_BLIP_PARTS,
        processor_args={"num_query_tokens": 4},
        config=_blip_config(
            _QFORMER,
            {
                "model_type": "opt",
                "vocab_size": VOCAB,
                "hidden_size": 64,
                "ffn_dim": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "word_embed_proj_dim": 64,
                "max_position_embeddings": 512,
                **OPT.ids(),
            },
        ),
    ),
    "instructblip": ChatRecipe(  # its Q-Former also reads the instruction; Llama as Vicuna
        model="InstructBlipForConditionalGeneration",
        processor="InstructBlipProcessor",
        tokenizer=VICUNA,
        parts={**_BLIP_PARTS, "qformer_tokenizer": QFORMER_BERT},
        processor_args={"num_query_tokens": 4},
        config=_blip_config(
            {
                **_QFORMER,
                "vocab_size": VocabSize("qformer_tokenizer"),
                "pad_token_id": Id("[PAD]", "qformer_tokenizer"),
            },
            _llama_text(VICUNA),
        ),
    ),
    "deepseek_vl": ChatRecipe(
        model="DeepseekVLForConditionalGeneration",
        processor="DeepseekVLProcessor",
        tokenizer=DEEPSEEK_VL,
        parts={"image_processor": Part("DeepseekVLImageProcessor", _DEEPSEEK_SIZES)},
        processor_args=_DEEPSEEK_PROCESSOR,
        config=_deepseek_config(),
    ),
    "qwen3": ChatRecipe(  # a text model (no images)
        model="Qwen3ForCausalLM",
        tokenizer=QWEN_TEXT,
        config=text_model(head_dim=16, eos_token_id=Id("<|im_end|>"), pad_token_id=Id("<|endoftext|>")),
    ),
}

#: The chat models: what ``--model tiny:ARCH`` evaluates: the rows above, and rows that change one of them (a
#: later generation of an architecture; the ``*_hd32`` rows, of head size 32, load in vLLM's CPU attention,
#: LLaVA's weights in llava-hf's layout, as vLLM's loader requires).
RECIPES: dict[str, ChatRecipe] = {
    **_ROWS,
    "llava_next": replace(  # LLaVA with the any-resolution grid
        _ROWS["llava"],
        model="LlavaNextForConditionalGeneration",
        processor="LlavaNextProcessor",
        parts={
            "image_processor": Part("LlavaNextImageProcessor", {**_LLAVA_SIZES, "image_grid_pinpoints": _LLAVA_GRID})
        },
        config=_llava_config(image_grid_pinpoints=_LLAVA_GRID),
    ),
    "deepseek_vl_hybrid": replace(  # DeepSeek-VL with a SAM view of the 56-pixel padded square
        _ROWS["deepseek_vl"],
        model="DeepseekVLHybridForConditionalGeneration",
        processor="DeepseekVLHybridProcessor",
        parts={
            "image_processor": Part(
                "DeepseekVLHybridImageProcessor", {**_DEEPSEEK_SIZES, "high_res_size": {"height": 56, "width": 56}}
            )
        },
        config=_deepseek_config(high_res_vision_config=_SAM_VIEW),
    ),
    "qwen2_vl_hd32": _vllm_cpu(_ROWS["qwen2_vl"], rope_parameters=qwen_rope([4, 6, 6])),
    "qwen2_5_vl_hd32": _vllm_cpu(_ROWS["qwen2_5_vl"], rope_parameters=qwen_rope([4, 6, 6])),
    "llava_hd32": replace(_vllm_cpu(_ROWS["llava"]), hub_layout=True),
    "qwen3_hd32": _vllm_cpu(_ROWS["qwen3"], head_dim=32),
}
