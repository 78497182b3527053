"""The pixels of the images evidence refers to (:class:`~harness.protocols.evidence.ImageRef`).

Samples record images by the sha256 of their pixels; the pixels stay where they were: in the dataset
folder the run's provenance names, or in a file the run wrote. :class:`ImageStore` finds them: a dataset
folder is opened once, the hinted row is tried first, and otherwise the split's image columns are scanned
once (every digest seen is remembered, so later look-ups in that folder cost nothing). Whatever it
returns has the digest that was asked for: a wrong hint or an edited file gives no image, never another
one. A run file is read only from inside its run folder.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.hashing import image_digest
from harness.protocols.evidence import DatasetImage, ImageRef, RunFile

log = logging.getLogger(__name__)

#: The longest side of a thumbnail, in pixels: large enough to read rendered text, small enough to inline.
THUMBNAIL = 360
#: The most rows of one split a scan for digests decodes (a paper-scale split has a few thousand).
MAX_SCAN_ROWS = 50_000
#: A run file larger than this is not opened (an adversarial PNG is well under it).
MAX_FILE_BYTES = 64 * 1024 * 1024


def _is_image(value: Any) -> bool:
    return hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size")


@dataclass
class _Folder:
    """One opened dataset split: its rows, image columns, and the digests a scan has placed so far."""

    docs: Any
    columns: list[str]
    found: dict[str, tuple[int, str, bool]] = field(default_factory=dict)  # digest -> row, column, as RGB
    scanned: bool = False


class ImageStore:
    """Pixels for image references, each dataset folder opened once per store."""

    def __init__(self, max_scan_rows: int = MAX_SCAN_ROWS) -> None:
        self.max_scan_rows = max_scan_rows
        self._folders: dict[tuple[str, str], _Folder | None] = {}

    def image(self, ref: ImageRef) -> Any | None:
        """The PIL image ``ref`` names, or None when its source is unknown, unreadable or holds no image
        with that digest."""
        source = ref.source
        try:
            if isinstance(source, DatasetImage):
                return self._from_dataset(source, ref.sha256)
            if isinstance(source, RunFile):
                return self._from_run_file(source, ref.sha256)
        except Exception as exc:  # an unreadable source is no image, said once in the log
            log.warning("image %s: %s: %s", ref.sha256[:12], type(exc).__name__, exc)
        return None

    def thumbnail_png(self, ref: ImageRef, size: int = THUMBNAIL) -> bytes | None:
        """The image as a PNG no larger than ``size`` on its longest side, or None (see :meth:`image`)."""
        image = self.image(ref)
        return None if image is None else thumbnail_png(image, size)

    def _folder(self, source: DatasetImage) -> _Folder | None:
        key = (source.path, source.split)
        if key not in self._folders:
            self._folders[key] = _open_split(Path(source.path), source.split)
        return self._folders[key]

    def _from_dataset(self, source: DatasetImage, digest: str) -> Any | None:
        folder = self._folder(source)
        if folder is None:
            return None
        if digest in folder.found:
            row, column, rgb = folder.found[digest]
            image = folder.docs[row][column]
            return image.convert("RGB") if rgb else image
        if source.row is not None and 0 <= source.row < len(folder.docs):
            hit = _match(folder, source.row, digest)
            if hit is not None:
                return hit
        if folder.scanned:
            return None
        folder.scanned = True
        for row in range(min(len(folder.docs), self.max_scan_rows)):
            hit = _match(folder, row, digest)
            if hit is not None:
                folder.scanned = False  # the rest of the split is not indexed yet
                return hit
        return None

    def _from_run_file(self, source: RunFile, digest: str) -> Any | None:
        from PIL import Image

        root = Path(source.run_dir).resolve()
        path = (root / source.path).resolve()
        if not path.is_relative_to(root) or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        with Image.open(path) as opened:
            image = opened.copy()
        return image if image_digest(image) == digest else None


def _match(folder: _Folder, row: int, digest: str) -> Any | None:
    """The image of ``row`` with ``digest``, indexing every image digest of the row on the way. A task that
    converts its images to RGB before the model sees them records the converted pixels' digest, so an image
    stored in another mode is also indexed (and returned) as RGB."""
    doc = folder.docs[row]
    hit = None
    for column in folder.columns:
        value = doc.get(column)
        if not _is_image(value):
            continue
        for image, rgb in ((value, False), *(((value.convert("RGB"), True),) if value.mode != "RGB" else ())):
            seen = image_digest(image)
            folder.found.setdefault(seen, (row, column, rgb))
            if seen == digest:
                hit = image
    return hit


def _open_split(path: Path, split: str) -> _Folder | None:
    """A local dataset folder's split with its image columns, or None when it is not a readable dataset."""
    import datasets

    if not path.is_dir():
        return None
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        loaded = datasets.load_from_disk(str(path))
        docs = loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
    else:
        docs = datasets.load_dataset(str(path), split=split)
    columns = [name for name, feature in docs.features.items() if isinstance(feature, datasets.Image)]
    return _Folder(docs, columns) if columns else None


def thumbnail_png(image: Any, size: int = THUMBNAIL) -> bytes:
    """``image`` as a PNG no larger than ``size`` pixels on its longest side (never enlarged)."""
    copy = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
    copy.thumbnail((size, size))
    out = io.BytesIO()
    copy.save(out, format="PNG", optimize=True)
    return out.getvalue()


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:`` URI, for a page that must open from disk with nothing else beside it."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
