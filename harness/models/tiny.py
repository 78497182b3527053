"""Offline smoke models: tiny random-weight models of real VLM architectures (``tiny:<arch>``).

Each recipe builds a real config, a real processor and a byte-level BPE tokenizer trained locally,
saves them to a cache folder once, and from then on the ``hf`` backend loads that folder exactly as it
loads a user's model. Outputs are meaningless by design: these models exist to exercise code paths.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import ModelSpecError
from harness.extras import require
from harness.models.tiny_clip import build_tiny_clip
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


def _tokenizer(specials: list[str], template: str | None, **special_kwargs: Any) -> Any:
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
    tok = _tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
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
    _save(model_cls(config), processor, out)


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
    tok = _tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
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
    _save(model_cls(config), processor, out)


def _build_llava(out: Path, next_gen: bool = False, hd32: bool = False) -> None:
    """LLaVA-1.5 (CLIP + Llama), or LLaVA-NeXT with its any-resolution grid when ``next_gen``. ``hd32``:
    text heads of 32 and the weights in llava-hf's layout (``hub_llava_layout``), as vLLM loads them."""
    import transformers

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    tok = _tokenizer(specials, LLAVA_TEMPLATE, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
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
    _save(model_cls(config), processor, out)
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
    return _tokenizer(
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
    _save(model, processor, out)


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
    _save(model, processor, out)


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
    tok = _tokenizer(
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
        require("num2words", "fusion", "tiny:smolvlm (transformers' SmolVLMProcessor)")
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
    _save(model_cls(config), processor, out)


def _build_blip(out: Path, instruct: bool = False) -> None:
    """BLIP-2 (ViT, Q-Former, OPT) or InstructBLIP (its Q-Former also reads the instruction; Llama as
    Vicuna). Like the real checkpoints, no chat template: the hf backend prompts them in plain text."""
    import transformers
    from transformers import BlipImageProcessor

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    tok = _tokenizer(
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
        qformer_tok = _tokenizer(
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
    _save(model_cls(config), processor, out)


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
    tok = _tokenizer(
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
    _save(model_cls(config), processor, out)


def _build_qwen3(out: Path, hd32: bool = False) -> None:
    """A Qwen3 text model (no images); ``hd32``: heads of 32 (``VLLM_CPU_HEADS``)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = _tokenizer(specials, QWEN_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    heads: dict[str, Any] = {**VLLM_CPU_HEADS, "head_dim": 32} if hd32 else {"head_dim": 16}
    config = Qwen3Config(
        **_text_config(len(tok), **heads), eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )
    _save(Qwen3ForCausalLM(config), tok, out)


def _build_sdxl_turbo(out: Path) -> None:
    """A text-to-image pipeline of SDXL-Turbo's classes (two CLIP text encoders, a text-time UNet, an
    AutoencoderKL, Euler ancestral with trailing timesteps) that makes 64x64 images."""
    require("diffusers", "vista", "tiny:sdxl_turbo")
    from diffusers import (  # the [vista] extra
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    tok = _tokenizer(
        ["<|startoftext|>", "<|endoftext|>"],
        None,
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        model_max_length=77,
    )
    tok.padding_side = "right"
    text = CLIPTextConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        hidden_size=32,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=len(tok),
        projection_dim=32,
        max_position_embeddings=77,
    )
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=1,
        sample_size=32,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4),
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=8,
        transformer_layers_per_block=(1, 1),
        projection_class_embeddings_input_dim=6 * 8 + 32,
        cross_attention_dim=64,
        norm_num_groups=8,
    )
    vae = AutoencoderKL(
        block_out_channels=[8, 16],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        sample_size=64,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        norm_num_groups=8,
    )
    scheduler = EulerAncestralDiscreteScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", timestep_spacing="trailing"
    )
    pipeline = StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=CLIPTextModel(text),
        tokenizer=tok,
        tokenizer_2=tok,
        text_encoder_2=CLIPTextModelWithProjection(text),
        unet=unet,
        scheduler=scheduler,
    )
    pipeline.save_pretrained(out)
    _mark(out)


def _build_owlv2(out: Path) -> None:
    """An OWLv2 open-vocabulary detector (CLIP-style text and vision towers, box and class heads)."""
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    tok = _tokenizer(
        ["<|startoftext|>", "<|endoftext|>"],
        "",
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    tok.model_max_length = 16
    tok.chat_template = None
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 56, "width": 56}), tokenizer=tok)
    config = Owlv2Config(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 16,
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": 56,
            "patch_size": 14,
        },
        projection_dim=32,
    )
    _save(Owlv2ForObjectDetection(config), processor, out)


def _clip_tokenizer(folder: Path) -> Any:
    """A byte-level CLIP tokenizer with one token per byte (no merges), written to ``folder``."""
    import json

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


def _build_instruct_pix2pix(out: Path) -> None:
    """An InstructPix2Pix image editor (UNet with 8 input channels, VAE, CLIP text encoder, a CLIP
    tokenizer written locally, Euler ancestral): FusionAudit's Nat-Evid path; its edits are noise."""
    import torch

    require("diffusers", "fusion", "tiny:instruct_pix2pix")
    from diffusers import (  # the [fusion] extra
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tok_dir:
        tokenizer = _clip_tokenizer(Path(tok_dir))
    unet = UNet2DConditionModel(
        block_out_channels=(16, 32),
        layers_per_block=1,
        sample_size=16,
        in_channels=8,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        norm_num_groups=8,
        attention_head_dim=4,
    )
    vae = AutoencoderKL(
        block_out_channels=[16, 32],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        norm_num_groups=8,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            hidden_size=32,
            intermediate_size=37,
            num_attention_heads=4,
            num_hidden_layers=2,
            vocab_size=len(tokenizer),
            projection_dim=32,
            max_position_embeddings=256,
        )
    )
    pipe = StableDiffusionInstructPix2PixPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(beta_schedule="scaled_linear"),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(out)
    _mark(out)


def _save(model: Any, processor: Any, out: Path) -> None:
    model.save_pretrained(out)
    processor.save_pretrained(out)
    _mark(out)


def _mark(out: Path) -> None:
    (out / "SMOKE_TEST_MODEL.txt").write_text(
        "Tiny random-weight model built by the harness for offline tests; its outputs are meaningless.\n"
    )


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
    "sdxl_turbo": _build_sdxl_turbo,  # text-to-image (VISTA's image builder), not a VLM
    "instruct_pix2pix": _build_instruct_pix2pix,  # an image editor (FusionAudit's Nat-Evid), not a VLM
    "owlv2": _build_owlv2,  # a detector (harness.protocols.diavlo.detector), not a chat model
    "clip": build_tiny_clip,  # an image-text encoder (the Stealth CLIP probe), not a chat model
}
# Tiny models that are not chat models, with what they are for: offered to --model they are refused by name.
NOT_CHAT = {
    "sdxl_turbo": "a text-to-image generator for vista builds (harness build vista --generator tiny:sdxl_turbo)",
    "instruct_pix2pix": "an image editor for fusionaudit builds (harness build fusionaudit --editor tiny)",
    "owlv2": "an open-vocabulary detector for diavlo builds and audits (--detector tiny:owlv2)",
    "clip": "an image-text encoder for the Stealth CLIP probe (harness.protocols.stealth.clip_probe)",
}


def require_chat_arch(arch: str) -> None:
    """Refuse a non-chat tiny model as ``--model`` before transformers fails on its configuration class."""
    if arch in NOT_CHAT:
        raise ModelSpecError(
            f"tiny:{arch} is not a chat model to evaluate: it is {NOT_CHAT[arch]}; "
            f"chat models: {', '.join('tiny:' + a for a in sorted(set(RECIPES) - set(NOT_CHAT)))}"
        )


def tiny_model_path(arch: str) -> Path:
    """Build (once, under a lock) and return the folder of the tiny ``arch`` model."""
    if arch not in RECIPES:
        raise ModelSpecError(f"unknown tiny architecture {arch!r}; choose from {', '.join(sorted(RECIPES))}")
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
                RECIPES[arch](tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
            shutil.rmtree(tmp, ignore_errors=True)
    return out
