"""Chat messages at the backend seam: a role and typed content parts (text, image).

Tasks speak lmms-eval's ``doc_to_messages`` format (``{"role": ..., "content": [{"type": "text", "text": ...},
{"type": "image", "url": <PIL image>}]}``); :func:`from_lmms` reads it once, where the engine builds a prompt,
and every backend converts :class:`ChatMessage` values to its own library's format at its edge (a chat
template's dicts, the OpenAI API's content parts, vLLM's ``image_pil`` parts). :meth:`ChatMessage.to_json`
is the one way back to that format: it is what a samples file records and what a request's key hashes, so a
prompt keeps the key it had when messages were dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from harness.hashing import to_jsonable

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = get_args(Role)


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a message."""

    text: str

    def to_json(self) -> dict[str, Any]:
        """lmms-eval's text item."""
        return {"type": "text", "text": self.text}


@dataclass(frozen=True)
class ImagePart:
    """An image in a message: a decoded PIL image, or (a prompt rebuilt from a samples file) its recorded
    ``{"image_sha256": ...}``."""

    image: Any

    def to_json(self) -> dict[str, Any]:
        """lmms-eval's image item (the image itself: :func:`harness.hashing.to_jsonable` digests it)."""
        return {"type": "image", "url": self.image}


Part = TextPart | ImagePart


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation: who speaks, and what they say, in order."""

    role: Role
    content: tuple[Part, ...]

    @classmethod
    def user(cls, text: str, images: Iterable[Any] = ()) -> ChatMessage:
        """A user turn: the images first, then the text (how lmms-eval's models lay out doc_to_visual and
        doc_to_text)."""
        return cls("user", (*(ImagePart(image) for image in images), TextPart(text)))

    @classmethod
    def of_text(cls, role: Role, text: str) -> ChatMessage:
        """A turn of text only (a follow-up question, an assistant's answer, a judge's prompt)."""
        return cls(role, (TextPart(text),))

    @property
    def images(self) -> list[Any]:
        """The message's images, in order."""
        return [part.image for part in self.content if isinstance(part, ImagePart)]

    @property
    def text(self) -> str:
        """The message's text parts joined (what a text-only prompt format shows)."""
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    def to_json(self) -> dict[str, Any]:
        """The message in lmms-eval's format, images as they are."""
        return {"role": self.role, "content": [part.to_json() for part in self.content]}


def prompt_json(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Messages as a samples file records them and request keys hash them: lmms-eval's format, each
    image replaced by ``{"image_sha256": ...}``."""
    return [to_jsonable(message.to_json()) for message in messages]


def has_image(messages: Sequence[ChatMessage]) -> bool:
    """Whether any message holds an image."""
    return any(message.images for message in messages)


def from_lmms(value: Any) -> list[ChatMessage]:
    """lmms-eval's ``doc_to_messages`` result as typed messages: a list of ``{"role", "content"}``, the
    content a string or a list of ``text`` and ``image`` items (an image under ``url`` or ``image``).
    Anything else is a ``ValueError`` saying which message and item, so a task's mistake is one doc's error."""
    if not isinstance(value, list | tuple):
        raise ValueError(f"returned {type(value).__name__}, not a list of messages")
    return [_message(i, message) for i, message in enumerate(value, 1)]


def _message(number: int, message: Any) -> ChatMessage:
    if not isinstance(message, dict) or message.get("role") not in ROLES or "content" not in message:
        raise ValueError(f"message {number} is not a {{'role': {' | '.join(ROLES)}, 'content': ...}} mapping")
    content = message["content"]
    if isinstance(content, str):
        return ChatMessage.of_text(message["role"], content)
    if not isinstance(content, list | tuple):
        raise ValueError(f"message {number}: content is {type(content).__name__}, not a string or a list of items")
    return ChatMessage(message["role"], tuple(_part(number, j, item) for j, item in enumerate(content, 1)))


def _part(number: int, index: int, item: Any) -> Part:
    kind = item.get("type") if isinstance(item, dict) else None
    if kind == "text" and isinstance(item.get("text"), str):
        return TextPart(item["text"])
    if kind == "image":
        return ImagePart(item.get("url", item.get("image")))
    raise ValueError(f"message {number} item {index}: {kind!r} is not a text or image item (lmms-eval's format)")
