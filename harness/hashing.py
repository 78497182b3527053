"""Stable content hashes of docs, prompts and images: the keys of the response store and of samples."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def image_digest(image: Any) -> str:
    """sha256 of an image's decoded pixels, mode and size (independent of the file encoding)."""
    h = hashlib.sha256(f"{image.mode}:{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def to_jsonable(value: Any) -> Any:
    """A JSON-safe copy of a doc or prompt, images replaced by ``{"image_sha256": ...}``."""
    if hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size"):
        return {"image_sha256": image_digest(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return {"bytes_sha256": hashlib.sha256(value).hexdigest()}
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        return value.item()  # numpy / torch scalar
    if hasattr(value, "tolist"):
        return value.tolist()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def stable_hash(value: Any, length: int = 24) -> str:
    """Hash of the canonical JSON of ``value`` (sorted keys, images by pixel digest)."""
    blob = json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def derive_seed(base_seed: int, key: str) -> int:
    """A per-request seed: the same request under the same base seed always samples the same way."""
    return int(hashlib.sha256(f"{base_seed}:{key}".encode()).hexdigest()[:8], 16)
