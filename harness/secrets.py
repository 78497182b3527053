"""Credentials never leave the machine: what counts as a secret, and the one way everything written is
cleared of them.

A model argument or an environment variable is a secret when its name says so (:func:`is_secret`:
``api_key``, ``token``, ``authorization``, ``password``, ``secret``, any ``*_key``, ``*_token``,
``*_secret`` or ``*_password``) or when its backend declares it (``Backend.secret_args``). Whatever a run
records keeps the fact that one was given and loses its value, which becomes :data:`SECRET_MARKER`:

- by name, in the places that hold named values: ``config.model_args`` (:func:`redact_args`), the
  recorded command line (:func:`redact_argv`: ``--model-args k=v,...`` pairs and ``--token VALUE`` flags)
  and the model's provenance (:func:`redact_mapping`);
- by value, in any text about to be written (:func:`redact_text`): the run's files, log lines, error
  lines, the response store's fingerprints, keys and answers. The values are those of secret model
  arguments a backend was created with in this process and of the secret environment variables set when
  the command started or a backend was created (:func:`remember`), at least :data:`MIN_SECRET_LENGTH`
  characters long (a shorter value would blank out ordinary words), and the user:password part of a URL.

:func:`find_secret` is the check the other way round: the field of a run's ``results.json`` that still
holds a secret, which ``harness submit`` and the leaderboard refuse in one line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any

#: What a secret's value becomes wherever a run records it: that one was given, never what it was.
SECRET_MARKER = "<secret: given>"
#: Shorter values are not looked for in free text (names still mark them wherever they are named).
MIN_SECRET_LENGTH = 8

_NAMES = frozenset({"api_key", "apikey", "token", "authorization", "password", "passwd", "secret", "credentials"})
_SUFFIXES = ("_key", "_token", "_secret", "_password", "_credentials")
# a URL's user:password@ (the part before the host): one left-to-right scan from each "://"
_URL_USERINFO = re.compile(r"(?<=://)[^/\s@:\"']+:[^/\s@\"']+@")
_lock = threading.Lock()
_declared: set[str] = set()
_values: set[str] = set()


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def is_secret(name: str, declared: Collection[str] = ()) -> bool:
    """Whether a model argument, flag or environment variable called ``name`` holds a credential: by its
    name, or because a backend declares it (``declared``, or any backend created in this process)."""
    key = _normal(name).lstrip("_")
    if key in _NAMES or key.endswith(_SUFFIXES) or key in _declared:
        return True
    return bool(declared) and key in {_normal(d) for d in declared}


def remember(model_args: Mapping[str, str] | None = None, declared: Collection[str] = ()) -> None:
    """Note a backend's declared secret names, the values of its secret model arguments and those of the
    secret environment variables now set (a backend reads its key from one when it is created), so that
    :func:`redact_text` clears them from anything written later in this process."""
    with _lock:
        _declared.update(_normal(d) for d in declared)
    given = [v for k, v in (model_args or {}).items() if is_secret(k, declared)]
    env = [v for k, v in os.environ.items() if is_secret(k)]
    with _lock:
        _values.update(v for v in (*given, *env) if len(v) >= MIN_SECRET_LENGTH and v != SECRET_MARKER)


def _known_values() -> list[str]:
    """The secret values to look for in text, longest first (so a value holding another is cleared whole)."""
    with _lock:
        return sorted(_values, key=len, reverse=True)


def redact_text(text: str) -> str:
    """``text`` with every known secret value (as it is and as JSON escapes it) and every URL's
    user:password part replaced by the marker. Linear in the text for each known value."""
    for value in _known_values():
        if value in text:
            text = text.replace(value, SECRET_MARKER)
        escaped = json.dumps(value)[1:-1]
        if escaped != value and escaped in text:
            text = text.replace(escaped, SECRET_MARKER)
    if "://" in text:
        text = _URL_USERINFO.sub(SECRET_MARKER + "@", text)
    return text


def redact_args(args: Mapping[str, str], declared: Collection[str] = ()) -> dict[str, str]:
    """Model arguments as a run records them: a secret's value is the marker (the key stays: it was given)."""
    return {k: SECRET_MARKER if is_secret(k, declared) and v else redact_text(v) for k, v in args.items()}


def redact_mapping(value: Any, declared: Collection[str] = ()) -> Any:
    """JSON-like data (a backend's ``info()``) with the value of every secret-named key the marker and
    every string cleared by :func:`redact_text`."""
    if isinstance(value, Mapping):
        return {
            k: SECRET_MARKER if isinstance(k, str) and is_secret(k, declared) and v else redact_mapping(v, declared)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_mapping(v, declared) for v in value]
    return redact_text(value) if isinstance(value, str) else value


