"""Test helpers for DiaVLo beyond the demo sources (``builders/diavlo/demo.py``): the lmms-lab Hub layouts."""

from __future__ import annotations

from pathlib import Path

from builders.diavlo.demo import scene_image


def write_hub_copies(root: Path) -> dict[str, str]:
    """The lmms-lab Hub layouts (parquet with an Image column), one row per source, as local folders."""
    from datasets import Dataset, Features, Sequence, Value
    from datasets import Image as ImageFeature

    s = Value("string")
    image = scene_image(0)
    tables = {
        "llava_bench": (
            "train",
            [
                {
                    "question_id": "q7",
                    "question": "What is left?",
                    "image": image,
                    "caption": "c",
                    "gpt_answer": "A red box.",
                    "category": "conv",
                    "image_id": "007",
                }
            ],
            None,
        ),
        "mmbench": (
            "dev",
            [
                {
                    "index": 5,
                    "question": "Ball color?",
                    "hint": "nan",
                    "A": "red",
                    "B": "blue",
                    "C": "nan",
                    "D": "nan",
                    "answer": "B",
                    "category": "attr",
                    "image": image,
                }
            ],
            None,
        ),
        "seed_bench2": (
            "test",
            [
                {
                    "question_id": "9",
                    "question": "Where?",
                    "choice_a": "table",
                    "choice_b": "sky",
                    "choice_c": "x",
                    "choice_d": "y",
                    "answer": "A",
                    "data_id": ["cc3m/9.jpg"],
                    "data_type": "image",
                    "question_type_id": 1,
                    "image": [image],
                },
                {
                    "question_id": "10",
                    "question": "Which?",
                    "choice_a": "a",
                    "choice_b": "b",
                    "choice_c": "c",
                    "choice_d": "d",
                    "answer": "A",
                    "data_id": ["x.jpg", "y.jpg"],
                    "data_type": "image",
                    "question_type_id": 2,
                    "image": [image, image],
                },
            ],
            Features(
                {
                    "question_id": s,
                    "question": s,
                    "choice_a": s,
                    "choice_b": s,
                    "choice_c": s,
                    "choice_d": s,
                    "answer": s,
                    "data_id": Sequence(s),
                    "data_type": s,
                    "question_type_id": Value("int32"),
                    "image": Sequence(ImageFeature()),
                }
            ),
        ),
        "vqav2": (
            "validation",
            [
                {
                    "question_id": 77,
                    "question": "Box color?",
                    "image_id": 42,
                    "multiple_choice_answer": "red",
                    "answer_type": "other",
                    "answers": [{"answer": "red", "answer_confidence": "yes", "answer_id": i} for i in range(1, 11)],
                    "image": image,
                }
            ],
            None,
        ),
    }
    out = {}
    for name, (split, rows, features) in tables.items():
        folder = root / f"hub-{name}" / "data"
        folder.mkdir(parents=True)
        Dataset.from_list(rows, features=features).to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
        out[name] = f"hub:{folder.parent}"
    return out
