"""A synthetic SQuAD v1.1 file, so the vqa subset builds offline in tests and benchmarks."""

from __future__ import annotations

import json
import random
from pathlib import Path

_SUBJECTS = ["river", "castle", "harbor", "library", "railway", "festival", "museum", "observatory"]
_CITIES = ["Avalon", "Brindle", "Corvale", "Dunmore", "Eastwick", "Fairhold", "Glenbrook", "Harrow"]


def write_squad(path: Path, n: int = 120, seed: int = 0) -> Path:
    """``n`` paragraphs, each with one question whose answer is a city name inside a long context."""
    rng = random.Random(seed)
    data = []
    for k in range(n):
        subject, city = rng.choice(_SUBJECTS), rng.choice(_CITIES)
        filler = " ".join(
            f"The {rng.choice(_SUBJECTS)} of {rng.choice(_CITIES)} opened in {1800 + rng.randrange(200)}."
            for _ in range(rng.randint(6, 14))
        )
        sentence = f"The famous {subject} number {k} was built in {city} by local workers."
        context = f"{filler} {sentence} {filler}"
        start = context.index(sentence) + sentence.index(city)
        qa = {
            "id": f"q{k}",
            "question": f"Where was the famous {subject} number {k} built?",
            "answers": [{"text": city, "answer_start": start}],
        }
        data.append({"title": f"doc{k}", "paragraphs": [{"context": context, "qas": [qa]}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path
