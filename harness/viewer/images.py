"""A sample's images, found by the digests its prompt records, in the dataset the run names.

A samples file keeps each image as ``{"image_sha256": ...}`` (:func:`harness.hashing.image_digest`: the
decoded pixels, mode and size), never as a path, and the viewer serves nothing a run folder points at:
it opens the task's dataset (the local folder the run's provenance records, or the copy of a Hub dataset
in the data folder), decodes the images of the doc's row (``doc_id`` numbers the task's docs in order),
and serves the one whose digest matches, re-encoded as PNG. When the row holds no match (a task whose
``process_docs`` reorders or drops rows), every image of the dataset is digested once and the digests
kept in the cache folder. An image not found is a 404 that says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.hashing import image_digest
from harness.results.schema import DatasetFingerprint

THUMBNAIL = 240
#: How many encoded images the server keeps in memory (thumbnails and full size).
CACHED_IMAGES = 256


def image_digests(prompt: list[dict[str, Any]]) -> list[str]:
    """The image digests of a recorded prompt, in order."""
    out = []
    for message in prompt:
        content = message.get("content")
        for item in content if isinstance(content, list) else []:
            url = item.get("url") if isinstance(item, dict) and item.get("type") == "image" else None
            digest = url.get("image_sha256") if isinstance(url, dict) else None
            if isinstance(digest, str) and len(digest) == 64:
                out.append(digest)
    return out


def _is_image(value: Any) -> bool:
    return hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size")


def row_images(row: dict[str, Any]) -> Iterator[Any]:
    """The decoded images of a dataset row: image columns and lists of images."""
    for value in row.values():
        if _is_image(value):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if _is_image(v))


def _digests(image: Any) -> set[str]:
    """The digests a task may have recorded for ``image``: as stored, and converted to RGB (what most
    tasks' ``doc_to_visual`` hands the model)."""
    found = {image_digest(image)}
    if image.mode != "RGB":
        found.add(image_digest(image.convert("RGB")))
    return found


def _png(image: Any, thumbnail: bool) -> bytes:
    image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
    if thumbnail:
        image = image.copy()
        image.thumbnail((THUMBNAIL, THUMBNAIL))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class DatasetImages:
    """The images of one task dataset: opened on first use, looked up by digest."""

    def __init__(self, folder: Path, split: str, cache: Path, content_sha: str | None) -> None:
        self.folder, self.split, self.cache, self.content_sha = folder, split, cache, content_sha
        self._docs: Any = None
        self._lock = threading.Lock()

    def docs(self) -> Any:
        """The dataset split (memory-mapped Arrow, so only the rows read are decoded)."""
        with self._lock:
            if self._docs is None:
                self._docs = _open(self.folder, self.split, self.content_sha)
            return self._docs

    def find(self, doc_id: int, digest: str, converted: bool = True) -> Any | None:
        """The image with ``digest``: looked for in row ``doc_id`` first, then through the digest table."""
        docs = self.docs()
        rows = [doc_id] if 0 <= doc_id < len(docs) else []
        rows += self._rows_of(digest)
        for row in rows:
            for image in row_images(docs[row]):
                if digest in _digests(image):
                    return image if image_digest(image) == digest else image.convert("RGB")
        return None

    def _rows_of(self, digest: str) -> list[int]:
        """Rows holding an image of ``digest`` (the dataset's digests, computed once and kept in the cache)."""
        key = hashlib.sha256(f"{self.folder.resolve()}:{self.split}:{self.content_sha}".encode()).hexdigest()[:24]
        path = self.cache / f"images-{key}.sqlite"
        with self._lock:
            if not path.is_file():
                self._digest_all(path)
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return [int(r[0]) for r in db.execute("SELECT row FROM images WHERE digest = ?", (digest,))]

    def _digest_all(self, path: Path) -> None:
        docs = self._docs if self._docs is not None else _open(self.folder, self.split, self.content_sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".building")
        with contextlib.closing(sqlite3.connect(tmp)) as db:
            db.execute("CREATE TABLE images(digest TEXT NOT NULL, row INTEGER NOT NULL)")
            for row in range(len(docs)):
                for image in row_images(docs[row]):
                    db.executemany("INSERT INTO images VALUES (?, ?)", [(d, row) for d in _digests(image)])
            db.execute("CREATE INDEX images_digest ON images(digest)")
            db.commit()
        tmp.replace(path)


def _open(folder: Path, split: str, content_sha: str | None) -> Any:
    """A local dataset folder's split, the way ``harness eval`` read it (a parquet folder through the same
    content-keyed ``datasets`` cache, so the Arrow files it made are reused)."""
    import datasets

    if (folder / "dataset_dict.json").is_file():
        return datasets.load_from_disk(str(folder))[split]
    if (folder / "state.json").is_file():
        return datasets.load_from_disk(str(folder))
    cache = Path(datasets.config.HF_DATASETS_CACHE) / "harness-local" / str(content_sha)
    return datasets.load_dataset(str(folder), split=split, cache_dir=str(cache))


class ImageStore:
    """Every image the viewer serves: per task dataset a :class:`DatasetImages`, and a bounded memory cache
    of encoded PNGs."""

    def __init__(self, cache: Path, data_dirs: list[Path]) -> None:
        self.cache, self.data_dirs = cache, data_dirs
        self._datasets: dict[tuple[str, str, str | None], DatasetImages] = {}
        self._png: OrderedDict[tuple[str, bool], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def folder_of(self, fingerprint: DatasetFingerprint) -> Path | None:
        """The local folder of a run's task dataset: the folder it was read from, or a Hub dataset's copy
        in a data folder (``<data dir>/<org>/<name>``, as ``--data-dir`` maps it)."""
        candidates = []
        if fingerprint.kind == "local" and fingerprint.path:
            candidates.append(Path(fingerprint.path))
        if fingerprint.repo:
            candidates += [d / fingerprint.repo for d in self.data_dirs]
        return next((c for c in candidates if c.is_dir()), None)

    def dataset(self, fingerprint: DatasetFingerprint) -> DatasetImages | None:
        """The images of the dataset ``fingerprint`` names, or None when no local copy of it is found."""
        folder = self.folder_of(fingerprint)
        if folder is None:
            return None
        key = (str(folder.resolve()), fingerprint.split or "test", fingerprint.sha256)
        with self._lock:
            if key not in self._datasets:
                self._datasets[key] = DatasetImages(folder, key[1], self.cache, fingerprint.sha256)
            return self._datasets[key]

    def png(self, fingerprint: DatasetFingerprint, doc_id: int, digest: str, thumbnail: bool) -> bytes | None:
        """The image as PNG (a thumbnail or full size), or None when the dataset does not hold it."""
        with self._lock:
            if (digest, thumbnail) in self._png:
                self._png.move_to_end((digest, thumbnail))
                return self._png[(digest, thumbnail)]
        images = self.dataset(fingerprint)
        image = images.find(doc_id, digest) if images else None
        if image is None:
            return None
        data = _png(image, thumbnail)
        with self._lock:
            self._png[(digest, thumbnail)] = data
            while len(self._png) > CACHED_IMAGES:
                self._png.popitem(last=False)
        return data
