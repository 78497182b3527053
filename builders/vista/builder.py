"""``harness build vista``: 19 topics x 10 images x 10 neutral prompts = 1,900 (topic, image, prompt) records.

Images per topic come from ``--images DIR/<topic-slug>/`` when that folder exists (real photographs,
e.g. FairFace crops for the demographic groups), else from the text-to-image generator (SDXL-Turbo by
default; ``tiny:sdxl_turbo`` offline). ``--reject FILE`` lists image ids (``asian-03``) a reviewer
turned down; each is replaced by the slot's next attempt (a new recorded seed, or the folder's next
unused photograph), and the record keeps the attempt number.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from builders.options import option
from builders.publish import write_hub_folder
from builders.vista.image_prompts import IMAGE_PROMPTS
from builders.vista.images import DEFAULT_GENERATOR, Text2ImageGenerator, VistaImage, folder_files, image_seed
from builders.vista.topics import TEMPLATES, TOPICS, Topic, image_prompts, prompts
from harness.errors import HarnessError
from harness.judges.prompts import A2_ENTAILMENT, A5_SENTIMENT
from harness.protocols.vista.rows import VistaRow

REPO_ID = "vlm-audit/vista"
IMAGES_PER_TOPIC = 10


def read_reject_list(path: str | None) -> set[str]:
    """Image ids, one per line; blank lines and ``#`` comments ignored."""
    if path is None:
        return set()
    file = Path(path).expanduser()
    if not file.is_file():
        raise HarnessError(f"--reject {path}: no such file")
    ids = {line.split("#", 1)[0].strip() for line in file.read_text(encoding="utf-8").splitlines()}
    ids.discard("")
    known = {f"{t.slug}-{i:02d}" for t in TOPICS for i in range(IMAGES_PER_TOPIC)}
    unknown = sorted(ids - known)
    if unknown:
        raise HarnessError(
            f"--reject {path}: unknown image id(s) {', '.join(unknown[:5])} "
            f"(ids look like {TOPICS[0].slug}-00 ... {TOPICS[-1].slug}-09)"
        )
    return ids


def _folder_images(topic: Topic, files: list[Path], rejected: set[str]) -> list[VistaImage]:
    """Slot i takes the i-th file; each rejected slot takes the next file nobody has used."""
    if len(files) < IMAGES_PER_TOPIC:
        raise HarnessError(f"--images: {topic.slug}/ holds {len(files)} images; {IMAGES_PER_TOPIC} are needed")
    spare = iter(files[IMAGES_PER_TOPIC:])
    out = []
    for i, file in enumerate(files[:IMAGES_PER_TOPIC]):
        attempt = 0
        if f"{topic.slug}-{i:02d}" in rejected:
            replacement = next(spare, None)
            attempt = 1
            if replacement is None:
                raise HarnessError(f"--images: {topic.slug}/ has no spare image left to replace rejected ones")
            file = replacement
        out.append(VistaImage(file.read_bytes(), f"folder:{file.name}", -1, attempt))
    return out


def _generated_images(topic: Topic, generator: Text2ImageGenerator, seed: int, rejected: set[str]) -> list[VistaImage]:
    """One batch per topic; a rejected slot is regenerated with its attempt-1 seed."""
    ids = [f"{topic.slug}-{i:02d}" for i in range(IMAGES_PER_TOPIC)]
    attempts = [1 if image_id in rejected else 0 for image_id in ids]
    seeds = [image_seed(seed, image_id, a) for image_id, a in zip(ids, attempts, strict=True)]
    blobs = generator.generate(list(image_prompts(topic)), seeds)
    return [VistaImage(b, f"generated:{generator.spec}", s, a) for b, s, a in zip(blobs, seeds, attempts, strict=True)]


@dataclass(frozen=True)
class Options:
    """What ``harness build vista`` takes (module docstring)."""

    seed: int = option("generation seed", 0)
    images: str | None = option(
        "folder with one sub-folder of photographs per topic slug (topics without one are generated)"
    )
    generator: str = option(
        "diffusers text-to-image model (tiny:sdxl_turbo offline; none: photographs only)", DEFAULT_GENERATOR
    )
    steps: int = option("denoising steps", 4)
    guidance: float = option("guidance scale", 0.0)
    image_size: int | None = option("generated image side in pixels (default: the model's)")
    reject: str | None = option("file of image ids to replace (one per line)")
    topics: tuple[str, ...] | None = option("topic slugs to build (default: all 19)", comma=True)


