"""The DiaVLo demo source (``harness build diavlo --demo``): small copies of the four sources in their
released formats, plus Visual Genome-format scene graphs for some of their images (the rest are left
to the detector source, or have no candidates without one)."""

from __future__ import annotations

import base64
import csv
import io
import json
from pathlib import Path
from typing import TypedDict

from PIL import Image, ImageDraw


class Node(TypedDict):
    """A Visual Genome object: its name and box (x, y, width, height)."""

    name: str
    x: int
    y: int
    w: int
    h: int


class Relationship(TypedDict):
    """A Visual Genome relationship between two objects."""

    predicate: str
    subject: Node
    object: Node


class SceneGraph(TypedDict):
    """One image's entry in Visual Genome's ``relationships.json`` (VG or COCO-style image ids)."""

    image_id: int | str
    relationships: list[Relationship]


def scene_image(k: int) -> Image.Image:
    """A red box left of a blue ball on a table-coloured strip; positions shift with k."""
    image = Image.new("RGB", (64, 48), (235, 235, 220))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 36, 63, 47], fill=(140, 90, 40))
    draw.rectangle([4 + k, 16, 20 + k, 36], fill=(220, 30, 30))
    draw.ellipse([36, 20 + k % 3, 52, 36], fill=(30, 60, 220))
    return image


def _rel(
    subject: str, box_s: tuple[int, int, int, int], predicate: str, obj: str, box_o: tuple[int, int, int, int]
) -> Relationship:
    def node(name: str, box: tuple[int, int, int, int]) -> Node:
        return {"name": name, "x": box[0], "y": box[1], "w": box[2], "h": box[3]}

    return {"predicate": predicate, "subject": node(subject, box_s), "object": node(obj, box_o)}


GRAPH = [
    _rel("red box", (4, 16, 16, 20), "left of", "blue ball", (36, 20, 16, 16)),
    _rel("blue ball", (36, 20, 16, 16), "on", "table", (0, 36, 64, 12)),
    _rel("red box", (4, 16, 16, 20), "on", "table", (0, 36, 64, 12)),
]


def write_sources(root: Path) -> tuple[dict[str, str], Path]:
    """Write all four sources (three pairs each) and the scene graphs; returns ({source: path}, graphs)."""
    paths = {
        "llava_bench": _write_llava_bench(root),
        "mmbench": _write_mmbench(root),
        "seed_bench2": _write_seed_bench2(root),
        "vqav2": _write_vqav2(root),
    }
    return paths, _write_scene_graphs(root)


def _write_llava_bench(root: Path) -> str:
    """LLaVA-Bench in-the-wild: questions.jsonl, answers_gpt4.jsonl, images/."""
    llava = root / "llava-bench-in-the-wild"
    (llava / "images").mkdir(parents=True)
    questions, answers = [], []
    for k in range(3):
        scene_image(k).save(llava / "images" / f"00{k + 1}.jpg")
        questions.append(
            {
                "question_id": k,
                "image": f"00{k + 1}.jpg",
                "category": "conv",
                "text": "What is to the left of the blue ball?",
            }
        )
        answers.append({"question_id": k, "text": "A red box is to the left of the blue ball.", "model": "gpt-4"})
    (llava / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (llava / "answers_gpt4.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    return str(llava)


def _write_mmbench(root: Path) -> str:
    """MMBench: one TSV, images as base64."""
    mmbench = root / "mmbench_dev_en.tsv"
    with mmbench.open("w", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        writer.writerow(["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image"])
        for k in range(3):
            buf = io.BytesIO()
            scene_image(k).save(buf, format="JPEG")
            hint = "nan" if k else "Look at the table."
            options = ["red", "blue", "green", "yellow"]
            image = base64.b64encode(buf.getvalue()).decode()
            writer.writerow([k, "What color is the ball?", hint, *options, "B", "attribute", image])
    return str(mmbench)


SEED_CHOICES = ("on the table", "in the sky", "under the ball", "nowhere")


def _seed_question(qid: str, question: str, choices: tuple[str, ...], data_id: str, type_id: int) -> dict[str, object]:
    """One SEED-Bench-2 question (answer A); a ``.mp4`` data id is a video question."""
    return {
        "question_id": qid,
        "question": question,
        **{f"choice_{letter}": choice for letter, choice in zip("abcd", choices, strict=True)},
        "answer": "A",
        "data_id": data_id,
        "data_type": "video" if data_id.endswith(".mp4") else "image",
        "question_type_id": type_id,
    }


def _write_seed_bench2(root: Path) -> str:
    """SEED-Bench-2: questions JSON, images relative to it; one video question to skip."""
    seed = root / "seed-bench-2"
    (seed / "cc3m-image").mkdir(parents=True)
    items = [
        _seed_question(f"s{k}", "Where is the red box?", SEED_CHOICES, f"cc3m-image/img{k}.jpg", 1) for k in range(3)
    ]
    for k in range(3):
        scene_image(k).save(seed / "cc3m-image" / f"img{k}.jpg")
    items.append(_seed_question("v0", "What happens?", ("x", "y", "z", "w"), "clip.mp4", 13))
    (seed / "SEED-Bench_v2_level1_2_3.json").write_text(json.dumps({"questions": items, "question_type": {}}))
    return str(seed / "SEED-Bench_v2_level1_2_3.json")


def _write_vqav2(root: Path) -> str:
    """VQA v2: questions + annotations JSON, COCO images."""
    vqa = root / "vqav2"
    (vqa / "val2014").mkdir(parents=True)
    qs, anns = [], []
    for k in range(3):
        image_id = 42 + k
        scene_image(k).save(vqa / "val2014" / f"COCO_val2014_{image_id:012d}.jpg")
        qs.append({"image_id": image_id, "question": "What color is the box?", "question_id": 420 + k})
        anns.append(
            {
                "question_id": 420 + k,
                "image_id": image_id,
                "answer_type": "other",
                "multiple_choice_answer": "red",
                "answers": [
                    {"answer": a, "answer_confidence": "yes", "answer_id": i + 1}
                    for i, a in enumerate(["red"] * 8 + ["orange", "dark red"])
                ],
            }
        )
    (vqa / "v2_OpenEnded_mscoco_val2014_questions.json").write_text(json.dumps({"questions": qs}))
    (vqa / "v2_mscoco_val2014_annotations.json").write_text(json.dumps({"annotations": anns}))
    return str(vqa)


def _write_scene_graphs(root: Path) -> Path:
    """Scene graphs (VG format) for the first two images of each source; VQA v2 through VG -> COCO ids."""
    graphs_dir = root / "vg"
    graphs_dir.mkdir()
    keys = ["001.jpg", "002.jpg", "0", "1", "cc3m-image/img0.jpg", "cc3m-image/img1.jpg"]
    graphs: list[SceneGraph] = [{"image_id": key, "relationships": GRAPH} for key in keys]
    graphs += [{"image_id": 9000 + k, "relationships": GRAPH} for k in range(2)]
    (graphs_dir / "relationships.json").write_text(json.dumps(graphs))
    (graphs_dir / "image_data.json").write_text(
        json.dumps([{"image_id": 9000 + k, "coco_id": 42 + k} for k in range(2)])
    )
    return graphs_dir / "relationships.json"


def sources_arg(paths: dict[str, str]) -> str:
    """The demo's source folders as a ``--sources`` value (``name=path,...``)."""
    return ",".join(f"{name}={path}" for name, path in paths.items())
