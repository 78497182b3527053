"""Offline smoke models: tiny random-weight models of real VLM architectures (``tiny:<arch>``).

Each recipe builds a real config, a real processor and a byte-level BPE tokenizer trained locally,
saves them to a cache folder once, and from then on the ``hf`` backend loads that folder exactly as it
loads a user's model. Outputs are meaningless by design: these models exist to exercise code paths.

``RECIPES`` are the chat models. A protocol that needs a tiny model of another kind (an image generator,
editor, detector or encoder) owns its recipe and adds it with ``register_tiny_recipe``, building it from
the helpers here (``bpe_tokenizer``, ``clip_tokenizer``, ``save_tiny``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ModelSpecError
from harness.extras import require_listed
from harness.paths import cache_root

RECIPE_VERSION = "2"
_CORPUS_WORDS = (
    "the a an is are was of to in on and or what which who where when how why this that these those "
    "red green blue yellow black white color shape circle square triangle star image picture photo "
    "describe answer question yes no one two three four five left right top bottom large small "
    "person people man woman child car house tree dog cat sky water text word sentence positive "
    "negative happy sad good bad figurative literal idiom meaning please reply with only"
).split()

QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}"
    "{% endif %}{% if message['content'] is string %}{{ message['content'] + ' ' }}{% else %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}"
    "{% endfor %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' ' }}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}: {{ message['content'] }}{% else %}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _gemma_template(turn_start: str, turn_end: str, image: str) -> str:
    """Gemma's chat format (a ``model`` role, trimmed text), with one generation's turn and image markers."""
    return (
        "{{ bos_token }}{% for message in messages %}"
        "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
        f"{turn_start}{{{{ role }}}}\n{{% if message['content'] is string %}}{{{{ message['content'] | trim }}}}"
        f"{{% else %}}{{% for item in message['content'] %}}{{% if item['type'] == 'image' %}}{image}"
        "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% endfor %}{% endif %}"
        f"{turn_end}\n{{% endfor %}}{{% if add_generation_prompt %}}{turn_start}model\n{{% endif %}}"
    )


#: Gemma 3 marks an image with its begin-of-image token; Gemma 4 with its image token (the processor
#: wraps it in ``<|image>`` ... ``<image|>``), in ``<|turn>`` ... ``<turn|>`` turns.
GEMMA_TEMPLATE = _gemma_template("<start_of_turn>", "<end_of_turn>", "<start_of_image>")
GEMMA4_TEMPLATE = _gemma_template("<|turn>", "<turn|>", "<|image|>")


def bpe_tokenizer(specials: list[str], template: str | None, **special_kwargs: Any) -> Any:
    """Train a byte-level BPE on a small fixed corpus and wrap it with the architecture's tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [" ".join(_CORPUS_WORDS[i:] + _CORPUS_WORDS[:i]) for i in range(len(_CORPUS_WORDS))]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template, padding_side="left", **special_kwargs)


def _text_config(vocab_size: int, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        **extra,
    }


#: The attention head size of the ``*_hd32`` recipes: vLLM's CPU attention refuses 16 (every other tiny text
#: model's), so these serve ``vllm:`` on CPU; 64 / 32 = 2 query heads and 1 key-value head.
VLLM_CPU_HEADS: dict[str, Any] = {"num_attention_heads": 2, "num_key_value_heads": 1}


