"""The chat templates of the tiny chat models: each architecture's real chat format, written short (the
image markers its processor expands, the roles and turn tokens of its checkpoints)."""

from __future__ import annotations

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

#: DeepSeek-VL's chat format: a system line, then ``User:`` / ``Assistant:`` turns split by blank lines.
DEEPSEEK_VL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
    "{% elif message['role'] == 'user' %}User: {% else %}Assistant: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image_placeholder>{% elif item['type'] == 'text' %}{{ item['text'] }}"
    "{% endif %}{% endfor %}{% endif %}{{ '\\n\\n' }}{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)