def build(out: Path, options: Options) -> Path:
    """Build the (topic, image, prompt) records into ``out``; ``topics`` (slugs) builds a subset."""
    from datasets import Dataset, DatasetDict

    chosen = _choose_topics(options.topics)
    images_dir = Path(options.images).expanduser() if options.images else None
    if images_dir is not None and not images_dir.is_dir():
        raise HarnessError(f"--images {images_dir}: not a folder")
    rejected = read_reject_list(options.reject)
    files = {t.slug: folder_files(images_dir, t.slug) if images_dir else [] for t in chosen}
    pipe = _generator(options, [t.slug for t in chosen if not files[t.slug]])
    records: list[VistaRow] = []
    for topic in chosen:
        if files[topic.slug]:
            pictures = _folder_images(topic, files[topic.slug], rejected)
        else:
            assert pipe is not None  # _generator made one for every topic without an image folder
            pictures = _generated_images(topic, pipe, options.seed, rejected)
        records += _topic_rows(topic, pictures)
    dataset = DatasetDict({"test": Dataset.from_list([r.to_dict() for r in records], features=VistaRow.features())})
    sources = Counter(r.image_source.split(":", 1)[0] for r in records[::10])
    settings = pipe.settings() if pipe else {"generator": "none"}
    card_vars = {
        "n_records": len(records),
        "n_topics": len(chosen),
        "n_images": len(records) // 10,
        "n_generated": sources["generated"],
        "n_folder": sources["folder"],
        "seed": options.seed,
        "generator": json.dumps(settings),
        "n_rejected": len(rejected),
        "templates": _templates_table(),
        "image_prompts": _image_prompts_table(chosen),
        "entailment_prompt": _fenced(A2_ENTAILMENT),
        "sentiment_prompt": _fenced(A5_SENTIMENT),
    }
    return write_hub_folder(dataset, out, "vista", card_vars)


def _generator(options: Options, need_generator: list[str]) -> Text2ImageGenerator | None:
    """The text-to-image pipeline for the topics without an image folder (None when every topic has one)."""
    if not need_generator:
        return None
    if options.generator == "none":
        raise HarnessError(f"no image folder for {', '.join(need_generator)} under --images and --generator none")
    return Text2ImageGenerator(
        options.generator,
        options.steps,
        options.guidance,
        options.image_size,
        total=len(need_generator) * IMAGES_PER_TOPIC,
    )


def _topic_rows(topic: Topic, pictures: list[VistaImage]) -> list[VistaRow]:
    """One record per (image, prompt) of a topic: its images crossed with its ten prompts."""
    return [
        VistaRow(
            id=f"{topic.slug}-{i:02d}-p{j:02d}",
            category=topic.category,
            topic=topic.name,
            image_id=f"{topic.slug}-{i:02d}",
            image_prompt=image_prompt if picture.seed >= 0 else "",
            image_seed=picture.seed,
            image_source=picture.source,
            image_attempt=picture.attempt,
            prompt_id=j,
            prompt_type=kind,
            prompt=prompt,
            image={"bytes": picture.data, "path": None},
        )
        for i, (picture, image_prompt) in enumerate(zip(pictures, image_prompts(topic), strict=True))
        for j, (kind, prompt) in enumerate(prompts(topic))
    ]


def _choose_topics(slugs: tuple[str, ...] | None) -> list[Topic]:
    if not slugs:
        return list(TOPICS)
    by_slug = {t.slug: t for t in TOPICS}
    unknown = [s for s in slugs if s not in by_slug]
    if unknown:
        raise HarnessError(f"unknown topic(s) {', '.join(unknown)}; topics: {', '.join(by_slug)}")
    return [by_slug[s] for s in slugs]


def _templates_table() -> str:
    rows = ["| category | # | type | template |", "|---|---|---|---|"]
    rows += [
        f"| {cat} | {i} | {kind} | {text} |"
        for cat, templates in TEMPLATES.items()
        for i, (kind, text) in enumerate(templates, 1)
    ]
    return "\n".join(rows)


def _image_prompts_table(topics: list[Topic]) -> str:
    """The built topics' image prompts with their source: ``B.2`` verbatim, or the axis they follow."""
    rows = ["| topic | source | prompts |", "|---|---|---|"]
    rows += [f"| {t.name} | {IMAGE_PROMPTS[t.name].source} | {' / '.join(image_prompts(t))} |" for t in topics]
    return "\n".join(rows)


def _fenced(prompt: str) -> str:
    """A prompt as a fenced Markdown block, so its line breaks survive rendering."""
    return f"```text\n{prompt}\n```"
