"""Whether the Hugging Face Hub can be used: one short probe per process, then the libraries' offline mode.
An unreachable Hub is said once, by the first code that needs the Hub, so commands that never do stay quiet.

Without ``HF_HUB_OFFLINE``, huggingface_hub retries an unreachable Hub five times with back-off (about 30 s)
for every file it looks for. The harness instead tries one connection (3 s at most) and, when the Hub does not
answer, switches the whole process to offline mode, so every library reads its cache at once. The command line
settles this before any Hub library is imported, since some of them (diffusers) copy the setting at import.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import sys
from urllib.parse import urlparse

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 3.0
_TRUE = {"1", "ON", "YES", "TRUE"}
#: The variables the Hub libraries read for offline mode (huggingface_hub, datasets, transformers).
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def offline_reason() -> str | None:
    """Why the Hub cannot be used (``HF_HUB_OFFLINE`` set, or unreachable), or None when it answers; probed
    once per process. For code about to use the Hub: an unreachable one is said in one warning, the first time."""
    reason, unreachable = _probe()
    if unreachable:
        _warn_unreachable()
    return reason


def settle_offline_mode() -> None:
    """Probe the Hub before any Hub library reads its offline setting, without a word: a command that never
    asks the Hub for anything prints nothing about it."""
    _probe()


@functools.lru_cache(maxsize=1)
def _warn_unreachable() -> None:
    log.warning(
        "the Hugging Face Hub (%s) is not reachable: working offline, from local folders and the Hub cache "
        "only; set HF_HUB_OFFLINE=1 to skip this %g s check",
        os.environ.get("HF_ENDPOINT", "https://huggingface.co"),
        PROBE_TIMEOUT_S,
    )


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[str | None, bool]:
    """The reason the Hub cannot be used (None when it answers), and whether that is because it did not answer
    (then the process is put in offline mode)."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE:
        return "offline: HF_HUB_OFFLINE is set", False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection(
            (url.hostname or "", url.port or (443 if url.scheme == "https" else 80)), timeout=PROBE_TIMEOUT_S
        ).close()
    except OSError:
        work_offline()
        return "the Hugging Face Hub is not reachable; set HF_HUB_OFFLINE=1 to skip this check", True
    return None, False


def work_offline() -> None:
    """Offline mode (cache only, no retries) for the rest of the process: the variables for libraries not
    imported yet, and the module-level copies of the ones already imported."""
    for name in OFFLINE_VARIABLES:
        os.environ[name] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]  # ModuleType does not declare the library's constants
    config = sys.modules.get("datasets.config")
    if config is not None:
        config.HF_HUB_OFFLINE = config.HF_DATASETS_OFFLINE = True  # type: ignore[attr-defined]  # as above
