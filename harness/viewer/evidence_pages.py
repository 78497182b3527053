"""Each protocol's audit as a page of evidence: the protocol's own extractor
(:func:`harness.protocols.evidence.extractor_of`) reads the viewer's runs and that protocol's audit
folders, and the shared renderer (:func:`harness.protocols.evidence_html.render_evidence`, the one
``harness report`` uses) turns it into HTML. Its images are served by a token this module hands out for
each reference the extractor made, so a request names an image the server already knows, never a path.
A protocol's evidence is made on first view and made again when a run's or audit's files change.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from harness.protocols.base import Protocol, protocols
from harness.protocols.evidence import EvidenceInput, ImageRef, LoadedRun, ProtocolEvidence, extractor_of
from harness.protocols.evidence_html import render_evidence
from harness.viewer.catalog import Catalog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Evidence:
    """A protocol's evidence as rendered: the HTML fragment, its images by token, and why it is empty
    (an extractor that failed on these files says so in one line)."""

    html: Markup
    images: dict[str, ImageRef]
    evidence: ProtocolEvidence | None
    problem: str | None = None


def evidence_protocols() -> list[Protocol]:
    """The registered protocols that declare an evidence extractor."""
    return [p for p in protocols() if p.extensions.get("evidence") is not None]


class EvidencePages:
    """The evidence of every protocol over a catalog, kept per protocol until the files it read change."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._made: dict[str, tuple[str, Evidence]] = {}
        self._lock = threading.Lock()

    def _state(self, protocol: Protocol) -> str:
        """A digest of the size and modification time of every file the protocol's evidence may read."""
        parts = []
        folders = [run.path for run in self.catalog.runs.values()] + self._audits(protocol)
        for folder in folders:
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    stat = path.stat()
                    parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _audits(self, protocol: Protocol) -> list[Path]:
        return [a.path for a in self.catalog.audits.values() if a.protocol is None or a.protocol.name == protocol.name]

    def of(self, protocol: Protocol, page: str) -> Evidence:
        """The protocol's evidence over every run and its audits, images linked under ``page``."""
        state = self._state(protocol)
        with self._lock:
            made = self._made.get(protocol.name)
            if made is None or made[0] != state:
                made = (state, self._make(protocol, page))
                self._made[protocol.name] = made
            return made[1]

    def image(self, protocol: Protocol, page: str, token: str) -> ImageRef | None:
        """The image reference a rendered page of the protocol's evidence named by ``token`` (the evidence
        as last made: an image request does not look at every file again)."""
        with self._lock:
            made = self._made.get(protocol.name)
        evidence = made[1] if made else self.of(protocol, page)
        return evidence.images.get(token)

    def _make(self, protocol: Protocol, page: str) -> Evidence:
        runs = [LoadedRun(run.path, run.results) for run in self.catalog.sorted_runs() if run.results]
        try:
            extractor = extractor_of(protocol)
            if extractor is None:
                return Evidence(Markup(""), {}, None, f"protocol {protocol.name!r} declares no evidence")
            evidence = extractor(EvidenceInput(runs=runs, audits=self._audits(protocol)))
        except Exception as exc:  # run folders are untrusted: one extractor failing on them is one line
            log.warning("the %s evidence failed", protocol.name, exc_info=True)
            return Evidence(Markup(""), {}, None, f"{type(exc).__name__}: {exc}")
        images: dict[str, ImageRef] = {}

        def resolve(ref: ImageRef) -> str | None:
            if ref.source is None:
                return None
            token = hashlib.sha256(ref.model_dump_json().encode()).hexdigest()[:20]
            images[token] = ref
            return f"{page}/image/{token}.png"

        return Evidence(render_evidence(evidence, resolve, level=2, lazy=True), images, evidence)