def _redact_pairs(text: str, declared: Collection[str]) -> str:
    """``k=v,k2=v2`` (a ``--model-args`` value) with each secret pair's value the marker."""
    parts = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        parts.append(f"{key}={SECRET_MARKER}" if sep and value and is_secret(key, declared) else part)
    return ",".join(parts)


def redact_argv(argv: Iterable[str], declared: Collection[str] = ()) -> list[str]:
    """A command line as a run records it: the value of a secret-named flag (``--token VALUE``,
    ``--api-key=VALUE``) and of each secret ``k=v`` pair (``--model-args api_key=...``) is the marker."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(SECRET_MARKER)
            hide_next = False
            continue
        flag, sep, value = arg.partition("=")
        secret_flag = arg.startswith("-") and is_secret(flag.lstrip("-"), declared)
        if secret_flag:
            hide_next = not sep
            out.append(f"{flag}={SECRET_MARKER}" if sep else arg)
        elif arg.startswith("-") and sep:
            out.append(f"{flag}={redact_text(_redact_pairs(value, declared))}")
        else:
            out.append(redact_text(_redact_pairs(arg, declared)))
    return out


def _given(value: Any) -> bool:
    """Whether a recorded value is a secret's value rather than the marker (or nothing)."""
    return isinstance(value, str) and value not in ("", SECRET_MARKER)


def _secret_in_argv(argv: Any) -> int | None:
    """The index of the first command-line word that still holds a secret, or None."""
    if not isinstance(argv, list):
        return None
    words = [a if isinstance(a, str) else "" for a in argv]
    return next((i for i, word in enumerate(words) if redact_argv(words[max(0, i - 1) : i + 1])[-1] != word), None)


def _secret_in_mapping(value: Any, where: str) -> str | None:
    """The dotted path of the first secret-named key below ``where`` whose value is given, or of the first
    string holding a URL with a user:password part; None when there is neither."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and is_secret(key) and _given(item):
                return f"{where}.{key}"
            found = _secret_in_mapping(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        return next(filter(None, (_secret_in_mapping(v, f"{where}[{i}]") for i, v in enumerate(value))), None)
    elif isinstance(value, str) and "://" in value and _URL_USERINFO.search(value):
        return f"{where} (a URL with a user:password)"
    return None


def find_secret(raw: Mapping[str, Any]) -> str | None:
    """The field of a ``results.json`` (as parsed JSON) that holds a credential a run must never record,
    or None: a secret model argument, a secret in a recorded command line, a secret-named key in the
    model's provenance, or a URL with a user:password part there. Only the fields a run records from
    its options and its environment are looked at (a task's own config may well have a ``*_key``)."""
    config = raw.get("config")
    provenance = raw.get("provenance")
    provenance = provenance if isinstance(provenance, Mapping) else {}
    found = _secret_in_mapping(config.get("model_args") if isinstance(config, Mapping) else None, "config.model_args")
    for where, record in (("provenance", provenance), ("provenance.rescored", provenance.get("rescored"))):
        index = _secret_in_argv(record.get("command") if isinstance(record, Mapping) else None)
        if found is None and index is not None:
            found = f"{where}.command[{index}]"
    return found or _secret_in_mapping(provenance.get("model"), "provenance.model")


def redact_run(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A ``results.json`` (as parsed JSON) with the fields :func:`find_secret` looks at cleared: what a
    server shows of a run stored before runs were cleared of credentials."""
    out = dict(raw)
    config = out.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("model_args"), Mapping):
        args = {str(k): v for k, v in config["model_args"].items()}
        out["config"] = {**config, "model_args": redact_mapping(args)}
    provenance = out.get("provenance")
    if isinstance(provenance, Mapping):
        cleared = dict(provenance)
        for key in ("command", "model", "rescored"):
            if key in cleared:
                cleared[key] = redact_mapping(cleared[key])
        for record in (cleared, cleared.get("rescored")):
            if isinstance(record, dict) and isinstance(record.get("command"), list):
                record["command"] = redact_argv(str(word) for word in record["command"])
        out["provenance"] = cleared
    return out


class RedactingFilter(logging.Filter):
    """A log handler's filter: each line (and its traceback) with every known secret cleared."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Clears the record's message and traceback text; never drops a record."""
        message = record.getMessage()
        cleared = redact_text(message)
        if cleared != message:
            record.msg, record.args = cleared, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True