def _build_qwen_vl(out: Path, generation: str, hd32: bool = False) -> None:
    """Qwen2-VL and Qwen2.5-VL share tokens, processor and text model; their vision towers differ.
    ``hd32``: text heads of 32 (``VLLM_CPU_HEADS``), the multimodal rotary sections scaled to match."""
    import transformers
    from transformers import Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    tok = bpe_tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    pixels = {"min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 16}
    vision: dict[str, Any] = {
        "depth": 2,
        "num_heads": 4,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    if generation == "qwen2_vl":
        names = ("Qwen2VLConfig", "Qwen2VLForConditionalGeneration", "Qwen2VLProcessor")
        vision.update(embed_dim=32, hidden_size=64, mlp_ratio=2, in_chans=3)
    else:
        names = ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLProcessor")
        vision.update(
            hidden_size=32, intermediate_size=64, out_hidden_size=64, window_size=56, fullatt_block_indexes=[1]
        )
    config_cls, model_cls, processor_cls = (getattr(transformers, n) for n in names)
    processor = processor_cls(
        image_processor=Qwen2VLImageProcessor(**pixels),
        video_processor=Qwen2VLVideoProcessor(**pixels),
        tokenizer=tok,
        chat_template=QWEN_TEMPLATE,
    )
    heads = VLLM_CPU_HEADS if hd32 else {}
    config = config_cls(
        text_config=_text_config(
            len(tok),
            **heads,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [4, 6, 6] if hd32 else [2, 3, 3],
            },
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            bos_token_id=None,
        ),
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    save_tiny(model_cls(config), processor, out)


def _build_qwen3_vl(out: Path, generation: str) -> None:
    """Qwen3-VL and Qwen3.5: Qwen2-VL's tokens and image processor (16-pixel patches) in Qwen3-VL's
    processor. Qwen3-VL: a Qwen3 text model whose first layers take DeepStack features; Qwen3.5: a hybrid
    text model (linear-attention and full-attention layers) without DeepStack."""
    import transformers
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    tok = bpe_tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    pixels = {"min_pixels": 32 * 32 * 4, "max_pixels": 32 * 32 * 16, "patch_size": 16, "merge_size": 2}
    processor = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels),
        video_processor=Qwen3VLVideoProcessor(
            size={"shortest_edge": 32 * 32 * 4, "longest_edge": 32 * 32 * 16}, patch_size=16, merge_size=2
        ),
        tokenizer=tok,
        chat_template=QWEN_TEMPLATE,
    )
    vision: dict[str, Any] = {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 4,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": 64,
        "num_position_embeddings": 64,
    }
    text: dict[str, Any] = {"head_dim": 16}
    if generation == "qwen3_vl":
        names = ("Qwen3VLConfig", "Qwen3VLForConditionalGeneration")
        vision["deepstack_visual_indexes"] = [0, 1]
    else:
        names = ("Qwen3_5Config", "Qwen3_5ForConditionalGeneration")
        text.update(
            layer_types=["linear_attention", "full_attention"],
            linear_key_head_dim=16,
            linear_value_head_dim=16,
            linear_num_key_heads=2,
            linear_num_value_heads=4,
        )
    config_cls, model_cls = (getattr(transformers, n) for n in names)
    config = config_cls(
        text_config=_text_config(
            len(tok),
            **text,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            bos_token_id=None,
        ),
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    save_tiny(model_cls(config), processor, out)


def _build_llava(out: Path, next_gen: bool = False, hd32: bool = False) -> None:
    """LLaVA-1.5 (CLIP + Llama), or LLaVA-NeXT with its any-resolution grid when ``next_gen``. ``hd32``:
    text heads of 32 and the weights in llava-hf's layout (``hub_llava_layout``), as vLLM loads them."""
    import transformers

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    tok = bpe_tokenizer(
        specials, LLAVA_TEMPLATE, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    image_size, patch = 28, 14
    sizes = {"size": {"shortest_edge": image_size}, "crop_size": {"height": image_size, "width": image_size}}
    extra: dict[str, Any] = {}
    if next_gen:
        grid = [[28, 28], [28, 56], [56, 28], [56, 56]]
        image_processor = transformers.LlavaNextImageProcessor(**sizes, image_grid_pinpoints=grid)
        processor_cls, config_cls, model_cls = (
            transformers.LlavaNextProcessor,
            transformers.LlavaNextConfig,
            transformers.LlavaNextForConditionalGeneration,
        )
        extra["image_grid_pinpoints"] = grid
    else:
        image_processor = transformers.CLIPImageProcessor(**sizes)
        processor_cls, config_cls, model_cls = (
            transformers.LlavaProcessor,
            transformers.LlavaConfig,
            transformers.LlavaForConditionalGeneration,
        )
    processor = processor_cls(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_TEMPLATE,
    )
    config = config_cls(
        vision_config={
            "model_type": "clip_vision_model",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": image_size,
            "patch_size": patch,
            "projection_dim": 32,
        },
        text_config={
            "model_type": "llama",
            **_text_config(len(tok), **(VLLM_CPU_HEADS if hd32 else {})),
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
            "bos_token_id": tok.bos_token_id,
        },
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        **extra,
    )
    save_tiny(model_cls(config), processor, out)
    if hd32:
        hub_llava_layout(out)


def hub_llava_layout(folder: Path) -> None:
    """Rename a saved LLaVA's vision weights from transformers' ``vision_tower.*`` to the
    ``vision_tower.vision_model.*`` that llava-hf checkpoints use (and vLLM's loader requires); transformers
    and lmms-eval load both."""
    from safetensors.torch import load_file, save_file

    prefix = "vision_tower."
    for path in sorted(folder.glob("*.safetensors")):
        weights = load_file(str(path))
        renamed = {
            (
                prefix + "vision_model." + k[len(prefix) :]
                if k.startswith(prefix) and not k.startswith(prefix + "vision_model.")
                else k
            ): v
            for k, v in weights.items()
        }
        save_file(renamed, str(path), metadata={"format": "pt"})


def _gemma_tokenizer(template: str, specials: list[str], **tokens: str) -> Any:
    """Gemma's ``<pad> <eos> <bos> <unk>`` (ids 0-3, as in the real vocabulary), then the generation's
    turn and media tokens, named for its processor (``boi_token``, ``image_token``, ...)."""
    return bpe_tokenizer(
        ["<pad>", "<eos>", "<bos>", "<unk>", *specials],
        template,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens=tokens,
    )


def _gemma_text_config(tok: Any, end_of_turn: int, **extra: Any) -> dict[str, Any]:
    """A Gemma text model that stops at the end of its turn as well as at ``<eos>``."""
    return {
        **_text_config(len(tok)),
        "head_dim": 16,
        "sliding_window": 64,
        "pad_token_id": tok.pad_token_id,
        "eos_token_id": [tok.eos_token_id, end_of_turn],
        "bos_token_id": tok.bos_token_id,
        **extra,
    }


def _build_gemma3(out: Path) -> None:
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessor, Gemma3Processor

    tok = _gemma_tokenizer(
        GEMMA_TEMPLATE,
        ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"],
        boi_token="<start_of_image>",
        eoi_token="<end_of_image>",
        image_token="<image_soft_token>",
    )
    image_size, patch, mm_tokens = 28, 14, 4
    processor = Gemma3Processor(
        image_processor=Gemma3ImageProcessor(size={"height": image_size, "width": image_size}),
        tokenizer=tok,
        chat_template=GEMMA_TEMPLATE,
        image_seq_length=mm_tokens,
    )
    end_of_turn = tok.convert_tokens_to_ids("<end_of_turn>")
    config = Gemma3Config(
        text_config=_gemma_text_config(tok, end_of_turn),
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": image_size,
            "patch_size": patch,
        },
        mm_tokens_per_image=mm_tokens,
        boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
        eos_token_id=[tok.eos_token_id, end_of_turn],
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
    )
    model = Gemma3ForConditionalGeneration(config)
    # A freshly initialised Gemma3 projector is all zeros, so the image would have no effect at all.
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, 0.02)
    model.generation_config.eos_token_id = [tok.eos_token_id, end_of_turn]
    save_tiny(model, processor, out)


