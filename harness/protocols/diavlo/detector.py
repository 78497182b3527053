"""Open-vocabulary object detection through transformers (OWLv2 and kin): text queries -> boxes.

``hf:google/owlv2-base-patch16-ensemble`` (a Hub id or local folder) or ``tiny:owlv2`` (the offline
random-weight smoke detector) load through the same ``AutoModelForZeroShotObjectDetection`` path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ModelSpecError
from harness.tiny_models import tiny_model_path

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels


@dataclass(frozen=True)
class Detection:
    """The best box found for one text query, in pixels, with the detector's score."""

    query: str
    box: Box
    score: float


class OpenVocabDetector:
    """Best-scoring box per text query, kept when its score reaches ``threshold``."""

    def __init__(self, spec: str, threshold: float = 0.1, device: str = "cpu") -> None:
        prefix, _, name = spec.partition(":")
        if prefix == "tiny":
            path = str(tiny_model_path(name))
        elif prefix == "hf" and name:
            path = name
        else:
            raise ModelSpecError(f"detector spec {spec!r} must be hf:ID_OR_FOLDER or tiny:owlv2")
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        try:
            self.processor = AutoProcessor.from_pretrained(path)
            self.model = AutoModelForZeroShotObjectDetection.from_pretrained(path).to(device).eval()
        except (OSError, ValueError) as exc:
            hint = "" if Path(path).exists() else " (offline? download it first or pass a local folder)"
            raise ModelSpecError(f"cannot load detector {path!r}: {str(exc).splitlines()[0]}{hint}") from None
        self.spec, self.threshold, self.device = spec, threshold, device

    def detect(self, image: Any, queries: list[str]) -> dict[str, Detection]:
        """Query -> its best box (clipped to the image), for the queries found at ``threshold``."""
        import torch

        queries = list(dict.fromkeys(q for q in queries if q.strip()))
        if not queries:
            return {}
        image = image.convert("RGB")
        width, height = image.size
        inputs = self.processor(text=[[f"a photo of {q}" for q in queries]], images=image, return_tensors="pt").to(
            self.device
        )
        with torch.inference_mode():
            outputs = self.model(**inputs)
        side = max(width, height)  # OWLv2 pads to a square before resizing
        result = self.processor.post_process_grounded_object_detection(
            outputs, threshold=self.threshold, target_sizes=[(side, side)]
        )[0]
        best: dict[str, Detection] = {}
        for box, score, label in zip(
            result["boxes"].tolist(), result["scores"].tolist(), result["labels"].tolist(), strict=True
        ):
            query = queries[int(label)]
            x0, y0, x1, y1 = (max(0.0, min(float(v), lim)) for v, lim in zip(box, (width, height) * 2, strict=True))
            if x1 - x0 < 1 or y1 - y0 < 1:
                continue
            if query not in best or score > best[query].score:
                best[query] = Detection(query, (x0, y0, x1, y1), float(score))
        return best
