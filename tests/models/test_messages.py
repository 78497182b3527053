"""ChatMessage at the backend seam: lmms-eval's message dicts read once, each backend's format made at its
edge, and request keys unchanged from the dict messages, so stored responses stay valid."""

from __future__ import annotations

import pytest
from PIL import Image

from harness.engine.loglikelihood import choice_request
from harness.engine.requests import make_request
from harness.hashing import image_digest
from harness.models.base import GenerationParams
from harness.models.messages import ChatMessage, ImagePart, TextPart, from_lmms, has_image, prompt_json
from harness.models.openai_api import to_openai_messages
from harness.models.vllm import to_vllm_messages


def _image() -> Image.Image:
    image = Image.new("RGB", (4, 3), (200, 10, 30))
    image.putpixel((1, 2), (0, 255, 0))
    return image


def _asked() -> list[ChatMessage]:
    return [ChatMessage.user("What colour is the shape?", [_image()])]


# Keys and seeds computed from dict messages (``[{"role": "user", "content": [{"type": "image", "url": image},
# {"type": "text", "text": ...}]}]``) before messages were typed: the same requests must keep them.
def test_request_keys_and_seeds_are_those_of_the_dict_messages() -> None:
    greedy = GenerationParams.from_kwargs({"max_new_tokens": 16, "until": ["\n"]})
    first = make_request(_asked(), greedy, 1, 0)
    assert (first.key, first.seed) == ("b94f989db15a127c8f387736", 431311130)
    conversation = [*_asked(), ChatMessage.of_text("assistant", "Red."), ChatMessage.of_text("user", "Why?")]
    sampled = make_request(conversation, GenerationParams.from_kwargs({"temperature": 0.7}), 3, 5)
    assert (sampled.key, sampled.seed) == ("fe63b2196d5fa1c378a26577", 1104398341)
    text = make_request([ChatMessage.of_text("user", "héllo")], GenerationParams(), 1, 0)
    assert (text.key, text.seed) == ("f89518efdd0f96a9d6bf43e9", 850024802)
    assert choice_request(_asked(), [" red", " blue"]).key == "a0f0e658d8da3ea244ff4614"


def test_the_recorded_prompt_is_lmms_eval_s_format_with_image_digests() -> None:
    image = _image()
    assert prompt_json([ChatMessage.user("Q?", [image])]) == [
        {
            "role": "user",
            "content": [
                {"type": "image", "url": {"image_sha256": image_digest(image)}},
                {"type": "text", "text": "Q?"},
            ],
        }
    ]


def test_lmms_eval_messages_read_as_typed_parts() -> None:
    image = _image()
    read = from_lmms(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Q?"}]},
        ]
    )
    assert read == [
        ChatMessage("system", (TextPart("Be brief."),)),
        ChatMessage("user", (ImagePart(image), TextPart("Q?"))),
    ]
    assert read[1].images == [image] and read[1].text == "Q?" and has_image(read) and not has_image(read[:1])


@pytest.mark.parametrize(
    "value, message",
    [
        ({"role": "user", "content": "hi"}, "returned dict, not a list of messages"),
        ([{"role": "robot", "content": "hi"}], "message 1 is not a {'role': system | user | assistant"),
        ([{"role": "user", "content": 3}], "message 1: content is int, not a string or a list of items"),
        ([{"role": "user", "content": [{"type": "video", "url": "v.mp4"}]}], "message 1 item 1: 'video' is not"),
        ([{"role": "user", "content": [{"type": "text", "text": None}]}], "message 1 item 1: 'text' is not"),
    ],
)
def test_anything_else_is_a_one_line_value_error(value: object, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("{", r"\{").replace("|", r"\|")):
        from_lmms(value)


def test_each_backend_makes_its_own_format_at_its_edge() -> None:
    image = _image()
    messages = [ChatMessage.user("Q?", [image]), ChatMessage.of_text("assistant", "Red.")]
    openai = to_openai_messages(messages)
    assert openai[0]["content"][0]["type"] == "image_url"
    assert openai[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert openai[1] == {"role": "assistant", "content": [{"type": "text", "text": "Red."}]}
    vllm = to_vllm_messages(messages)
    part = vllm[0]["content"][0]
    assert part["type"] == "image_pil" and image_digest(part["image_pil"]) == image_digest(image)
    assert vllm[0]["content"][1] == {"type": "text", "text": "Q?"} and vllm[1] == openai[1]