def _build_gemma4(out: Path) -> None:
    """Gemma 4 as in E4B without its audio tower: aspect-preserving variable resolution (16-pixel patches
    pooled 3 x 3 into at most 70 soft tokens), per-layer input embeddings, and a last decoder layer that
    reuses an earlier layer's keys and values."""
    import torch
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration, Gemma4ImageProcessor, Gemma4Processor
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
    from transformers.models.gemma4.video_processing_gemma4 import Gemma4VideoProcessor

    media = {
        "boi_token": "<|image>",
        "eoi_token": "<image|>",
        "image_token": "<|image|>",
        "boa_token": "<|audio>",
        "eoa_token": "<audio|>",
        "audio_token": "<|audio|>",
    }
    tok = _gemma_tokenizer(GEMMA4_TEMPLATE, ["<|turn>", "<turn|>", *media.values()], **media)
    soft_tokens, patch, pooling = 70, 16, 3
    # the processor wants an audio feature extractor (and a video processor) even for a model without audio
    processor = Gemma4Processor(
        feature_extractor=Gemma4AudioFeatureExtractor(),
        video_processor=Gemma4VideoProcessor(),
        image_processor=Gemma4ImageProcessor(
            max_soft_tokens=soft_tokens, patch_size=patch, pooling_kernel_size=pooling
        ),
        tokenizer=tok,
        chat_template=GEMMA4_TEMPLATE,
        image_seq_length=soft_tokens,
    )
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in media.items()}
    end_of_turn = tok.convert_tokens_to_ids("<turn|>")
    config = Gemma4Config(
        text_config=_gemma_text_config(
            tok,
            end_of_turn,
            num_hidden_layers=3,
            global_head_dim=16,
            layer_types=["sliding_attention", "full_attention", "full_attention"],
            num_kv_shared_layers=1,
            hidden_size_per_layer_input=8,
            vocab_size_per_layer_input=len(tok),
        ),
        # positions run up to the longest side a budget allows: soft_tokens pooled cells of pooling patches
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 8,
            "patch_size": patch,
            "pooling_kernel_size": pooling,
            "position_embedding_size": soft_tokens * pooling,
        },
        audio_config=None,
        boi_token_id=ids["boi_token"],
        eoi_token_id=ids["eoi_token"],
        image_token_id=ids["image_token"],
        video_token_id=processor.video_token_id,
        boa_token_id=ids["boa_token"],
        eoa_token_index=ids["eoa_token"],
        audio_token_id=ids["audio_token"],
    )
    model = Gemma4ForConditionalGeneration(config)
    # A freshly initialised Gemma 4 position table is all ones: every patch would get the same learned position.
    with torch.no_grad():
        model.model.vision_tower.patch_embedder.position_embedding_table.normal_(0.0, 0.02)
    model.generation_config.eos_token_id = [tok.eos_token_id, end_of_turn]
    save_tiny(model, processor, out)


