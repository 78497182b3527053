"""``harness build NAME --demo``: build from a small self-made source in the real source's format.

The demo sources (``builders/mist/demo.py``, ``builders/fusion/demo.py``, ``builders/diavlo/demo.py``)
let every protocol be built and run offline; the tests build from the same sources.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


@contextmanager
def demo_folder(name: str, **given: Any) -> Iterator[Path]:
    """A temporary folder to write ``name``'s demo source into; refuses real source options beside
    ``--demo`` (which would be silently ignored otherwise). The built dataset embeds its images, so the
    source is removed afterwards."""
    clash = ", ".join(f"--{k.replace('_', '-')}" for k, v in sorted(given.items()) if v)
    if clash:
        raise HarnessError(f"{name}: --demo writes its own source; drop {clash} (or drop --demo to build from them)")
    with tempfile.TemporaryDirectory(prefix=f"{name}-demo-") as tmp:
        yield Path(tmp)
