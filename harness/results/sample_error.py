"""Why a sample has no responses or no metrics: a kind the code branches on, and a message for people.

In ``samples_<task>.jsonl`` an error is one string, ``"<kind>: <message>"`` (``"bad input: doc_to_text:
KeyError: 'question'"``), as every version of the file has written it; :class:`SampleError` is that string
parsed once, here, so no reader looks at its prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, PlainSerializer

from harness.unencodable import writable_text

#: ``bad input``: the doc could not become a prompt (task code failed on it, an undecodable image);
#: ``generation failed``: the backend raised on its request; ``scoring failed``: ``process_results`` (or a
#: backend's teacher-forced scoring) failed on its answer, and re-scoring tries it again.
ErrorKind = Literal["bad input", "generation failed", "scoring failed"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)


@dataclass(frozen=True)
class SampleError:
    """One sample's error: its kind and the one-line message that says what failed."""

    kind: ErrorKind
    message: str

    def __str__(self) -> str:
        """The error as written in a samples file: ``"<kind>: <message>"``."""
        return f"{self.kind}: {self.message}"

    @classmethod
    def parse(cls, text: str) -> SampleError:
        """The error a samples file's string holds; a string of no known kind is a ``ValueError``."""
        kind, sep, message = text.partition(": ")
        for known in ERROR_KINDS:
            if sep and kind == known:
                return cls(known, message)
        raise ValueError(f"error {text[:80]!r} does not start with a known kind ({', '.join(ERROR_KINDS)}) and ': '")


def _from_json(value: Any) -> Any:
    return SampleError.parse(value) if isinstance(value, str) else value


def _to_json(error: SampleError) -> str:
    return writable_text(str(error))  # an exception's text may quote an answer UTF-8 cannot hold


#: A :class:`SampleError` field of a pydantic model, read from and written as its one string.
SampleErrorField = Annotated[SampleError, BeforeValidator(_from_json), PlainSerializer(_to_json, return_type=str)]