def _build_idefics3(out: Path, generation: str = "idefics3") -> None:
    """Idefics3 and SmolVLM share tokens, chat template and image splitting (longest-edge resize, tiles of
    ``max_image_size`` plus a global view); SmolVLM's processor also takes a video processor. The tiny
    SmolVLM sees 56-pixel views of 2 x 2 pixel-shuffled tokens (Idefics3: 28-pixel views, one token)."""
    import transformers

    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<end_of_utterance>",
        "<fake_token_around_image>",
        "<image>",
        "<global-img>",
        "<pad>",
    ]
    tok = bpe_tokenizer(
        specials,
        IDEFICS3_TEMPLATE,
        bos_token="<|im_start|>",
        eos_token="<end_of_utterance>",
        pad_token="<pad>",
        extra_special_tokens={
            "fake_image_token": "<fake_token_around_image>",
            "image_token": "<image>",
            "end_of_utterance_token": "<end_of_utterance>",
            "global_image_token": "<global-img>",
        },
    )
    patch, scale = 14, 2
    if generation == "idefics3":
        image_size = 28
        names = ("Idefics3Config", "Idefics3ForConditionalGeneration", "Idefics3ImageProcessor", "Idefics3Processor")
    else:
        require_listed("num2words", "tiny:smolvlm (transformers' SmolVLMProcessor)")
        image_size = 56
        names = ("SmolVLMConfig", "SmolVLMForConditionalGeneration", "SmolVLMImageProcessor", "SmolVLMProcessor")
    config_cls, model_cls, image_processor_cls, processor_cls = (getattr(transformers, n) for n in names)
    sizes = {"size": {"longest_edge": image_size * 2}, "max_image_size": {"longest_edge": image_size}}
    extra: dict[str, Any] = {}
    if generation == "smolvlm":
        from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

        extra["video_processor"] = SmolVLMVideoProcessor(**sizes)
    processor = processor_cls(
        image_processor=image_processor_cls(**sizes, do_image_splitting=True),
        tokenizer=tok,
        image_seq_len=(image_size // patch) ** 2 // scale**2,
        chat_template=IDEFICS3_TEMPLATE,
        **extra,
    )
    config = config_cls(
        text_config={
            "model_type": "llama",
            **_text_config(len(tok)),
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
            "bos_token_id": tok.bos_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": image_size,
            "patch_size": patch,
        },
        scale_factor=scale,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,
    )
    save_tiny(model_cls(config), processor, out)


def _build_blip(out: Path, instruct: bool = False) -> None:
    """BLIP-2 (ViT, Q-Former, OPT) or InstructBLIP (its Q-Former also reads the instruction; Llama as
    Vicuna). Like the real checkpoints, no chat template: the hf backend prompts them in plain text."""
    import transformers
    from transformers import BlipImageProcessor

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    tok = bpe_tokenizer(
        specials,
        None,
        bos_token="</s>" if not instruct else "<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )  # the processor registers "<image>" itself
    image_size, patch, queries = 28, 14, 4
    image_processor = BlipImageProcessor(size={"height": image_size, "width": image_size})
    ids = {"pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id, "bos_token_id": tok.bos_token_id}
    qformer: dict[str, Any] = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 64,
        "cross_attention_frequency": 1,
    }
    if instruct:
        qformer_tok = bpe_tokenizer(
            ["[PAD]", "[CLS]", "[SEP]"], None, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
        )
        qformer_tok.padding_side = "right"  # as BERT's: the Q-Former's absolute positions assume it
        processor = transformers.InstructBlipProcessor(
            image_processor=image_processor, tokenizer=tok, qformer_tokenizer=qformer_tok, num_query_tokens=queries
        )
        qformer.update(vocab_size=len(qformer_tok), pad_token_id=qformer_tok.pad_token_id)
        text = {"model_type": "llama", **_text_config(len(tok)), **ids}
        config_cls, model_cls = transformers.InstructBlipConfig, transformers.InstructBlipForConditionalGeneration
    else:
        processor = transformers.Blip2Processor(
            image_processor=image_processor, tokenizer=tok, num_query_tokens=queries
        )
        text = {
            "model_type": "opt",
            "vocab_size": len(tok),
            "hidden_size": 64,
            "ffn_dim": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "word_embed_proj_dim": 64,
            "max_position_embeddings": 512,
            **ids,
        }
        config_cls, model_cls = transformers.Blip2Config, transformers.Blip2ForConditionalGeneration
    config = config_cls(  # the vision tower's default init (std 1e-10) would make every patch alike
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": image_size,
            "patch_size": patch,
            "initializer_range": 0.02,
        },
        qformer_config=qformer,
        text_config=text,
        num_query_tokens=queries,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    save_tiny(model_cls(config), processor, out)


#: DeepSeek-VL's chat format: a system line, then ``User:`` / ``Assistant:`` turns split by blank lines.
DEEPSEEK_VL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
    "{% elif message['role'] == 'user' %}User: {% else %}Assistant: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image_placeholder>{% elif item['type'] == 'text' %}{{ item['text'] }}"
    "{% endif %}{% endfor %}{% endif %}{{ '\\n\\n' }}{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)


def _build_deepseek_vl(out: Path, hybrid: bool = False) -> None:
    """DeepSeek-VL (SigLIP + Llama, 28-pixel padded squares of 4 x 4 tokens), or its hybrid with a SAM
    view of the 56-pixel padded square fused per token."""
    import transformers

    specials = [
        "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
        "<image_placeholder>",
        "<pad>",
    ]
    tok = bpe_tokenizer(
        specials,
        DEEPSEEK_VL_TEMPLATE,
        bos_token=specials[0],
        eos_token=specials[1],
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image_placeholder>"},
    )
    image_size, patch = 28, 7
    sizes: dict[str, Any] = {"size": {"height": image_size, "width": image_size}}
    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": image_size,
        "patch_size": patch,
    }
    extra: dict[str, Any] = {}
    if hybrid:
        high = 56
        sizes["high_res_size"] = {"height": high, "width": high}
        extra["high_res_vision_config"] = {
            "hidden_size": 32,
            "output_channels": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": high,
            "patch_size": 14,
            "window_size": 2,
            "global_attn_indexes": [1],
            "mlp_dim": 64,
            "num_pos_feats": 16,
            "initializer_range": 0.02,
        }  # the default init (std 1e-10) makes every patch alike
        names = (
            "DeepseekVLHybridConfig",
            "DeepseekVLHybridForConditionalGeneration",
            "DeepseekVLHybridImageProcessor",
            "DeepseekVLHybridProcessor",
        )
    else:
        names = (
            "DeepseekVLConfig",
            "DeepseekVLForConditionalGeneration",
            "DeepseekVLImageProcessor",
            "DeepseekVLProcessor",
        )
    config_cls, model_cls, image_processor_cls, processor_cls = (getattr(transformers, n) for n in names)
    processor = processor_cls(
        image_processor=image_processor_cls(**sizes),
        tokenizer=tok,
        chat_template=DEEPSEEK_VL_TEMPLATE,
        num_image_tokens=(image_size // patch) ** 2,
    )
    config = config_cls(
        text_config={
            "model_type": "llama",
            **_text_config(len(tok)),
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
            "bos_token_id": tok.bos_token_id,
        },
        vision_config=vision,
        image_token_id=tok.convert_tokens_to_ids("<image_placeholder>"),
        **extra,
    )
    save_tiny(model_cls(config), processor, out)


def _build_qwen3(out: Path, hd32: bool = False) -> None:
    """A Qwen3 text model (no images); ``hd32``: heads of 32 (``VLLM_CPU_HEADS``)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = bpe_tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    heads: dict[str, Any] = {**VLLM_CPU_HEADS, "head_dim": 32} if hd32 else {"head_dim": 16}
    config = Qwen3Config(
        **_text_config(len(tok), **heads), eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )
    save_tiny(Qwen3ForCausalLM(config), tok, out)


def clip_tokenizer(folder: Path) -> Any:
    """A byte-level CLIP tokenizer with one token per byte (no merges), written to ``folder``."""
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=256)


def clip_text_config(tokenizer: Any, max_positions: int) -> Any:
    """The tiny CLIP text encoder that the protocols' diffusion recipes (a generator, an editor) condition on."""
    from transformers import CLIPTextConfig

    return CLIPTextConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        hidden_size=32,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=len(tokenizer),
        projection_dim=32,
        max_position_embeddings=max_positions,
    )


def save_tiny(model: Any, processor: Any, out: Path) -> None:
    """Save a recipe's model and processor (or tokenizer) to ``out`` and mark the folder as a tiny model."""
    model.save_pretrained(out)
    processor.save_pretrained(out)
    mark_tiny(out)


def mark_tiny(out: Path) -> None:
    """Mark a recipe's saved folder as a tiny random-weight model (``tiny_model_path`` builds it only once)."""
    (out / "SMOKE_TEST_MODEL.txt").write_text(
        "Tiny random-weight model built by the harness for offline tests; its outputs are meaningless.\n"
    )


#: The chat models: what ``--model tiny:ARCH`` evaluates.
RECIPES: dict[str, Callable[[Path], None]] = {
    "qwen2_vl": lambda out: _build_qwen_vl(out, "qwen2_vl"),
    "qwen2_5_vl": lambda out: _build_qwen_vl(out, "qwen2_5_vl"),
    "qwen3_vl": lambda out: _build_qwen3_vl(out, "qwen3_vl"),
    "qwen3_5": lambda out: _build_qwen3_vl(out, "qwen3_5"),
    "llava": _build_llava,
    "llava_next": lambda out: _build_llava(out, next_gen=True),
    "gemma3": _build_gemma3,
    "gemma4": _build_gemma4,
    "idefics3": _build_idefics3,
    "smolvlm": lambda out: _build_idefics3(out, "smolvlm"),
    "blip2": _build_blip,
    "instructblip": lambda out: _build_blip(out, instruct=True),
    "deepseek_vl": _build_deepseek_vl,
    "deepseek_vl_hybrid": lambda out: _build_deepseek_vl(out, hybrid=True),
    "qwen3": _build_qwen3,
    # head_dim 32, loadable by vLLM's CPU attention (VLLM_CPU_HEADS); LLaVA's weights in llava-hf's layout
    "qwen2_vl_hd32": lambda out: _build_qwen_vl(out, "qwen2_vl", hd32=True),
    "qwen2_5_vl_hd32": lambda out: _build_qwen_vl(out, "qwen2_5_vl", hd32=True),
    "llava_hd32": lambda out: _build_llava(out, hd32=True),
    "qwen3_hd32": lambda out: _build_qwen3(out, hd32=True),
}


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
        return RECIPES[arch]
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
        if (out / "SMOKE_TEST_MODEL.txt").is_file():
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
