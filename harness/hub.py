"""Whether the Hugging Face Hub can be used: one short probe per process, then the libraries' offline mode.

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
    once per process, and an unreachable Hub puts the process in offline mode with one warning."""
    return _offline_reason()


@functools.lru_cache(maxsize=1)
def _offline_reason() -> str | None:
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE:
        return "offline: HF_HUB_OFFLINE is set"
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    try:
        socket.create_connection(
            (url.hostname or "", url.port or (443 if url.scheme == "https" else 80)), timeout=PROBE_TIMEOUT_S
        ).close()
    except OSError:
        work_offline()
        log.warning(
            "the Hugging Face Hub (%s) is not reachable: working offline, from local folders and the "
            "Hub cache only; set HF_HUB_OFFLINE=1 to skip this %g s check",
            endpoint,
            PROBE_TIMEOUT_S,
        )
        return "the Hugging Face Hub is not reachable; set HF_HUB_OFFLINE=1 to skip this check"
    return None


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
