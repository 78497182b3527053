"""The images the viewer serves, found by the digests samples record, in the run's dataset.

A samples file keeps each image as ``{"image_sha256": ...}`` (the decoded pixels' digest), never as a
path. The viewer asks :class:`harness.protocols.evidence_images.ImageStore` (the same store the audit
report uses) for the image of that digest in the task's dataset folder: the local folder the run's
provenance records, or the copy of a Hub dataset in a data folder. The doc's row is tried first, the
split scanned once otherwise; what comes back has the digest asked for, and is re-encoded as PNG here.
Evidence pages name their images by the references their extractor made, kept server-side.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from harness.protocols.evidence import DatasetImage, ImageRef
from harness.protocols.evidence_images import THUMBNAIL, thumbnail_png
from harness.protocols.evidence_images import ImageStore as PixelStore
from harness.results.schema import DatasetFingerprint

#: How many encoded images the server keeps in memory (thumbnails and full size).
CACHED_IMAGES = 256


class ImageStore:
    """Every image the viewer serves: the shared pixel store behind a lock (the app serves requests from
    several threads) and a bounded memory cache of encoded PNGs."""

    def __init__(self, data_dirs: list[Path]) -> None:
        self.data_dirs = data_dirs
        self._pixels = PixelStore()
        self._png: OrderedDict[tuple[ImageRef, bool], bytes] = OrderedDict()
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

    def sample_image(self, fingerprint: DatasetFingerprint, doc_id: int, digest: str) -> ImageRef | None:
        """The reference of a sample's image: its digest in the task's dataset, row ``doc_id`` tried first."""
        folder = self.folder_of(fingerprint)
        if folder is None:
            return None
        source = DatasetImage(path=str(folder), split=fingerprint.split or "test", row=doc_id)
        return ImageRef(sha256=digest, source=source)

    def png(self, ref: ImageRef, thumbnail: bool) -> bytes | None:
        """The image as PNG (a thumbnail, or full size), or None when its source does not hold it."""
        key = (ref, thumbnail)
        with self._lock:
            if key in self._png:
                self._png.move_to_end(key)
                return self._png[key]
            image = self._pixels.image(ref)
            if image is None:
                return None
            data = thumbnail_png(image, THUMBNAIL if thumbnail else max(image.size))
            self._png[key] = data
            while len(self._png) > CACHED_IMAGES:
                self._png.popitem(last=False)
        return data
