"""Where a model's weights come from: a local folder or a Hub id, told apart before any library is asked.

transformers takes any string that is not an existing folder for a Hub id, so a mistyped path
(``hf:/models/nope``) would come back as a complaint about repo-id syntax, or as a Hub lookup that cannot
succeed. A name written as a path is a path here, and a missing one is said in those words.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import ModelSpecError
from harness.hub import offline_reason


def looks_like_path(name: str) -> bool:
    """Whether ``name`` is written as a file-system path rather than a Hub id (``name`` or ``org/name``)."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name in {".", ".."} or "\\" in name or name.count("/") > 1


def local_folder(name: str) -> Path | None:
    """The folder ``name`` names, or None when it is a Hub id (then the Hub is probed once, so that an
    unreachable one costs one short attempt); a path to nothing is one line, never a Hub error."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise ModelSpecError(f"not a folder: {name} (a model is a folder with config.json and its weights)")
    if looks_like_path(name):
        raise ModelSpecError(f"no such folder: {name}")
    offline_reason()
    return None


def load_error(name: str, folder: Path | None, exc: Exception) -> ModelSpecError:
    """The one line for a model that did not load: for a Hub id while the Hub is unusable, why (the library's
    own message would only say it could not connect), else the library's first line."""
    reason = None if folder is not None else offline_reason()
    if reason is not None:
        return ModelSpecError(
            f"cannot load model {name!r}: not in the Hub cache ({reason}); download it where the "
            f"Hub is reachable, or pass a local folder (hf:/path/to/model)"
        )
    return ModelSpecError(f"cannot load model {name!r}: {str(exc).splitlines()[0]}")
