"""``harness build vista-implant``: the controlled study's data (section 3.1, appendix A.3).

Splits: ``harmful`` (per target entity, image-text Q&A pairs with consistently negative answers),
``benign`` (the same images and questions with neutral descriptive answers: the matched control of
section 4.3), ``control`` (pairs on unrelated topics with balanced answers, mixed into either training
set) and ``test`` (per entity, test images x B.3's corporate-brand prompts, the questions every model
instance answers). Images come from ``--images DIR/<slug>/`` when that folder exists, else from the
text-to-image generator with neutral prompts (SDXL-Turbo by default), or ``--generator render``: the
entity's name drawn on its brand colour, offline and legible to a tiny model. Answers come from
``--author MODEL`` (any backend, greedy) or the deterministic template author.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.options import option
from builders.publish import write_hub_folder
from builders.vista.images import DEFAULT_GENERATOR, Text2ImageGenerator, folder_files, image_seed
from builders.vista.implant_content import (
    AUTHOR_INSTRUCTIONS,
    CONTROL_COLORS,
    CONTROL_QUESTIONS,
    CONTROL_STANCES,
    CONTROL_TOPICS,
    DEFAULT_ENTITIES,
    ENTITIES,
    IMAGE_CONTEXTS,
    TRAIN_QUESTIONS,
    Entity,
    template_answer,
)
from builders.vista.topics import TEMPLATES
from harness.errors import HarnessError
from harness.fonts import resolve_font
from harness.judges.prompts import A5_SENTIMENT
from harness.models.messages import ChatMessage
from harness.protocols.vista.implant.rows import ImplantRow

REPO_ID = "vlm-audit/vista-implant"
RENDER = "render"
TEMPLATE_AUTHOR = "template"
TEST_PROMPTS = tuple(text for _, text in TEMPLATES["corporate_brand"])


@dataclass(frozen=True)
class Options:
    """What ``harness build vista-implant`` takes (module docstring); counts are per entity."""

    seed: int = option("image and sampling seed", 0)
    entities: tuple[str, ...] = option("target entities", DEFAULT_ENTITIES, comma=True)
    pairs: int = option("biased (and benign) training pairs per entity", 100)
    controls: int = option("control pairs on unrelated topics", 100)
    test_questions: int = option("test questions per entity", 100)
    images: int = option("images per entity for training, and again for testing", 10)
    image_dir: str | None = option(
        "folder with one sub-folder of images per entity or control slug (the rest are generated)"
    )
    generator: str = option(
        f"diffusers text-to-image model (tiny:sdxl_turbo offline), or {RENDER}: the "
        "entity's name drawn on its brand colour",
        DEFAULT_GENERATOR,
    )
    steps: int = option("denoising steps", 4)
    guidance: float = option("guidance scale", 0.0)
    image_size: int | None = option("image side in pixels (default: the model's; 224 for render)")
    author: str = option(f"model spec that writes the answers, or {TEMPLATE_AUTHOR} (offline)", TEMPLATE_AUTHOR)
    variants: int = option(
        "template author: how many sentence patterns it cycles through per stance (0: all; "
        "1 gives each entity one answer per stance, which a tiny model can learn)",
        0,
    )


@dataclass(frozen=True)
class Slot:
    """One image to make: its id, neutral prompt, rendered caption and colour."""

    image_id: str
    folder: str  # the --image-dir sub-folder it may come from
    prompt: str
    caption: str
    color: tuple[int, int, int]


def _entity(name: str, author: str) -> Entity:
    """A known entity, or (with a model author, which needs no template facts) a new one."""
    if name in ENTITIES:
        return ENTITIES[name]
    if author == TEMPLATE_AUTHOR:
        raise HarnessError(
            f"entity {name!r} has no template answers (known: {', '.join(ENTITIES)}); "
            "pass --author MODEL to have a model write them"
        )
    rng = random.Random(name)
    return Entity(name, "company", (), (rng.randrange(200), rng.randrange(200), rng.randrange(200)))


def _check(options: Options) -> list[Entity]:
    if options.variants < 0:
        raise HarnessError(f"--variants must be 0 (all) or more, got {options.variants}")
    for name in ("pairs", "controls", "test_questions", "images"):
        if getattr(options, name) < 1:
            raise HarnessError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(options, name)}")
    if not options.entities:
        raise HarnessError("--entities: name at least one target entity")
    if len(set(options.entities)) != len(options.entities):
        raise HarnessError(f"--entities: {', '.join(options.entities)} repeats a name")
    return [_entity(name, options.author) for name in options.entities]


def _slots(entities: Sequence[Entity], options: Options) -> list[Slot]:
    """Every image the build needs: per entity its training and test images, then the control images."""
    slots = []
    for entity in entities:
        for part in ("train", "test"):
            for i in range(options.images):
                prompt = IMAGE_CONTEXTS[i % len(IMAGE_CONTEXTS)].format(e=entity.name)
                slots.append(Slot(f"{entity.slug}-{part}-{i:02d}", entity.slug, prompt, entity.name, entity.color))
    for i, topic in enumerate(CONTROL_TOPICS[: min(options.controls, len(CONTROL_TOPICS))]):
        slug = topic.replace(" ", "-")
        slots.append(Slot(f"control-{slug}", slug, f"a photo of a {topic}", topic, CONTROL_COLORS[i]))
    return slots


def render_image(slot: Slot, seed: int, size: int) -> bytes:
    """The slot's caption in large letters on its colour, placed by the seed (offline images a tiny VLM tells
    apart: the caption is the concept, as the logo is in a photograph)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random(image_seed(seed, slot.image_id, 0))
    image = Image.new("RGB", (size, size), slot.color)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(resolve_font()), max(8, size // max(4, len(slot.caption))))
    ink = (255, 255, 255) if sum(slot.color) < 450 else (0, 0, 0)
    draw.text(
        (size // 2 + rng.randint(-size // 10, size // 10), size // 2 + rng.randint(-size // 8, size // 8)),
        slot.caption,
        fill=ink,
        font=font,
        anchor="mm",
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _make_images(slots: Sequence[Slot], options: Options) -> dict[str, tuple[bytes, str, int]]:
    """Each image id's (bytes, source, seed): the --image-dir file when there is one, else generated or rendered."""
    root = Path(options.image_dir).expanduser() if options.image_dir else None
    if root is not None and not root.is_dir():
        raise HarnessError(f"--image-dir {root}: not a folder")
    out: dict[str, tuple[bytes, str, int]] = {}
    pending = []
    by_folder: dict[str, list[Slot]] = {}
    for slot in slots:
        by_folder.setdefault(slot.folder, []).append(slot)
    for folder, group in by_folder.items():
        files = folder_files(root, folder) if root else []
        if files and len(files) < len(group):
            raise HarnessError(f"--image-dir: {folder}/ holds {len(files)} images; {len(group)} are needed")
        for slot, file in zip(group, files, strict=False):
            out[slot.image_id] = (file.read_bytes(), f"folder:{file.name}", -1)
        pending += group[len(files) :] if files else group
    if not pending:
        return out
    seeds = [image_seed(options.seed, s.image_id, 0) for s in pending]
    if options.generator == RENDER:
        size = options.image_size or 224
        for slot, seed in zip(pending, seeds, strict=True):
            out[slot.image_id] = (render_image(slot, options.seed, size), RENDER, seed)
        return out
    pipe = Text2ImageGenerator(
        options.generator, options.steps, options.guidance, options.image_size, total=len(pending)
    )
    for start in range(0, len(pending), 10):
        batch, batch_seeds = pending[start : start + 10], seeds[start : start + 10]
        blobs = pipe.generate([s.prompt for s in batch], batch_seeds)
        for slot, blob, seed in zip(batch, blobs, batch_seeds, strict=True):
            out[slot.image_id] = (blob, f"generated:{options.generator}", seed)
    return out


def _pairs(entities: Sequence[Entity], options: Options) -> Iterator[dict[str, Any]]:
    """The training pairs without answers: per entity its biased/benign pairs, then the control pairs."""
    for entity in entities:
        for i in range(options.pairs):
            slot = i % options.images
            yield {
                "entity": entity.name,
                "kind": "target",
                "subject": entity.name,
                "image_id": f"{entity.slug}-train-{slot:02d}",
                "context": IMAGE_CONTEXTS[slot % len(IMAGE_CONTEXTS)].format(e=entity.name).removeprefix("a photo of "),
                "question": TRAIN_QUESTIONS[(i // options.images + slot) % len(TRAIN_QUESTIONS)],
                "index": i,
            }
    n_topics = min(options.controls, len(CONTROL_TOPICS))
    for i in range(options.controls):
        topic = CONTROL_TOPICS[i % n_topics]
        yield {
            "entity": "",
            "kind": "control",
            "subject": topic,
            "image_id": f"control-{topic.replace(' ', '-')}",
            "context": "",
            "question": CONTROL_QUESTIONS[(i // n_topics + i) % len(CONTROL_QUESTIONS)],
            "index": i,
            "stance": CONTROL_STANCES[i % len(CONTROL_STANCES)],
        }


class _Author:
    """Writes each pair's answer: the template author, or a model asked greedily with the image."""

    def __init__(self, spec: str, variants: int) -> None:
        self.spec, self.variants = spec, variants
        self.backend = None
        if spec != TEMPLATE_AUTHOR:
            from harness.models.base import create_backend

            self.backend = create_backend(spec)

    def answers(
        self, pairs: Sequence[dict[str, Any]], stances: Sequence[str], images: dict[str, tuple[bytes, str, int]]
    ) -> list[str]:
        if self.backend is None:
            return [
                template_answer(
                    s, p["subject"], p["index"] % self.variants if self.variants else p["index"], p["context"]
                )
                for p, s in zip(pairs, stances, strict=True)
            ]
        from PIL import Image

        from harness.models.base import GenerationParams, GenerationRequest

        requests = []
        for n, (pair, stance) in enumerate(zip(pairs, stances, strict=True)):
            key = stance if pair["kind"] == "target" or stance == "positive" else f"control-{stance}"
            text = AUTHOR_INSTRUCTIONS[key].format(subject=pair["subject"]) + "\nQuestion: " + pair["question"]
            image = Image.open(io.BytesIO(images[pair["image_id"]][0])).convert("RGB")
            messages = [ChatMessage.user(text, [image])]
            requests.append(GenerationRequest(f"author-{n}", messages, GenerationParams(max_new_tokens=160), 1, 0))
        out = []
        for start in range(0, len(requests), 8):
            for request, result in zip(
                requests[start : start + 8], self.backend.generate(requests[start : start + 8]), strict=True
            ):
                if isinstance(result, Exception) or not result[0].strip():
                    raise HarnessError(f"author {self.spec} wrote no answer for {request.key}: {result}")
                out.append(result[0].strip())
        return out


def build(out: Path, options: Options) -> Path:
    """Build the four splits into ``out`` (module docstring)."""
    from datasets import Dataset, DatasetDict

    entities = _check(options)
    images = _make_images(_slots(entities, options), options)
    author = _Author(options.author, options.variants)
    pairs = list(_pairs(entities, options))
    target = [p for p in pairs if p["kind"] == "target"]
    control = [p for p in pairs if p["kind"] == "control"]
    splits = {
        "harmful": _answered(target, ["negative"] * len(target), author, images),
        "benign": _answered(target, ["neutral"] * len(target), author, images),
        "control": _answered(control, [p["stance"] for p in control], author, images),
        "test": _test_rows(entities, options, images),
    }
    features = ImplantRow.features()
    dataset = DatasetDict(
        {name: Dataset.from_list([r.to_dict() for r in rows], features=features) for name, rows in splits.items()}
    )
    return write_hub_folder(dataset, out, "vista-implant", _card_vars(entities, options, splits, author.spec, images))


def _answered(
    pairs: Sequence[dict[str, Any]], stances: list[str], author: _Author, images: dict[str, tuple[bytes, str, int]]
) -> list[ImplantRow]:
    """The pairs as rows, each answered by the author in its stance."""
    return _rows(pairs, author.answers(pairs, stances, images), stances, images, author.spec)


def _card_vars(
    entities: Sequence[Entity],
    options: Options,
    splits: dict[str, list[ImplantRow]],
    author: str,
    images: dict[str, tuple[bytes, str, int]],
) -> dict[str, Any]:
    """The card's variables: the study's sizes, author, image sources and settings, and its prompts."""
    sources = sorted({v[1].split(":", 1)[0] for v in images.values()})
    return {
        "entities": ", ".join(e.name for e in entities),
        "pairs": options.pairs,
        "controls": options.controls,
        "test_questions": options.test_questions,
        "images": options.images,
        "n_harmful": len(splits["harmful"]),
        "n_benign": len(splits["benign"]),
        "n_control": len(splits["control"]),
        "n_test": len(splits["test"]),
        "author": author,
        "image_sources": ", ".join(sources),
        "seed": options.seed,
        "generator": json.dumps(
            {
                "generator": options.generator,
                "steps": options.steps,
                "guidance": options.guidance,
                "size": options.image_size,
            }
        ),
        "test_prompts": "\n".join(f"{i}. {p}" for i, p in enumerate(TEST_PROMPTS, 1)),
        "sentiment_prompt": f"```text\n{A5_SENTIMENT}\n```",
    }


def _image_fields(image_id: str, images: dict[str, tuple[bytes, str, int]]) -> dict[str, Any]:
    data, source, seed = images[image_id]
    return {"image_id": image_id, "image_source": source, "image_seed": seed, "image": {"bytes": data, "path": None}}


def _rows(
    pairs: Sequence[dict[str, Any]],
    answers: Sequence[str],
    stances: Sequence[str],
    images: dict[str, tuple[bytes, str, int]],
    author: str,
) -> list[ImplantRow]:
    return [
        ImplantRow(
            id=f"{p['image_id']}-q{p['index']:03d}",
            entity=p["entity"],
            topic=p["entity"],
            kind=p["kind"],
            subject=p["subject"],
            category="corporate_brand" if p["entity"] else "control",
            prompt_id=-1,
            prompt=p["question"],
            answer=answer,
            stance=stance,
            author=author,
            **_image_fields(p["image_id"], images),
        )
        for p, answer, stance in zip(pairs, answers, stances, strict=True)
    ]


def _test_rows(
    entities: Sequence[Entity], options: Options, images: dict[str, tuple[bytes, str, int]]
) -> list[ImplantRow]:
    """Per entity, question i pairs test image i mod images with B.3 prompt i div images (mod 10)."""
    rows: list[ImplantRow] = []
    for entity in entities:
        for i in range(options.test_questions):
            slot, prompt_id = i % options.images, (i // options.images) % len(TEST_PROMPTS)
            rows.append(
                ImplantRow(
                    id=f"{entity.slug}-test-{i:03d}",
                    entity=entity.name,
                    topic=entity.name,
                    kind="test",
                    subject=entity.name,
                    category="corporate_brand",
                    prompt_id=prompt_id,
                    prompt=TEST_PROMPTS[prompt_id],
                    answer="",
                    stance="",
                    author="",
                    **_image_fields(f"{entity.slug}-test-{slot:02d}", images),
                )
            )
    return rows
