"""Resolve the font file a rendered dataset is built with (never committed; found at build time)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from harness.errors import HarnessError

# (package, path inside it): wheels that ship the DroidSans family.
KNOWN_LOCATIONS = {
    "DroidSans.ttf": [("imgui_bundle", "assets/fonts/DroidSans.ttf")],
}


def resolve_font(name: str = "DroidSans.ttf", explicit: str | Path | None = None) -> Path:
    """An explicit ``--font PATH`` first, then the known package locations; a clear error otherwise."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise HarnessError(f"--font {path}: no such file")
        return path
    for package, inner in KNOWN_LOCATIONS.get(name, []):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            candidate = Path(next(iter(spec.submodule_search_locations))) / inner
            if candidate.is_file():
                return candidate
    packages = ", ".join(p for p, _ in KNOWN_LOCATIONS.get(name, []))
    raise HarnessError(
        f"font {name} not found: pass --font PATH, or install a package that ships it "
        f"(pip install {packages or 'a font package'})"
    )


def file_sha256(path: Path) -> str:
    """The sha256 of a font file, recorded so a build names the exact font it drew with."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
